#include "distributed/plan_runner.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distributed/mpi_session.hpp"
#include "distributed/tensor_slices.hpp"
#include "eval/random_inputs.hpp"
#include "orchestrate/orchestrator.hpp"
#include "runtime/plan_executor.hpp"
#include "util/error.hpp"

namespace orchid::distributed {

using mapping::Strategy;

constexpr int kNoRankFailed = 1 << 30;  // in the agreement on the plan checks

int world_rank() {
  return mpi_world().rank;
}
int world_size() {
  return mpi_world().size;
}

namespace {

// Bounded wait for one request: polls so a peer that died or stalled becomes an error.
void wait_bounded(MPI_Request& request, double timeout_s, const std::string& what) {
  const double deadline = MPI_Wtime() + timeout_s;
  for (int done = 0;;) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      fail("MPI failed while waiting for {}", what);
    }
    if (done) return;
    if (MPI_Wtime() > deadline) {
      fail("waited more than {} s for {} (did that rank fail?)", timeout_s, what);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// Everything the ranks agree on before running: node ownership and who needs what.
struct Layout {
  std::vector<int> node_layer;                     // per graph node: layer, -1 for free nodes
  std::vector<int> rank_group;                     // per rank
  std::vector<std::vector<std::string>> reads;     // per layer: tensors from outside it
  std::vector<std::vector<std::string>> exports;   // per layer: tensors read outside it
  std::unordered_map<std::string, int> tensor_id;  // message tags
  std::unordered_map<std::string, std::size_t> producer;
};

class Runner {
 public:
  Runner(const Graph& g, const mapping::Workload& w, const MappingPlan& plan,
         const std::vector<std::vector<TensorMap>>& inputs, const RunSettings& settings)
      : g_(g), w_(w), plan_(plan), inputs_(inputs), settings_(settings) {
    const WorldInfo world = mpi_world();
    rank_ = world.rank;
    size_ = world.size;
    build_layout();
    group_ = lay_.rank_group[rank_];
    const PlanGroup& pg = plan_.groups[group_];
    member_ = rank_ - pg.first_device;
    members_ = pg.devices;
    leader_ = pg.first_device;
  }

  DistributedRun run();

 private:
  void build_layout();
  double now() const { return MPI_Wtime() - t0_; }
  int leader_of(int group) const { return plan_.groups[group].first_device; }
  const Tensor& value(int inference, int sample, const std::string& name);
  void run_nodes(int inference, int sample, const std::vector<std::size_t>& nodes);
  void run_layer(int inference, int layer);
  void run_sharded_linear(int inference, int layer, Strategy s);
  void run_batch(int inference, int layer);
  void send_exports(int inference, int layer);
  void receive(int inference, const std::string& name, int from_group, int layer);
  std::vector<Tensor> linear_part(const Node& node, std::vector<const Tensor*> args, Strategy s,
                                  int part, int parts);
  void send_tensor(const Tensor& t, int to, int tag, int inference, int layer);
  Tensor recv_tensor(DType dtype, const Shape& shape, int from, int tag, const std::string& what,
                     int inference, int layer);
  void event(int layer, int inference, const char* kind, std::string how, double start,
             double bytes = 0) {
    events_.push_back({rank_, layer, inference, kind, std::move(how), start, now(), bytes});
  }

  // A layer's nodes as a graph of their own, orchestrated for the CPU and ready to run.
  struct LayerProgram {
    Graph graph;
    Orchestration orchestration;
    std::unique_ptr<PlanExecutor> executor;
  };
  // Null when the executor cannot run the layer (the reference kernels do then).
  LayerProgram* program(int layer);
  void run_layer_nodes(int inference, int sample, int layer);

  std::map<int, std::unique_ptr<LayerProgram>> programs_;
  std::set<int> refused_;
  const Graph& g_;
  const mapping::Workload& w_;
  const MappingPlan& plan_;
  const std::vector<std::vector<TensorMap>>& inputs_;
  const RunSettings settings_;
  int rank_ = 0, size_ = 1, group_ = 0, member_ = 0, members_ = 1, leader_ = 0;
  Layout lay_;
  double t0_ = 0;
  // Per inference and sample: tensors this rank holds.
  std::vector<std::vector<std::unordered_map<std::string, Tensor>>> env_;
  struct Pending {
    MPI_Request request;
    std::shared_ptr<Tensor> buffer;
    std::string what;
  };
  std::vector<Pending> sends_;
  std::vector<TimedEvent> events_;
};

void Runner::build_layout() {
  const int layers = static_cast<int>(w_.layers.size());
  lay_.node_layer.assign(g_.nodes.size(), -1);
  for (int l = 0; l < layers; ++l) {
    for (std::size_t n : w_.layers[l].nodes) lay_.node_layer[n] = l;
  }
  lay_.producer = g_.producers();
  lay_.rank_group.assign(size_, -1);
  for (std::size_t gi = 0; gi < plan_.groups.size(); ++gi) {
    const PlanGroup& pg = plan_.groups[gi];
    for (int r = pg.first_device; r < pg.first_device + pg.devices && r < size_; ++r) {
      lay_.rank_group[r] = static_cast<int>(gi);
    }
  }
  lay_.reads.assign(layers, {});
  lay_.exports.assign(layers, {});
  std::set<std::string> graph_outputs(g_.outputs.begin(), g_.outputs.end());
  for (int l = 0; l < layers; ++l) {
    std::set<std::string> inside, seen;
    for (std::size_t n : w_.layers[l].nodes) {
      for (const auto& o : g_.nodes[n].outputs) inside.insert(o);
    }
    for (std::size_t n : w_.layers[l].nodes) {
      for (const auto& in : g_.nodes[n].inputs) {
        if (in.empty() || inside.count(in) || g_.is_constant(in) || !seen.insert(in).second) {
          continue;
        }
        lay_.reads[l].push_back(in);
      }
    }
  }
  for (int l = 0; l < layers; ++l) {
    for (const std::string& t : lay_.reads[l]) {
      auto it = lay_.producer.find(t);
      if (it == lay_.producer.end()) continue;
      const int u = lay_.node_layer[it->second];
      if (u >= 0 && u != l) lay_.exports[u].push_back(t);
    }
  }
  for (int l = 0; l < layers; ++l) {
    for (std::size_t n : w_.layers[l].nodes) {
      for (const auto& o : g_.nodes[n].outputs) {
        if (graph_outputs.count(o)) lay_.exports[l].push_back(o);
      }
    }
    auto& e = lay_.exports[l];
    std::sort(e.begin(), e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
  }
  std::vector<std::string> names;
  for (const auto& [name, info] : g_.tensors()) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (std::size_t i = 0; i < names.size(); ++i) lay_.tensor_id[names[i]] = static_cast<int>(i);
}

const Tensor& Runner::value(int inference, int sample, const std::string& name) {
  auto& env = env_[inference][sample];
  if (auto it = env.find(name); it != env.end()) return it->second;
  if (g_.is_constant(name)) return *g_.tensor(name).data;
  const TensorMap& in = inputs_[inference][sample];
  if (auto it = in.find(name); it != in.end()) return it->second;
  auto p = lay_.producer.find(name);
  if (p == lay_.producer.end() || lay_.node_layer[p->second] >= 0) {
    internal_error("rank {}: tensor '{}' is not here (inference {}, sample {})", rank_, name,
                   inference, sample);
  }
  run_nodes(inference, sample, {p->second});  // a free node: computed where needed
  return env.at(name);
}

void Runner::run_nodes(int inference, int sample, const std::vector<std::size_t>& nodes) {
  for (std::size_t n : nodes) {
    const Node& node = g_.nodes[n];
    std::vector<const Tensor*> args;
    for (const auto& in : node.inputs)
      args.push_back(in.empty() ? nullptr : &value(inference, sample, in));
    std::vector<Tensor> out = run_reference_node(g_, node, args);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty()) env_[inference][sample][node.outputs[i]] = std::move(out[i]);
    }
  }
}

Runner::LayerProgram* Runner::program(int layer) {
  if (!settings_.cpu_model || refused_.count(layer)) return nullptr;
  if (auto it = programs_.find(layer); it != programs_.end()) return it->second.get();
  auto p = std::make_unique<LayerProgram>();
  Graph& sub = p->graph;
  sub.name = w_.layers[layer].name;
  sub.opset = g_.opset;
  for (const std::string& t : lay_.reads[layer]) {
    sub.add_tensor(t) = g_.tensor(t);
    sub.tensor(t).data = nullptr;
    sub.inputs.push_back(t);
  }
  for (std::size_t n : w_.layers[layer].nodes) {
    const Node& node = g_.nodes[n];
    for (const auto& in : node.inputs) {
      if (!in.empty() && g_.is_constant(in)) sub.add_tensor(in) = g_.tensor(in);
    }
    for (const auto& o : node.outputs) {
      if (!o.empty()) sub.add_tensor(o) = g_.tensor(o);
    }
    sub.nodes.push_back(node);
  }
  sub.outputs = lay_.exports[layer];
  for (int l = layer + 1; l < static_cast<int>(w_.layers.size()); ++l) {
    for (const std::string& t : lay_.reads[l]) {
      auto pr = lay_.producer.find(t);
      if (pr != lay_.producer.end() && lay_.node_layer[pr->second] == layer &&
          std::find(sub.outputs.begin(), sub.outputs.end(), t) == sub.outputs.end()) {
        sub.outputs.push_back(t);
      }
    }
  }
  try {
    if (sub.outputs.empty()) fail("layer has no outputs");
    OrchestrateOptions options;
    options.time_limit_s = 2;
    p->orchestration = orchestrate(sub, *settings_.cpu_model, options);
    p->executor =
        std::make_unique<PlanExecutor>(p->orchestration.fission.graph, p->orchestration.optimal,
                                       p->orchestration.fission.alternatives);
    p->executor->execute(make_random_inputs(sub, 0));  // warm-up: oneDNN JIT, page faults
  } catch (const std::exception&) {
    refused_.insert(layer);
    return nullptr;
  }
  return (programs_[layer] = std::move(p)).get();
}

void Runner::run_layer_nodes(int inference, int sample, int layer) {
  LayerProgram* p = program(layer);
  if (p == nullptr) {
    run_nodes(inference, sample, w_.layers[layer].nodes);
    return;
  }
  TensorMap feed;
  for (const std::string& t : lay_.reads[layer]) feed.emplace(t, value(inference, sample, t));
  p->executor->execute(feed);
  for (auto& [name, tensor] : p->executor->outputs()) {
    env_[inference][sample][name] = std::move(tensor);
  }
}

void Runner::send_tensor(const Tensor& t, int to, int tag, int inference, int layer) {
  const double start = now();
  auto buffer = std::make_shared<Tensor>(t);
  MPI_Request request;
  if (MPI_Isend(buffer->raw(), static_cast<int>(buffer->nbytes()), MPI_BYTE, to, tag,
                MPI_COMM_WORLD, &request) != MPI_SUCCESS) {
    fail("MPI_Isend to rank {} failed", to);
  }
  sends_.push_back({request, buffer, fmt::format("a send to rank {}", to)});
  event(layer, inference, "send", std::to_string(to), start, static_cast<double>(t.nbytes()));
}

Tensor Runner::recv_tensor(DType dtype, const Shape& shape, int from, int tag,
                           const std::string& what, int inference, int layer) {
  const double start = now();
  Tensor t(dtype, shape);
  MPI_Request request;
  if (MPI_Irecv(t.raw(), static_cast<int>(t.nbytes()), MPI_BYTE, from, tag, MPI_COMM_WORLD,
                &request) != MPI_SUCCESS) {
    fail("MPI_Irecv from rank {} failed", from);
  }
  wait_bounded(request, settings_.timeout_s, fmt::format("{} from rank {}", what, from));
  event(layer, inference, "recv", std::to_string(from), start, static_cast<double>(t.nbytes()));
  return t;
}

void Runner::receive(int inference, const std::string& name, int from_group, int layer) {
  const TensorInfo& info = g_.tensor(name);
  for (int b = 0; b < settings_.batch; ++b) {
    env_[inference][b][name] =
        recv_tensor(info.dtype, info.shape, leader_of(from_group), lay_.tensor_id.at(name),
                    "tensor '" + name + "'", inference, layer);
  }
}

void Runner::send_exports(int inference, int layer) {
  std::set<std::pair<int, std::string>> sent;
  for (const std::string& t : lay_.exports[layer]) {
    std::set<int> to;
    for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
      const int gl = plan_.layers[l].group;
      if (gl == group_) continue;
      if (std::find(lay_.reads[l].begin(), lay_.reads[l].end(), t) != lay_.reads[l].end()) {
        to.insert(leader_of(gl));
      }
    }
    if (std::find(g_.outputs.begin(), g_.outputs.end(), t) != g_.outputs.end() && rank_ != 0) {
      to.insert(0);
    }
    for (int r : to) {
      if (r == rank_) continue;
      for (int b = 0; b < settings_.batch; ++b) {
        send_tensor(env_[inference][b].at(t), r, lay_.tensor_id.at(t), inference, layer);
      }
    }
  }
}

// The layer's linear op run on part `part` of `parts` (out- or in-channel block).
std::vector<Tensor> Runner::linear_part(const Node& node, std::vector<const Tensor*> args,
                                        Strategy s, int part, int parts) {
  const std::string& op = node.op_type;
  const bool out_channel = s == Strategy::OutChannel;
  const Tensor& x = *args[0];
  const Tensor& wt = *args[1];
  std::vector<Tensor> owned;
  owned.reserve(3);
  Node shard = node;
  auto take = [&](Tensor t) {
    owned.push_back(std::move(t));
    return &owned.back();
  };
  if (op == "Conv") {
    if (out_channel) {
      const auto [b, e] = block_range(wt.shape()[0], part, parts);
      args[1] = take(slice_axis(wt, 0, b, e));
      if (args.size() > 2 && args[2]) args[2] = take(slice_axis(*args[2], 0, b, e));
    } else {
      const auto [b, e] = block_range(wt.shape()[1], part, parts);
      args[0] = take(slice_axis(x, 1, b, e));
      args[1] = take(slice_axis(wt, 1, b, e));
      if (part != 0 && args.size() > 2) args[2] = nullptr, shard.inputs[2] = "";
    }
  } else {  // Gemm or MatMul with a constant 2-D weight
    const bool trans_b = op == "Gemm" && node.attr_int("transB", 0) != 0;
    const int w_out_axis = trans_b ? 0 : 1;
    if (out_channel) {
      const auto [b, e] = block_range(wt.shape()[w_out_axis], part, parts);
      args[1] = take(slice_axis(wt, w_out_axis, b, e));
      if (args.size() > 2 && args[2]) {
        const Tensor& bias = *args[2];
        if (bias.rank() >= 1 && bias.shape().back() == wt.shape()[w_out_axis]) {
          args[2] = take(slice_axis(bias, static_cast<int>(bias.rank()) - 1, b, e));
        }
      }
    } else {
      const auto [b, e] = block_range(wt.shape()[1 - w_out_axis], part, parts);
      args[0] = take(slice_axis(x, static_cast<int>(x.rank()) - 1, b, e));
      args[1] = take(slice_axis(wt, 1 - w_out_axis, b, e));
      if (part != 0 && args.size() > 2) args[2] = nullptr, shard.inputs[2] = "";
    }
  }
  // A one-node graph whose output shape follows the shard's inputs.
  Graph mini;
  for (std::size_t i = 0; i < shard.inputs.size(); ++i) {
    if (shard.inputs[i].empty() || !args[i]) continue;
    mini.set_type(shard.inputs[i], args[i]->dtype(), args[i]->shape());
  }
  for (const auto& o : shard.outputs) {
    if (!o.empty()) mini.set_dynamic(o);
  }
  return run_reference_node(mini, shard, args);
}

void Runner::run_sharded_linear(int inference, int layer, Strategy s) {
  const std::vector<std::size_t>& nodes = w_.layers[layer].nodes;
  const Node& linear = g_.nodes[nodes[0]];
  const int axis = linear.op_type == "Conv" ? 1 : -1;  // output channels
  for (int b = 0; b < settings_.batch; ++b) {
    // The leader sends the activation to every member; weights are on every rank.
    const std::string& xname = linear.inputs[0];
    const TensorInfo& xi = g_.tensor(xname);
    const int tag = lay_.tensor_id.at(xname);
    const Tensor* x = nullptr;
    Tensor received;
    if (member_ == 0) {
      x = &value(inference, b, xname);
      for (int m = 1; m < members_; ++m) send_tensor(*x, leader_ + m, tag, inference, layer);
    } else {
      received = recv_tensor(xi.dtype, xi.shape, leader_, tag, "a layer input", inference, layer);
      x = &received;
    }
    std::vector<const Tensor*> args;
    for (const auto& in : linear.inputs) {
      args.push_back(in.empty() ? nullptr : in == xname ? x : &value(inference, b, in));
    }
    const double start = now();
    Tensor part = std::move(linear_part(linear, args, s, member_, members_)[0]);
    event(layer, inference, "compute", strategy_name(s), start);
    const int out_tag = lay_.tensor_id.at(linear.outputs[0]);
    if (member_ != 0) {
      MPI_Request request;
      if (MPI_Isend(part.raw(), static_cast<int>(part.nbytes()), MPI_BYTE, leader_, out_tag,
                    MPI_COMM_WORLD, &request) != MPI_SUCCESS) {
        fail("MPI_Isend to rank {} failed", leader_);
      }
      wait_bounded(request, settings_.timeout_s, "the leader taking a partial result");
      continue;
    }
    std::vector<Tensor> parts{std::move(part)};
    const TensorInfo& oi = g_.tensor(linear.outputs[0]);
    for (int m = 1; m < members_; ++m) {
      Shape shape = oi.shape;
      if (s == Strategy::OutChannel) {
        const int ax = axis < 0 ? static_cast<int>(shape.size()) - 1 : axis;
        const auto [lo, hi] = block_range(shape[ax], m, members_);
        shape[ax] = hi - lo;
      }
      parts.push_back(
          recv_tensor(oi.dtype, shape, leader_ + m, out_tag, "a partial result", inference, layer));
    }
    const double combine = now();
    Tensor out = s == Strategy::OutChannel
                     ? concat_axis(parts, axis < 0 ? static_cast<int>(oi.shape.size()) - 1 : axis)
                     : sum_f32(parts);
    env_[inference][b][linear.outputs[0]] = std::move(out);
    std::vector<std::size_t> rest(nodes.begin() + 1, nodes.end());
    run_nodes(inference, b, rest);
    event(layer, inference, "compute", "epilogue", combine);
  }
}

void Runner::run_batch(int inference, int layer) {
  const auto [lo, hi] = block_range(settings_.batch, member_, members_);
  if (member_ == 0) {
    for (int m = 1; m < members_; ++m) {
      const auto [mlo, mhi] = block_range(settings_.batch, m, members_);
      for (int b = static_cast<int>(mlo); b < mhi; ++b) {
        for (const std::string& t : lay_.reads[layer]) {
          if (inputs_[inference][b].count(t)) continue;  // every rank has the inputs
          send_tensor(value(inference, b, t), leader_ + m, lay_.tensor_id.at(t), inference, layer);
        }
      }
    }
  } else {
    for (int b = static_cast<int>(lo); b < hi; ++b) {
      for (const std::string& t : lay_.reads[layer]) {
        if (inputs_[inference][b].count(t)) continue;
        const TensorInfo& info = g_.tensor(t);
        env_[inference][b][t] = recv_tensor(info.dtype, info.shape, leader_, lay_.tensor_id.at(t),
                                            "a layer input", inference, layer);
      }
    }
  }
  const double start = now();
  for (int b = static_cast<int>(lo); b < hi; ++b) run_layer_nodes(inference, b, layer);
  event(layer, inference, "compute", "batch", start);
  // Outputs the rest of the plan needs go back to the leader.
  std::set<std::string> needed(lay_.exports[layer].begin(), lay_.exports[layer].end());
  for (int l = layer + 1; l < static_cast<int>(w_.layers.size()); ++l) {
    if (plan_.layers[l].group != group_) continue;
    for (const std::string& t : lay_.reads[l]) {
      auto p = lay_.producer.find(t);
      if (p != lay_.producer.end() && lay_.node_layer[p->second] == layer) needed.insert(t);
    }
  }
  for (const std::string& t : needed) {
    const TensorInfo& info = g_.tensor(t);
    if (member_ != 0) {
      for (int b = static_cast<int>(lo); b < hi; ++b) {
        send_tensor(env_[inference][b].at(t), leader_, lay_.tensor_id.at(t), inference, layer);
      }
      continue;
    }
    for (int m = 1; m < members_; ++m) {
      const auto [mlo, mhi] = block_range(settings_.batch, m, members_);
      for (int b = static_cast<int>(mlo); b < mhi; ++b) {
        env_[inference][b][t] =
            recv_tensor(info.dtype, info.shape, leader_ + m, lay_.tensor_id.at(t), "a batch result",
                        inference, layer);
      }
    }
  }
}

void Runner::run_layer(int inference, int layer) {
  const Strategy s = plan_.layers[layer].sharding;
  // Inputs from other groups arrive at the leader.
  if (member_ == 0) {
    for (const std::string& t : lay_.reads[layer]) {
      auto p = lay_.producer.find(t);
      if (p == lay_.producer.end() || lay_.node_layer[p->second] < 0) continue;
      const int from = plan_.layers[lay_.node_layer[p->second]].group;
      if (from != group_ && !env_[inference][0].count(t)) receive(inference, t, from, layer);
    }
  }
  const std::vector<std::size_t>& nodes = w_.layers[layer].nodes;
  const Node& first = g_.nodes[nodes[0]];
  const bool linear_with_weight =
      (first.op_type == "Conv" || first.op_type == "Gemm" || first.op_type == "MatMul") &&
      first.inputs.size() >= 2 && g_.is_constant(first.inputs[1]) &&
      g_.tensor(first.inputs[1]).shape.size() >= 2 &&
      (first.op_type == "Conv" || g_.tensor(first.inputs[1]).shape.size() == 2) &&
      !(first.op_type == "Gemm" && first.attr_int("transA", 0) != 0) &&
      (first.op_type != "Conv" || first.attr_int("group", 1) == 1);
  const bool channel = s == Strategy::OutChannel || s == Strategy::InChannelAllReduce ||
                       s == Strategy::InChannelReduceScatter;
  if (members_ > 1 && s == Strategy::Batch) {
    run_batch(inference, layer);
  } else if (members_ > 1 && channel && linear_with_weight) {
    run_sharded_linear(inference, layer, s);
  } else if (member_ == 0) {
    const double start = now();
    for (int b = 0; b < settings_.batch; ++b) run_layer_nodes(inference, b, layer);
    event(layer, inference, "compute",
          s == Strategy::None || members_ == 1 ? "none"
                                               : fmt::format("none (planned {})", strategy_name(s)),
          start);
  }
  if (member_ == 0) send_exports(inference, layer);
}

DistributedRun Runner::run() {
  omp_set_num_threads(settings_.threads);
  // Every layer this rank may run, orchestrated before the clock starts.
  for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
    if (plan_.layers[l].group == group_) program(l);
  }
  env_.assign(settings_.stream,
              std::vector<std::unordered_map<std::string, Tensor>>(settings_.batch));
  MPI_Barrier(MPI_COMM_WORLD);
  t0_ = MPI_Wtime();
  for (int i = 0; i < settings_.stream; ++i) {
    for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
      if (plan_.layers[l].group == group_) run_layer(i, l);
    }
    // Free what this inference no longer needs on members (the leader keeps outputs).
    if (member_ != 0) env_[i].assign(settings_.batch, {});
  }
  DistributedRun result;
  // Graph outputs at rank 0.
  if (rank_ == 0) {
    result.outputs.assign(settings_.stream, std::vector<TensorMap>(settings_.batch));
    for (int i = 0; i < settings_.stream; ++i) {
      for (const std::string& o : g_.outputs) {
        auto p = lay_.producer.find(o);
        const int layer = p == lay_.producer.end() ? -1 : lay_.node_layer[p->second];
        const int from = layer < 0 ? 0 : leader_of(plan_.layers[layer].group);
        for (int b = 0; b < settings_.batch; ++b) {
          if (from == 0) {
            result.outputs[i][b][o] = value(i, b, o);
          } else if (env_[i][b].count(o)) {
            result.outputs[i][b][o] = env_[i][b].at(o);
          } else {
            const TensorInfo& info = g_.tensor(o);
            result.outputs[i][b][o] = recv_tensor(
                info.dtype, info.shape, from, lay_.tensor_id.at(o), "output '" + o + "'", i, layer);
          }
        }
      }
    }
  }
  for (Pending& p : sends_) wait_bounded(p.request, settings_.timeout_s, p.what);
  const double local_end = now();
  double seconds = 0;
  MPI_Allreduce(&local_end, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  result.seconds = seconds;
  // Every rank's events to rank 0.
  nlohmann::json mine = nlohmann::json::array();
  for (const TimedEvent& e : events_) {
    mine.push_back({e.rank, e.layer, e.inference, e.kind, e.how, e.start_s, e.end_s, e.bytes});
  }
  const std::string text = mine.dump();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(size_), offsets(size_, 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank_ == 0) {
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    all.resize(offsets[size_ - 1] + lengths[size_ - 1]);
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, MPI_COMM_WORLD);
  if (rank_ == 0) {
    result.latency_s.assign(settings_.stream, 0);
    std::vector<double> first(settings_.stream, 1e300), last(settings_.stream, 0);
    for (int r = 0; r < size_; ++r) {
      for (const auto& e : nlohmann::json::parse(all.substr(offsets[r], lengths[r]))) {
        TimedEvent ev{e[0].get<int>(),         e[1].get<int>(),         e[2].get<int>(),
                      e[3].get<std::string>(), e[4].get<std::string>(), e[5].get<double>(),
                      e[6].get<double>(),      e[7].get<double>()};
        first[ev.inference] = std::min(first[ev.inference], ev.start_s);
        last[ev.inference] = std::max(last[ev.inference], ev.end_s);
        result.events.push_back(std::move(ev));
      }
    }
    for (int i = 0; i < settings_.stream; ++i) result.latency_s[i] = last[i] - first[i];
  }
  return result;
}

}  // namespace

DistributedRun run_plan(const Graph& graph, const mapping::Workload& workload,
                        const MappingPlan& plan, const std::vector<std::vector<TensorMap>>& inputs,
                        const RunSettings& settings) {
  const WorldInfo world = mpi_world();
  // Every rank checks, then all agree: a rank whose check failed reports its reason, the
  // others say which rank failed, and no rank starts running.
  std::string problem;
  try {
    check_plan(world, workload, plan, settings);
  } catch (const Error& e) {
    problem = e.what();
  }
  const int failed = problem.empty() ? kNoRankFailed : world.rank;
  int first_failed = 0;
  MPI_Allreduce(&failed, &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_failed != kNoRankFailed) {
    throw AgreedError(problem.empty()
                          ? fmt::format("rank {} refused the plan (see its message)", first_failed)
                          : problem);
  }
  if (static_cast<int>(inputs.size()) != settings.stream) internal_error("inputs per inference");
  Runner runner(graph, workload, plan, inputs, settings);
  return runner.run();
}

void check_plan(const WorldInfo& world, const mapping::Workload& workload, const MappingPlan& plan,
                const RunSettings& settings) {
  if (world.size != plan.devices()) {
    fail("{}: the plan needs {} ranks ({} groups), mpirun started {}", plan.path, plan.devices(),
         plan.groups.size(), world.size);
  }
  if (plan.layers.size() != workload.layers.size()) {
    fail("{}: a plan for another model: it has {} layers, '{}' has {}", plan.path,
         plan.layers.size(), workload.name, workload.layers.size());
  }
  for (std::size_t l = 0; l < plan.layers.size(); ++l) {
    if (plan.layers[l].name != workload.layers[l].name) {
      fail("{}: a plan for another model: layer {} is '{}' in the plan, '{}' in '{}'", plan.path, l,
           plan.layers[l].name, workload.layers[l].name, workload.name);
    }
  }
  if (settings.batch != plan.batch) {
    fail("{}: the plan was made for batch {}, the run has batch {}", plan.path, plan.batch,
         settings.batch);
  }
}

}  // namespace orchid::distributed
