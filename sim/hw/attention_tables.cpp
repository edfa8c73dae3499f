#include "sim/hw/attention_tables.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wallsim {

AttentionTables::AttentionTables(std::string kernel, std::vector<AttentionTable> tables)
    : kernel_(std::move(kernel)), tables_(std::move(tables)) {
  std::sort(tables_.begin(), tables_.end(),
            [](const auto& a, const auto& b) { return a.head_dim < b.head_dim; });
  for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    for (bool causal : {false, true}) {
      const auto found = matching(pass, causal);
      if (found.empty()) {
        throw std::invalid_argument("attention tables lack a " +
                                    std::string(attention_pass_name(pass)) +
                                    (causal ? " causal" : " non-causal") + " table");
      }
      for (std::size_t i = 1; i < found.size(); ++i) {
        if (found[i]->head_dim == found[i - 1]->head_dim) {
          throw std::invalid_argument("two attention tables share pass, mask and head dim");
        }
      }
    }
  }
}

std::vector<const AttentionTable*> AttentionTables::matching(AttentionPass pass,
                                                             bool causal) const {
  std::vector<const AttentionTable*> found;
  for (const auto& table : tables_) {
    if (table.pass == pass && table.causal == causal) found.push_back(&table);
  }
  return found;  // sorted by head dim, as tables_ is
}

double AttentionTables::achieved_flops(AttentionPass pass, bool causal, double head_dim,
                                       double seq_len) const {
  const auto found = matching(pass, causal);
  if (found.empty()) throw std::logic_error("AttentionTables used before being filled");
  if (head_dim <= found.front()->head_dim) {
    return found.front()->achieved_flops_by_seq.at(seq_len);
  }
  if (head_dim >= found.back()->head_dim) return found.back()->achieved_flops_by_seq.at(seq_len);
  const auto upper = std::find_if(found.begin(), found.end(),
                                  [&](const auto* table) { return table->head_dim > head_dim; });
  const AttentionTable& hi = **upper;
  const AttentionTable& lo = **(upper - 1);
  const double t = std::log2(head_dim / lo.head_dim) / std::log2(hi.head_dim / lo.head_dim);
  const double lo_flops = lo.achieved_flops_by_seq.at(seq_len);
  return lo_flops + t * (hi.achieved_flops_by_seq.at(seq_len) - lo_flops);
}

}  // namespace wallsim
