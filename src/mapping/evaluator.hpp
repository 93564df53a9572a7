// The evaluator: list-schedules the layer DAG of one inference on a mapping (groups of
// devices with a design each, layer -> group, sharding per layer) and returns the
// makespan, with per-device timelines on request. Costs per (layer, design, group
// size, strategy) are tabulated once, so one evaluation is linear in the DAG size.
#pragma once

#include <string>
#include <vector>

#include "mapping/layer_cost.hpp"
#include "mapping/sharding.hpp"
#include "mapping/system.hpp"
#include "mapping/workload.hpp"

namespace orchid::mapping {

struct Group {
  int design = 0;        // index into System::designs
  int size = 1;          // devices
  int first_device = 0;  // devices first_device .. first_device + size - 1
};

struct Mapping {
  std::vector<Group> groups;
  std::vector<int> group_of;       // per layer
  std::vector<Strategy> strategy;  // per layer; invalid choices fall back to None
};

struct Interval {
  enum class Kind { Compute, Comm, Weights };
  int layer = 0;
  double start = 0;
  double end = 0;
  Kind kind = Kind::Compute;
};

// An activation sent from one group to another (the Gantt chart's arrows).
struct Transfer {
  int from_layer = 0;
  int to_layer = 0;
  int from_group = 0;
  int to_group = 0;
  double bytes = 0;
  double start = 0;  // the producer's finish
  double end = 0;    // arrival at the consumer's group
};

struct Schedule {
  double makespan = 0;
  bool feasible = true;
  std::string problem;  // why not feasible
  std::vector<double> start, finish;
  std::vector<bool> resident;                  // weights kept in device DRAM
  std::vector<Strategy> strategy;              // effective strategy per layer
  std::vector<std::vector<Interval>> devices;  // per device
  std::vector<Transfer> transfers;             // between groups, in scheduling order
};

// Penalty makespan of a mapping that breaks a constraint (unsupported layer, memory).
inline constexpr double kInfeasible = 1e9;
// Limits that keep kInfeasible above every feasible makespan and the cost table small.
inline constexpr double kMaxSerialSeconds = 1e6;
inline constexpr double kMaxTableEntries = 1e8;

class Evaluator {
 public:
  Evaluator(const Workload& workload, const System& system,
            const LayerCostProvider& provider = default_cost_provider());

  double makespan(const Mapping& mapping) const;
  Schedule schedule(const Mapping& mapping) const;

  // Tabulated on-device compute of `layer` sharded `s` over p devices of `design`
  // (negative when not possible), and its intra-layer communication.
  double compute_seconds(int layer, int design, int p, Strategy s) const;
  double comm_seconds(int layer, int p, Strategy s) const;
  bool valid(int layer, int design, int p, Strategy s) const {
    return compute_seconds(layer, design, p, s) >= 0;
  }
  // Total work on the best design for each layer over all devices, zero communication.
  double lower_bound() const;

  const Workload& workload() const { return workload_; }
  const System& system() const { return system_; }
  const std::vector<int>& order() const { return order_; }  // list-scheduling priority
  // Activations from one group to another: the fastest [[topology.link]] between a member
  // of each (its latency plus bytes over its bandwidth), else the global inter-group
  // figure; through the host, each group's slowest host link.
  double transfer_seconds(double bytes, const Group& from, const Group& to) const;
  // A group's slowest member link to the host, and the slowest link of its ring (members
  // in order, the last back to the first) that collectives run over.
  double host_gbs(const Group& group) const;
  double ring_gbs(const Group& group) const;
  double bytes_per_element() const { return 4.0; }

 private:
  double run(const Mapping& mapping, Schedule* out) const;
  double simulate_groups(const Mapping& m, const std::vector<Strategy>& strat,
                         const std::vector<SharedCoreLayer>& sim, std::vector<double>& start,
                         std::vector<double>& finish, Schedule* out) const;
  std::size_t slot(int layer, int design, int p, Strategy s) const {
    return ((static_cast<std::size_t>(layer) * designs_ + design) * (max_p_ + 1) + p) *
               kStrategies +
           static_cast<int>(s);
  }

  const Workload& workload_;
  const System& system_;
  int designs_ = 0;
  int max_p_ = 1;
  std::vector<double> compute_;  // slot -> seconds, < 0 invalid
  std::vector<double> comm_;     // (layer, p, s) -> seconds
  std::vector<int> order_;
};

// 0/1 knapsack with value = size: which items to keep resident within `capacity`.
// Exact when everything fits, else dynamic programming on `units` capacity steps.
std::vector<bool> knapsack_fill(const std::vector<double>& sizes, double capacity, int units);

}  // namespace orchid::mapping
