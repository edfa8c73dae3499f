#include "models/pipeline_layout.hpp"

#include <cctype>
#include <stdexcept>

namespace wallsim::models {
namespace {

// Reads "*n" at `pos` (after a group or a character); returns 1 when there is no '*'.
std::int64_t repeat_count(const std::string& text, std::size_t& pos) {
  if (pos >= text.size() || text[pos] != '*') return 1;
  ++pos;
  const std::size_t digits = pos;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == digits) throw std::invalid_argument("'*' must be followed by a repeat count");
  const std::int64_t count = std::stoll(text.substr(digits, pos - digits));
  if (count < 1) throw std::invalid_argument("a repeat count must be at least 1");
  return count;
}

// The string with groups and repeats unrolled and commas dropped.
std::string unroll(const std::string& text) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      ++pos;
    } else if (c == '(') {
      const std::size_t close = text.find(')', pos);
      if (close == std::string::npos) throw std::invalid_argument("'(' without ')'");
      const std::string inside = text.substr(pos + 1, close - pos - 1);
      if (inside.find('(') != std::string::npos) {
        throw std::invalid_argument("groups in parentheses do not nest");
      }
      const std::string group = unroll(inside);  // its own "x*n" repeats
      pos = close + 1;
      const std::int64_t n = repeat_count(text, pos);
      for (std::int64_t i = 0; i < n; ++i) out += group;
    } else if (c == ')' || c == '*') {
      throw std::invalid_argument(std::string("unexpected '") + c + "'");
    } else {
      ++pos;
      const std::int64_t n = repeat_count(text, pos);
      out.append(static_cast<std::size_t>(n), c);
    }
  }
  return out;
}

}  // namespace

std::vector<LayoutStage> parse_pipeline_layout(const std::string& text) {
  std::vector<LayoutStage> stages(1);
  for (char c : unroll(text)) {
    switch (c) {
      case '|':
        stages.emplace_back();
        break;
      case 't':
        ++stages.back().decoders;
        break;
      case 'm':
        ++stages.back().mtp;
        break;
      case 'E':
        if (stages.back().embedding || stages.back().decoders > 0) {
          throw std::invalid_argument("'E' must open its stage, once");
        }
        stages.back().embedding = true;
        break;
      case 'L':
        stages.back().loss = true;
        break;
      default:
        throw std::invalid_argument(std::string("unknown layer character '") + c +
                                    "' (known: E embedding, t decoder layer, m MTP layer, L loss)");
    }
  }
  return stages;
}

std::string pipeline_layout_problem(const std::vector<LayoutStage>& stages, std::int64_t layers,
                                    std::int64_t mtp_layers) {
  std::int64_t decoders = 0, mtp = 0, embeddings = 0, losses = 0;
  for (const LayoutStage& s : stages) {
    decoders += s.decoders;
    mtp += s.mtp;
    embeddings += s.embedding;
    losses += s.loss;
  }
  if (embeddings != 1 || !stages.front().embedding) {
    return "the embedding 'E' must appear once, at the start of the first stage";
  }
  if (losses != 1 || !stages.back().loss) {
    return "the loss 'L' must appear once, in the last stage";
  }
  if (decoders != layers) {
    return "places " + std::to_string(decoders) + " decoder layers ('t'); the model has " +
           std::to_string(layers);
  }
  if (mtp != mtp_layers) {
    return "places " + std::to_string(mtp) + " MTP layers ('m'); the model has " +
           std::to_string(mtp_layers);
  }
  if (mtp > 0 && stages.back().mtp != mtp) {
    return "MTP layers run on the last stage with the loss here (a standalone MTP stage, "
           "\"m|L\", is not modelled)";
  }
  return "";
}

}  // namespace wallsim::models
