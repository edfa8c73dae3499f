// parallel.pipeline_layout: Megatron-Core's --pipeline-model-parallel-layout string, which places
// the embedding (E), decoder layers (t), multi-token-prediction layers (m) and the loss with the
// output layer (L) on each virtual pipeline stage.
//
// Grammar (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list):
// commas are cosmetic and dropped; "(group)*n" repeats a parenthesised group n times (groups do
// not nest), then "x*n" repeats one character; '|' separates virtual stages, listed in chain
// order (Megatron's index vpp_rank·pp + pp_rank, wallsim's virtual stage). Examples:
// "Et|(tt|)*30L" (62 stages), "Ettt|(tt|)*29,m|L".
//
// What wallsim runs: the embedding on the first virtual stage and the loss with the output
// layer on the last, as Megatron requires (E first, L last, each once); MTP layers, if any, all
// on the last virtual stage after the loss's output layer (wallsim's MTP placement; Megatron's
// standalone MTP stage, "m|L", is refused).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wallsim::models {

struct LayoutStage {
  std::int64_t decoders = 0;  // 't'
  std::int64_t mtp = 0;       // 'm'
  bool embedding = false;     // 'E'
  bool loss = false;          // 'L'
};

// The stages of `text` in chain order. Throws std::invalid_argument naming the problem (an
// unknown character, an unclosed group, a repeat count that is not a positive integer).
std::vector<LayoutStage> parse_pipeline_layout(const std::string& text);

// Why `stages` cannot run a model of `layers` decoder layers and `mtp_layers` MTP layers in
// wallsim, or "" when it can.
std::string pipeline_layout_problem(const std::vector<LayoutStage>& stages, std::int64_t layers,
                                    std::int64_t mtp_layers);

}  // namespace wallsim::models
