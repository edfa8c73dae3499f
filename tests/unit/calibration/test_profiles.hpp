// Shipped profile and cluster for calibration tests, and synthetic data drawn from them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "calibration/synth/synthetic_raw.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::test {

inline std::string source_file(const std::string& relative) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/" + relative;
}

inline nlohmann::json h100_document() {
  return load_json_file(source_file("calibration/profiles/h100-sxm.json"));
}

inline ClusterSpec dgx_h100() {
  return load_cluster_spec(source_file("configs/clusters/dgx-h100.json"));
}

// The H100 profile with values moved away from the shipped ones, so that a fit that merely
// kept the base could not pass: the "known parameters" the recovery tests look for.
inline nlohmann::json altered_h100_document() {
  nlohmann::json doc = h100_document();
  // GEMMs by best rate and size falloff (no measured tables), so that the best rate is what
  // the data were drawn from; the falloff is the A100 profile's (calculon's steps).
  doc["gpu"]["gemm"].erase("measured");
  doc["gpu"]["gemm"]["size_falloff"] = {{"flops", {1.25e8, 1e9, 1.6e10, 1.28e11}},
                                        {"relative", {0.1053, 0.6316, 0.9474, 1.0}}};
  doc["gpu"]["gemm"]["best_tflops"] = {{"bf16", 700.0}, {"fp8", 1300.0}};
  doc["gpu"]["kernel_launch_overhead_us"] = 2.5;
  doc["gpu"]["hbm_efficiency"] = {{"bytes", {1e6, 1e8}}, {"fraction", {0.5, 0.85}}};
  doc["comm"]["nvlink_efficiency"] = 0.78;
  doc["comm"]["nvls_efficiency"] = 0.75;
  doc["comm"]["network_efficiency"] = 0.9;
  doc["comm"]["latency_us"]["ring"]["nvlink"] = {0.8, 2.2, 4.0};
  doc["comm"]["latency_us"]["ring"]["net"] = {3.0, 5.0, 12.0};
  return doc;
}

inline std::vector<RawFile> synthetic_from(const nlohmann::json& doc, double noise,
                                           std::uint64_t seed = 7) {
  SyntheticOptions options;
  options.seed = seed;
  options.relative_noise = noise;
  return synthesize_raw_files(parse_profile(doc, "test profile"), dgx_h100(), options);
}

}  // namespace wallsim::test
