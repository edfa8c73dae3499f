// A thin layer over cuDNN 9's backend (graph) API for attn_bench: owned descriptors, every
// status checked (a failure throws CudnnError naming the call and cuDNN's own message), and
// builders for the descriptors a fused-attention graph uses (tensor, matmul, pointwise,
// reduction, reshape), then heuristics -> execution plan -> variant pack -> execute.
// Attribute names and types follow cudnn_graph_v9.h; nothing here is attention-specific.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

class CudnnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void cudnn_check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  throw CudnnError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                   cudnnGetErrorString(status) +
                   (detail[0] ? std::string(" (") + detail + ")" : ""));
}

#define BENCH_CHECK_CUDNN(call) ::bench::cudnn_check((call), #call, __FILE__, __LINE__)

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    BENCH_CHECK_CUDNN(cudnnBackendCreateDescriptor(type, &raw_));
  }
  ~Descriptor() { cudnnBackendDestroyDescriptor(raw_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return raw_; }

  template <typename T>
  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                  const T* values, int64_t count = 1) {
    BENCH_CHECK_CUDNN(cudnnBackendSetAttribute(raw_, name, type, count, values));
    return *this;
  }
  Descriptor& set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& value) {
    cudnnBackendDescriptor_t raw = value.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw);
  }
  Descriptor& finalize() {
    BENCH_CHECK_CUDNN(cudnnBackendFinalize(raw_));
    return *this;
  }

 private:
  cudnnBackendDescriptor_t raw_ = nullptr;
};

// CUDNN_ATTR_OPERATIONGRAPH_HANDLE (800) and CUDNN_ATTR_EXECUTION_PLAN_HANDLE (400) are marked
// deprecated in recent cuDNN 9 headers, but earlier 9.x releases require them. They are set by
// number, so the build stays free of deprecation warnings, and a library that no longer accepts
// them is tolerated (its finalize says what it misses).
constexpr auto kGraphHandleAttribute = static_cast<cudnnBackendAttributeName_t>(800);
constexpr auto kPlanHandleAttribute = static_cast<cudnnBackendAttributeName_t>(400);

inline void set_handle(Descriptor& descriptor, cudnnBackendAttributeName_t name,
                       cudnnHandle_t handle) {
  cudnnBackendSetAttribute(descriptor.get(), name, CUDNN_TYPE_HANDLE, 1, &handle);
}

using Dims = std::vector<int64_t>;

// Row-major strides of `dims` (the last dimension contiguous).
inline Dims packed_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// Builds one operation graph; owns every descriptor it made until it is destroyed (the plan
// built from the graph must not outlive it).
class GraphBuilder {
 public:
  struct TensorSpec {
    int64_t uid;
    cudnnDataType_t type;
    Dims dims;
    Dims strides;  // empty: packed
    bool is_virtual = false;
    bool by_value = false;
  };

  const Descriptor& tensor(const TensorSpec& spec) {
    Descriptor& t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const Dims strides = spec.strides.empty() ? packed_strides(spec.dims) : spec.strides;
    const int64_t alignment = 16;
    const int64_t rank = static_cast<int64_t>(spec.dims.size());
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &spec.type);
    t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, spec.dims.data(), rank);
    t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), rank);
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &spec.uid);
    t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &spec.is_virtual);
    if (spec.by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &spec.by_value);
    return t.finalize();
  }

  // A virtual fp32 tensor with a fresh uid (intermediate results).
  const Descriptor& virtual_tensor(const Dims& dims, cudnnDataType_t type = CUDNN_DATA_FLOAT,
                                   const Dims& strides = {}) {
    return tensor({next_virtual_uid_++, type, dims, strides, true, false});
  }

  void matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c) {
    Descriptor& desc = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    desc.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute).finalize();
    Descriptor& op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    op.set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc);
    ops_.push_back(&op.finalize());
  }

  // y = mode(x[, b[, t]]); `axis` only for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, const Descriptor& x, const Descriptor* b,
                 const Descriptor& y, cudnnDataType_t math = CUDNN_DATA_FLOAT,
                 const Descriptor* t = nullptr, int64_t axis = -1) {
    Descriptor& desc = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    desc.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
    desc.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &math);
    if (axis >= 0) desc.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis);
    desc.finalize();
    Descriptor& op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t) op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    ops_.push_back(&op.finalize());
  }

  void reduction(cudnnReduceTensorOp_t reduce, const Descriptor& x, const Descriptor& y) {
    Descriptor& desc = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    desc.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &reduce);
    desc.set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute).finalize();
    Descriptor& op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    op.set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc);
    ops_.push_back(&op.finalize());
  }

  // y is x with other dims/strides (a transpose of a virtual tensor).
  void reshape(const Descriptor& x, const Descriptor& y) {
    Descriptor& op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    op.set_descriptor(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    ops_.push_back(&op.finalize());
  }

  // The finalized operation graph of every op added so far.
  const Descriptor& finish(cudnnHandle_t handle) {
    Descriptor& graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    std::vector<cudnnBackendDescriptor_t> raw;
    for (const Descriptor* op : ops_) raw.push_back(op->get());
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw.data(),
              static_cast<int64_t>(raw.size()));
    set_handle(graph, kGraphHandleAttribute, handle);
    return graph.finalize();
  }

 private:
  Descriptor& make(cudnnBackendDescriptorType_t type) {
    owned_.push_back(std::make_unique<Descriptor>(type));
    return *owned_.back();
  }

  std::vector<std::unique_ptr<Descriptor>> owned_;
  std::vector<const Descriptor*> ops_;
  int64_t next_virtual_uid_ = 1000;
};

// An execution plan for a finalized graph: the first engine configuration heuristics mode A
// proposes that finalizes. Returns nullptr when none does (the shape is not supported);
// `why` then says what failed.
struct Plan {
  std::unique_ptr<Descriptor> plan;
  int64_t workspace_bytes = 0;
};

inline Plan make_plan(cudnnHandle_t handle, const Descriptor& graph, std::string& why) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode).finalize();
  constexpr int64_t kMaxConfigs = 8;
  std::vector<std::unique_ptr<Descriptor>> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < kMaxConfigs; ++i) {
    configs.push_back(std::make_unique<Descriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  int64_t count = 0;
  BENCH_CHECK_CUDNN(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxConfigs, &count,
                                             raw.data()));
  why = "heuristics returned no engine";
  for (int64_t i = 0; i < count; ++i) {
    auto plan = std::make_unique<Descriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    try {
      set_handle(*plan, kPlanHandleAttribute, handle);
      plan->set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[i]).finalize();
    } catch (const CudnnError& e) {
      why = e.what();
      continue;
    }
    Plan out{std::move(plan), 0};
    int64_t n = 0;
    BENCH_CHECK_CUDNN(cudnnBackendGetAttribute(out.plan->get(),
                                               CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               CUDNN_TYPE_INT64, 1, &n, &out.workspace_bytes));
    return out;
  }
  return {};
}

// Runs `plan` on the tensors (uid -> device pointer, or host pointer for by-value scalars).
class VariantPack {
 public:
  VariantPack(std::vector<std::pair<int64_t, void*>> tensors, void* workspace)
      : pack_(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    for (const auto& [uid, pointer] : tensors) {
      uids_.push_back(uid);
      pointers_.push_back(pointer);
    }
    const int64_t n = static_cast<int64_t>(uids_.size());
    pack_.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids_.data(), n);
    pack_.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers_.data(), n);
    pack_.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace).finalize();
  }
  void execute(cudnnHandle_t handle, const Plan& plan) const {
    BENCH_CHECK_CUDNN(cudnnBackendExecute(handle, plan.plan->get(), pack_.get()));
  }

 private:
  std::vector<int64_t> uids_;
  std::vector<void*> pointers_;
  Descriptor pack_;
};

}  // namespace bench
