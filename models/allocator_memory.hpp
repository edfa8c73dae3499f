// What a GPU holds beyond the tensors a training step keeps alive: PyTorch's caching allocator's
// reservation and the memory outside it (docs/reference/allocator.md has every constant with its
// source).
//
// PyTorch reports two peaks per device: max_memory_allocated, the bytes of live tensors (plus
// the cuBLAS and Transformer Engine workspaces, which are tensors from the same allocator), and
// max_memory_reserved, the bytes of the segments the caching allocator obtained with cudaMalloc
// and never returns between steps (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp). The gap
// between the two is:
//   * block rounding: every request rounded up to kMinBlockSize = 512 B;
//   * segment rounding: requests ≤ kSmallSize = 1 MiB come from 2 MiB small-pool segments
//     (kSmallBuffer), requests of 1–10 MiB (below kMinLargeAlloc) from 20 MiB segments
//     (kLargeBuffer), larger ones from segments rounded up to kRoundLarge = 2 MiB;
//   * fragmentation: blocks freed into the cache that later requests of other sizes cannot use.
//     Without expandable segments (PyTorch's default, which Megatron-Bridge's Slurm performance
//     recipes and the validated B200 launchers keep) wallsim counts the working set of
//     the stage's largest layer for one micro-batch: the blocks its backward frees while the
//     next layer's requests, interleaved with still-live saved activations of other
//     micro-batches, are carved from new segments. With expandable_segments a segment grows
//     by mapping pages at its end, so freed space is reused by any size: only the page rounding
//     of the last segment per stream is left.
// Outside the allocator, seen by nvidia-smi but not by torch.cuda.memory_reserved: the CUDA
// context and NCCL's channel buffers (NCCL src/init.cc: 4 MiB Simple, 4,915,200 B LL128 and
// 512 KiB LL per channel and peer connection).
#pragma once

#include <cstdint>

namespace wallsim::models {

// c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch): block and segment sizes.
struct CachingAllocatorConstants {
  static constexpr double kMinBlockSize = 512;
  static constexpr double kSmallSize = 1 << 20;
  static constexpr double kSmallBuffer = 2 << 20;
  static constexpr double kLargeBuffer = 20 << 20;
  static constexpr double kMinLargeAlloc = 10 << 20;
  static constexpr double kRoundLarge = 2 << 20;
};

// A request rounded up to a multiple of 512 B (round_size in CUDACachingAllocator.cpp).
double rounded_block_bytes(double request_bytes);

// The segment cudaMalloc'ed for a request no cached block can hold (get_allocation_size):
// 2 MiB for ≤ 1 MiB, 20 MiB for < 10 MiB, else the request rounded up to 2 MiB.
double segment_bytes(double request_bytes);

// cuBLAS workspace PyTorch allocates per (handle, stream) from the caching allocator
// (aten/src/ATen/cuda/CublasHandlePool.cpp, CUBLAS_WORKSPACE_CONFIG unset): ":4096:8", 32 MiB,
// for Hopper and Blackwell (major 9-12); ":4096:2:16:8", 8 MiB + 128 KiB, before.
// `compute_capability` is major·10 + minor.
double torch_cublas_workspace_bytes(int compute_capability);

// Transformer Engine's cuBLASLt workspace (transformer_engine/pytorch/module/base.py,
// get_cublas_workspace_size_bytes): 32 MiB from sm_90 on, 4 MiB before; repeated for the 3
// userbuffer streams (_NUM_MAX_UB_STREAMS) when TP communication overlaps GEMMs.
double te_cublas_workspace_bytes(int compute_capability, bool tp_comm_overlap);

// NCCL's buffers per channel and peer connection, all three protocols at their default sizes
// (NCCL src/init.cc: DEFAULT_BUFFSIZE 4 MiB, DEFAULT_LL128_BUFFSIZE 120·640·8·8 B,
// DEFAULT_LL_BUFFSIZE 8·512·8·16 B).
double nccl_bytes_per_channel_peer();

// One communicator's buffers on one rank: channels × peers × nccl_bytes_per_channel_peer().
// A ring receives from one peer per channel; pipeline send/recv keeps a connection to the stage
// before and the one after.
double nccl_communicator_bytes(int channels, int peers);

struct AllocatorSettings {
  bool expandable_segments = false;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  int streams = 2;                   // streams that allocate: compute and communication
};

// The caching allocator's bytes beyond the live ones at the stage's peak:
//   small-pool segments: one 2 MiB segment per stream for the step's small tensors;
//   fragmentation: the largest layer's working set for one micro-batch (see above), or, with
//   expandable segments, half a 20 MiB page per stream (the expected rounding of the mapped end).
double allocator_slack_bytes(const AllocatorSettings& settings, double largest_layer_bytes);

}  // namespace wallsim::models
