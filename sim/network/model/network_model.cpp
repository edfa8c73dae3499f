#include "sim/network/model/network_model.hpp"

#include <array>

#include "sim/core/input_error.hpp"
#include "sim/network/model/analytical_model.hpp"
#include "sim/network/model/flow_model.hpp"

namespace wallsim {
namespace {

using Factory = std::unique_ptr<NetworkModel> (*)(Engine&, std::vector<double>);

template <typename Model>
std::unique_ptr<NetworkModel> make(Engine& engine, std::vector<double> capacity_Bps) {
  return std::make_unique<Model>(engine, std::move(capacity_Bps));
}

struct Registration {
  const char* name;
  Factory factory;
};

constexpr std::array<Registration, 2> kModels{{
    {"analytical", &make<AnalyticalModel>},
    {"flow", &make<FlowModel>},
}};

}  // namespace

void NetworkModel::count_link_bytes(const CollectivePlan& plan, double multiplicity) {
  for (const Phase& phase : plan.phases) {
    for (const Transfer& transfer : phase.transfers) {
      for (LinkId link : transfer.route) {
        if (link >= link_bytes_.size()) link_bytes_.resize(link + 1, 0.0);
        link_bytes_[link] += transfer.bytes * multiplicity;
      }
    }
  }
}

void NetworkModel::count_link_bytes(std::span<const std::pair<LinkId, double>> crossings) {
  for (const auto& [link, bytes] : crossings) {
    if (link >= link_bytes_.size()) link_bytes_.resize(link + 1, 0.0);
    link_bytes_[link] += bytes;
  }
}

void NetworkModel::append_link_bytes(const CollectivePlan& plan,
                                     std::vector<std::pair<LinkId, double>>& crossings) {
  for (const Phase& phase : plan.phases) {
    for (const Transfer& transfer : phase.transfers) {
      for (LinkId link : transfer.route) crossings.emplace_back(link, transfer.bytes);
    }
  }
}

// Sums the bytes of each link (links in order of first crossing, bytes in crossing order).
std::vector<std::pair<LinkId, double>> NetworkModel::per_link_bytes(
    std::span<const std::pair<LinkId, double>> crossings) {
  std::vector<std::pair<LinkId, double>> sorted(crossings.begin(), crossings.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<LinkId, double>> sums;
  for (const auto& [link, bytes] : sorted) {
    if (sums.empty() || sums.back().first != link) {
      sums.emplace_back(link, bytes);
    } else {
      sums.back().second += bytes;
    }
  }
  return sums;
}

std::vector<std::string> network_model_names() {
  std::vector<std::string> names;
  for (const auto& model : kModels) names.emplace_back(model.name);
  return names;
}

std::unique_ptr<NetworkModel> make_network_model(std::string_view name, Engine& engine,
                                                 std::vector<double> capacity_Bps,
                                                 const std::string& where,
                                                 const std::string& json_path) {
  for (const auto& model : kModels) {
    if (name == model.name) return model.factory(engine, std::move(capacity_Bps));
  }
  std::string valid;
  for (const auto& model : kModels) valid += (valid.empty() ? "" : ", ") + std::string(model.name);
  throw InputError(where, json_path, std::string(name),
                   "unknown network model. Valid values are: " + valid);
}

}  // namespace wallsim
