// HostProfile: what a rank's CPU thread spends to issue work to its GPU, read from the
// calibration profile's top-level `host` section.
//
// A training framework issues every kernel and collective from one host thread per GPU, in
// program order; the GPU cannot start a kernel the host has not issued yet. Issuing costs the
// framework's dispatch (Python, autograd, the library call) plus the driver's launch, per kernel
// when running eagerly, or one graph launch for a captured CUDA graph of many kernels. When the
// kernels are shorter than their issue cost, the step becomes host-bound (sim/hw/README.md).
#pragma once

#include "sim/core/time.hpp"

namespace wallsim {

class JsonNode;

struct HostProfile {
  bool present = false;  // the profile has a `host` section; without one issuing is free
  Time kernel_issue;     // one kernel or collective issued eagerly
  Time graph_issue;      // one captured CUDA graph replayed as a unit
};

// Reads the `host` section: `kernel_issue_us`, `graph_issue_us` (both >= 0) and `sources`
// (an object of strings); InputError (file, JSON path, value, what is allowed) otherwise.
HostProfile parse_host_profile(const JsonNode& host_section);

}  // namespace wallsim
