// Weighted max-min fair rates by progressive filling, on one self-contained problem.
//
// Given links with capacities C_l and flows with weights m_f > 0 (multiplicity), optional rate
// caps c_f and the links each crosses k_fl > 0 times, find rates r_f such that for every link
//     sum over flows f crossing l of k_fl * m_f * r_f <= C_l,      r_f <= c_f,
// and no r_f can grow without shrinking some r_g <= r_f (max-min fairness; Bertsekas &
// Gallager, "Data Networks", 2nd ed., §6.5.2; SimGrid's lmm::System solves the same system).
//
// Progressive filling: all unfrozen flows share one level L that rises from 0. Link l would
// saturate at L_l = (C_l - frozen load on l) / (unfrozen weight on l); flow f hits its cap at
// c_f. The smallest of these events happens first: its flows freeze at that level and leave
// their load on their other links, whose L_l can then only grow (freezing m_f at L <= L_l
// leaves (R - m L)/(W - m) >= R/W). So a key pushed for a link stays a lower bound of its
// level: links sit in a min-heap under possibly stale keys, and a popped link whose level has
// risen is pushed back with the true one (lazy re-keying). Freezing a flow touches only its
// own links' sums, and each flow is frozen once.
//
// A flow that crosses a link k times counts k times on it: k is given as a crossing count, or
// the link is listed k times. Ties are broken by (level, kind, index), so equal input gives
// bitwise-equal output.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace wallsim {

// Flows and links of one problem, indexed from 0; flow f crosses link link_index[k]
// crossings[k] times for k in [link_begin[f], link_begin[f + 1]).
struct MaxMinProblem {
  std::vector<double> capacity_Bps;  // per link, > 0 and finite
  std::vector<double> weight;        // per flow, > 0
  std::vector<double> cap_Bps;       // per flow, +infinity when uncapped
  std::vector<std::uint32_t> link_begin{0};
  std::vector<std::uint32_t> link_index;
  std::vector<double> crossings;  // per entry of link_index, > 0

  std::size_t num_links() const { return capacity_Bps.size(); }
  std::size_t num_flows() const { return weight.size(); }

  // Empties the problem, keeping the memory for the next one.
  void clear();
  std::uint32_t add_link(double capacity);
  // `links` are indices returned by add_link; there must be at least one.
  std::uint32_t add_flow(std::span<const std::uint32_t> links, double flow_weight,
                         double rate_cap_Bps = std::numeric_limits<double>::infinity());
  // The same, crossing links[k] crossings[k] times.
  std::uint32_t add_flow(std::span<const std::uint32_t> links, std::span<const double> crossings,
                         double flow_weight,
                         double rate_cap_Bps = std::numeric_limits<double>::infinity());
};

// Solves MaxMinProblems, reusing its scratch memory from one call to the next.
class MaxMinSolver {
 public:
  // Writes the rate of each flow (per unit of weight: per member of a multi-flow) to rates_Bps.
  void solve(const MaxMinProblem& problem, std::vector<double>& rates_Bps);

 private:
  struct Event {
    double level_Bps;
    std::uint32_t kind;  // kLinkSaturates or kFlowCapped; caps go first on equal levels
    std::uint32_t index;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const;
  };
  static constexpr std::uint32_t kFlowCapped = 0;
  static constexpr std::uint32_t kLinkSaturates = 1;

  void index_flows_by_link(const MaxMinProblem& problem);
  void reset_links(const MaxMinProblem& problem);
  void freeze(const MaxMinProblem& problem, std::uint32_t flow, double rate_Bps,
              std::vector<double>& rates_Bps);
  double link_level(std::uint32_t link, double floor_Bps) const;
  void push(Event event);

  // Per link: remaining capacity, unfrozen weight and unfrozen crossings.
  std::vector<double> free_Bps_;
  std::vector<double> unfrozen_weight_;
  std::vector<std::uint32_t> unfrozen_count_;
  // Link -> flows index (one entry per link_index entry), built per problem.
  std::vector<std::uint32_t> flow_begin_;
  std::vector<std::uint32_t> flow_index_;
  std::vector<std::uint32_t> entry_flow_;  // link_index entry -> its flow
  std::vector<bool> frozen_;
  std::size_t unfrozen_flows_ = 0;
  std::vector<Event> heap_;
};

}  // namespace wallsim
