#include "distributed/plan_runner.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distributed/mpi_session.hpp"
#include "distributed/op_shards.hpp"
#include "distributed/tensor_slices.hpp"
#include "eval/random_inputs.hpp"
#include "mapping/layer_subgraph.hpp"
#include "orchestrate/orchestrator.hpp"
#include "runtime/plan_executor.hpp"
#include "util/error.hpp"
#include "util/reuse_freed_memory.hpp"

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
// It spins for the first `spin_s` (200 us, plus the message's bytes at 1 GB/s: most
// messages of a layer arrive within that, and a sleeping rank waits for the scheduler to
// wake it), then sleeps between polls, each sleep a tenth of the time waited so far (20 us
// to 1 ms): a long wait leaves the core to the ranks that compute (polling every 20 us,
// two idle ranks beside two busy ones on two cores made MobileNetV2 run 1.85x slower)
// and ends at most about 10 % late. A rank with no layers at all waits for the end of
// the run without spinning, 10 ms between polls: where ranks share cores, each poll takes
// a core from one that computes (such ranks spinning, or waking every 20 us, tripled a
// 20 us inference of 4 ranks on 2 cores).
void wait_bounded(MPI_Request& request, double timeout_s, const std::string& what, double spin_s,
                  double min_pause_s = 20e-6) {
  const double start = MPI_Wtime();
  const double deadline = start + timeout_s;
  for (int done = 0;;) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      fail("MPI failed while waiting for {}", what);
    }
    if (done) return;
    if (MPI_Wtime() > deadline) {
      fail("waited more than {} s for {} (did that rank fail?)", timeout_s, what);
    }
    const double waited = MPI_Wtime() - start;
    if (waited < spin_s) continue;
    const double pause = std::clamp(waited / 10, min_pause_s, std::max(min_pause_s, 1e-3));
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int>(pause * 1e6)));
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
  std::unordered_map<std::string, std::vector<std::size_t>> consumers;
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
    if (MPI_Comm_split(MPI_COMM_WORLD, group_, rank_, &comm_) != MPI_SUCCESS) {
      fail("rank {}: MPI_Comm_split for group {} failed", rank_, group_);
    }
    // Batch layers move samples among the members that get some (block_range gives the
    // first min(batch, members) one block each at least).
    holders_ = std::min(members_, settings_.batch);
    if (MPI_Comm_split(comm_, member_ < holders_ ? 0 : MPI_UNDEFINED, member_, &batch_comm_) !=
        MPI_SUCCESS) {
      fail("rank {}: MPI_Comm_split for group {}'s sample holders failed", rank_, group_);
    }
  }
  ~Runner() {
    if (batch_comm_ != MPI_COMM_NULL) MPI_Comm_free(&batch_comm_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    if (active_ != MPI_COMM_NULL) MPI_Comm_free(&active_);
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  DistributedRun run();

 private:
  void build_layout();
  void run_round(DistributedRun& result, bool keep_outputs);
  double now() const { return MPI_Wtime() - t0_; }
  int leader_of(int group) const { return plan_.groups[group].first_device; }
  const Tensor& value(int inference, int sample, const std::string& name);
  void run_nodes(int inference, int sample, const std::vector<std::size_t>& nodes);
  void run_layer(int inference, int layer);
  void run_sharded(int inference, int layer);
  void run_batch(int inference, int layer);
  void send_exports(int inference, int layer);
  void post_receives(int inference);
  void receive(int inference, const std::string& name, int layer);
  void send_tensor(const Tensor& t, int to, int tag, int inference, int layer);
  Tensor recv_tensor(DType dtype, const Shape& shape, int from, int tag, const std::string& what,
                     int inference, int layer);
  // `bytes`: what this rank sends or receives in the request. Open MPI moves a large
  // message in fragments as the ranks poll, and a rank asleep between polls would hold
  // it up, so the spin lasts as long as the bytes take at 1 GB/s on top of the 200 us.
  void wait_collective(MPI_Request& request, const char* what, double bytes);
  void wait(MPI_Request& request, const std::string& what, double bytes = 0) {
    wait_bounded(request, settings_.timeout_s, what, kSpinSeconds + bytes / kSpinBytesPerSecond);
  }
  static constexpr double kSpinSeconds = 200e-6;
  static constexpr double kSpinBytesPerSecond = 1e9;
  static constexpr int kMaxWarmupRounds = 10000;
  // Wall-clock and this thread's CPU time: their ratio over a computation says how much
  // of it the rank had a core (other processes on an oversubscribed machine take the
  // rest). The thread's CPU clock is a system call (0.6 us on a VM: a tenth of a small
  // layer), so it is read only around computations the plan expects to take 100 us or
  // more; transfers, whose CPU time says nothing (spinning or sleeping), and smaller
  // computations read only the wall clock (cpu_s -1).
  struct Stamp {
    double wall, cpu = -1;
  };
  static constexpr double kCpuClockMinSeconds = 100e-6;
  static double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
  }
  Stamp stamp() const { return {now()}; }
  Stamp compute_stamp(int layer) const {
    const PlanLayer& l = plan_.layers[layer];
    if (l.finish_s - l.start_s < kCpuClockMinSeconds) return {now()};
    return {now(), thread_cpu_seconds()};
  }
  void event(int layer, int inference, const char* kind, std::string how, Stamp start,
             double bytes = 0) {
    const double end = now();
    const double cpu = start.cpu >= 0 ? thread_cpu_seconds() - start.cpu : -1;
    events_.push_back({rank_, layer, inference, kind, std::move(how), start.wall, end, bytes, cpu});
  }

  // A graph run on the CPU executor under the plan the kernel orchestrator picks, or on
  // the reference kernels when there is no CPU model or the executor refuses it.
  struct Program {
    Graph graph;
    Orchestration orchestration;
    std::unique_ptr<PlanExecutor> executor;
    std::unique_ptr<ReferenceInterpreter> reference;
    TensorMap run(const TensorMap& feed);
  };
  // A layer whose linear op the group splits (op_shards.hpp): this member's part, the
  // leader's epilogue (the layer's other nodes) and every part's blocks (leader).
  struct ShardedLayer {
    int in_axis = -1, out_axis = -1;
    std::vector<std::int64_t> in_begin, in_end;
    std::vector<int> in_bytes;
    std::vector<Shape> out_shape;
    Shape own_in_shape;
    std::int64_t own_in_begin = 0, own_in_end = 0;
    // Every member holds the op's input (an all-reduced result of an earlier layer of the
    // group): each takes its block locally, nothing is broadcast or scattered.
    bool x_everywhere = false;
    // In-channel all-reduce: every member holds the sum and, when the epilogue's other
    // inputs are on every member too, runs the epilogue as well.
    bool epilogue_everywhere = false;
    // Out-channel: the layer's elementwise epilogue runs in each part's program, on its
    // block of channels (constants sliced); the gathered blocks are `kept`.
    bool chain_on_blocks = false;
    // Spatial chains of convolutions: the input's rows are on the members as the row
    // blocks of the previous layer (`held` per member), each member fetching the rows it
    // lacks (`need` per member, halo included) from the neighbours that hold them; and/or
    // the result stays as row blocks on the members (`rows_out`: `kept` is the tensor,
    // rows [out_begin, out_end) here), its epilogue run on the block by every member in
    // the same program as its part.
    bool rows_in = false, rows_out = false;
    std::vector<std::pair<std::int64_t, std::int64_t>> held, need;
    std::string kept;
    std::unique_ptr<Program> part, epilogue;
  };
  bool elementwise_chain(int layer, std::string& kept) const;
  void append_chain(Graph& part, int layer, int axis, std::int64_t begin, std::int64_t end) const;
  bool keeps_rows(int layer, std::string& kept) const;
  std::vector<std::string> layer_outputs(int layer) const;
  std::unique_ptr<Program> make_program(Graph graph) const;
  TensorMap feed(const Program& p, int inference, int sample);
  void prepare_layer(int layer);
  void run_whole(int inference, int sample, int layer);
  bool batch_here(int layer) const;
  bool members_hold(const std::string& t);
  bool leader_needs_whole(const std::string& t);
  int last_reader(const std::string& t);
  void plan_releases();
  void plan_messages();

  // Tensors from other groups, per (inference, name): one posted receive per sample.
  struct Incoming {
    int from = 0;
    std::vector<MPI_Request> requests;
    std::vector<Tensor> buffers;
  };
  std::map<std::pair<int, std::string>, Incoming> incoming_;
  std::map<int, std::unique_ptr<Program>> whole_;
  std::map<int, std::unique_ptr<ShardedLayer>> sharded_;
  // Tensors every member of the group holds (results of in-channel all-reduce layers and
  // of epilogues run on every member); the same on all members (decided in prepare_layer).
  std::set<std::string> everywhere_;
  // Tensors the members hold as row blocks (per member: [begin, end) of axis 2).
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> row_blocks_;
  // Per inference and sample: this member's row blocks of those tensors.
  std::vector<std::vector<std::unordered_map<std::string, Tensor>>> rows_;
  // Batch chains: memos of members_hold and leader_needs_whole.
  std::unordered_map<std::string, bool> members_hold_, leader_needs_whole_;
  // Memo of last_reader; per layer, the tensors this rank drops once the layer has run.
  std::unordered_map<std::string, int> last_reader_;
  std::vector<std::vector<std::string>> release_after_;
  // Per layer, decided once before the clock starts (plan_messages): the tensors its
  // leader receives from other groups, the ones a batch layer scatters to and gathers
  // from the members, and where each of its exports goes (leader ranks).
  struct LayerMessages {
    std::vector<std::string> receive, scatter, gather;
    std::vector<std::pair<std::string, std::vector<int>>> send;
  };
  std::vector<LayerMessages> messages_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // the group's ranks, for its collectives
  // The members that get samples of a batch layer (the first `holders_`), for its scatters
  // and gathers; null on the others, which have no part in batch layers at all.
  MPI_Comm batch_comm_ = MPI_COMM_NULL;
  int holders_ = 1;
  const Graph& g_;
  const mapping::Workload& w_;
  const MappingPlan& plan_;
  const std::vector<std::vector<TensorMap>>& inputs_;
  const RunSettings settings_;
  int rank_ = 0, size_ = 1, group_ = 0, member_ = 0, members_ = 1, leader_ = 0;
  // Ranks that run rounds: those with work in some layer, and rank 0 (it collects the
  // outputs). The others (a plan may leave a group without layers, or a batch smaller than
  // a group members without samples) only wait for the end.
  MPI_Comm active_ = MPI_COMM_NULL;
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
  lay_.consumers = g_.consumers();
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

void Runner::send_tensor(const Tensor& t, int to, int tag, int inference, int layer) {
  const Stamp start = stamp();
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
  const Stamp start = stamp();
  Tensor t(dtype, shape);
  MPI_Request request;
  if (MPI_Irecv(t.raw(), static_cast<int>(t.nbytes()), MPI_BYTE, from, tag, MPI_COMM_WORLD,
                &request) != MPI_SUCCESS) {
    fail("MPI_Irecv from rank {} failed", from);
  }
  wait(request, fmt::format("{} from rank {}", what, from), static_cast<double>(t.nbytes()));
  event(layer, inference, "recv", std::to_string(from), start, static_cast<double>(t.nbytes()));
  return t;
}

void Runner::post_receives(int inference) {
  if (member_ != 0) return;
  for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
    if (plan_.layers[l].group != group_) continue;
    for (const std::string& t : lay_.reads[l]) {
      auto p = lay_.producer.find(t);
      if (p == lay_.producer.end() || lay_.node_layer[p->second] < 0) continue;
      const int from = plan_.layers[lay_.node_layer[p->second]].group;
      if (from == group_ || incoming_.count({inference, t})) continue;
      Incoming& in = incoming_[{inference, t}];
      in.from = leader_of(from);
      in.requests.resize(settings_.batch);
      in.buffers.reserve(settings_.batch);  // no reallocation under a posted receive
      const TensorInfo& info = g_.tensor(t);
      for (int b = 0; b < settings_.batch; ++b) {
        Tensor& buffer = in.buffers.emplace_back(info.dtype, info.shape);
        if (MPI_Irecv(buffer.raw(), static_cast<int>(buffer.nbytes()), MPI_BYTE, in.from,
                      lay_.tensor_id.at(t), MPI_COMM_WORLD, &in.requests[b]) != MPI_SUCCESS) {
          fail("MPI_Irecv from rank {} failed", in.from);
        }
      }
    }
  }
}

void Runner::receive(int inference, const std::string& name, int layer) {
  auto it = incoming_.find({inference, name});
  if (it == incoming_.end()) internal_error("rank {}: no receive posted for '{}'", rank_, name);
  Incoming& in = it->second;
  for (int b = 0; b < settings_.batch; ++b) {
    const Stamp start = stamp();
    wait(in.requests[b], fmt::format("tensor '{}' from rank {}", name, in.from),
         static_cast<double>(in.buffers[b].nbytes()));
    event(layer, inference, "recv", std::to_string(in.from), start,
          static_cast<double>(in.buffers[b].nbytes()));
    env_[inference][b][name] = std::move(in.buffers[b]);
  }
  incoming_.erase(it);
}

void Runner::send_exports(int inference, int layer) {
  for (const auto& [t, to] : messages_[layer].send) {
    for (int r : to) {
      for (int b = 0; b < settings_.batch; ++b) {
        send_tensor(env_[inference][b].at(t), r, lay_.tensor_id.at(t), inference, layer);
      }
    }
  }
}

std::vector<std::string> Runner::layer_outputs(int layer) const {
  std::vector<std::string> outputs = lay_.exports[layer];
  for (int l = layer + 1; l < static_cast<int>(w_.layers.size()); ++l) {
    for (const std::string& t : lay_.reads[l]) {
      auto pr = lay_.producer.find(t);
      if (pr != lay_.producer.end() && lay_.node_layer[pr->second] == layer &&
          std::find(outputs.begin(), outputs.end(), t) == outputs.end()) {
        outputs.push_back(t);
      }
    }
  }
  return outputs;
}

std::unique_ptr<Runner::Program> Runner::make_program(Graph graph) const {
  auto p = std::make_unique<Program>();
  p->graph = std::move(graph);
  if (p->graph.outputs.empty()) internal_error("a layer program without outputs");
  if (settings_.cpu_model) {
    try {
      OrchestrateOptions options;
      options.time_limit_s = 2;
      p->orchestration = orchestrate(p->graph, *settings_.cpu_model, options);
      p->executor =
          std::make_unique<PlanExecutor>(p->orchestration.fission.graph, p->orchestration.optimal,
                                         p->orchestration.fission.alternatives);
      p->executor->execute(make_random_inputs(p->graph, 0));  // warm-up: oneDNN JIT, pages
      return p;
    } catch (const std::exception&) {
      p->executor.reset();  // the executor refuses it: the reference kernels run it
    }
  }
  p->reference = std::make_unique<ReferenceInterpreter>(p->graph);
  return p;
}

TensorMap Runner::Program::run(const TensorMap& feed) {
  if (executor) return executor->run(feed);
  return reference->run(feed);
}

TensorMap Runner::feed(const Program& p, int inference, int sample) {
  TensorMap map;
  for (const std::string& t : p.graph.inputs) {
    const Tensor& v = value(inference, sample, t);
    // A view, not a copy: the program only reads its inputs.
    map.emplace(t, Tensor::view(v.dtype(), v.shape(), const_cast<std::byte*>(v.raw())));
  }
  return map;
}

// Whether the layer's nodes after its linear op are a chain of elementwise ops on its
// result (their other inputs constants, every value of the op's shape), and the chain's
// end `kept` is the only tensor that leaves the layer: then a block of the op's result
// can go through the chain on its own.
bool Runner::elementwise_chain(int layer, std::string& kept) const {
  static const std::set<std::string> elementwise = {
      "Relu",    "Clip",        "BatchNormalization", "Add",       "Sub",      "Mul", "Div",
      "Sigmoid", "HardSigmoid", "HardSwish",          "LeakyRelu", "Identity", "Tanh"};
  const std::vector<std::size_t>& nodes = w_.layers[layer].nodes;
  const Node& op = g_.nodes[nodes[0]];
  const Shape& ys = g_.tensor(op.outputs[0]).shape;
  kept = op.outputs[0];
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    const Node& n = g_.nodes[nodes[i]];
    if (!elementwise.count(n.op_type) || n.outputs.size() != 1) return false;
    for (const std::string& in : n.inputs) {
      if (!in.empty() && in != kept && !g_.is_constant(in)) return false;
    }
    if (std::find(n.inputs.begin(), n.inputs.end(), kept) == n.inputs.end()) return false;
    kept = n.outputs[0];
    if (g_.tensor(kept).shape != ys) return false;
  }
  return layer_outputs(layer) == std::vector<std::string>{kept};
}

// Appends the layer's elementwise chain (elementwise_chain) to `part`, a program whose
// output is the block [begin, end) of the op's result along `axis`: every value of the
// chain gets the block's shape, and constants that vary along `axis` are sliced.
void Runner::append_chain(Graph& part, int layer, int axis, std::int64_t begin,
                          std::int64_t end) const {
  const std::vector<std::size_t>& nodes = w_.layers[layer].nodes;
  const Shape& ys = g_.tensor(g_.nodes[nodes[0]].outputs[0]).shape;
  Shape block = ys;
  block[axis] = end - begin;
  const int rank = static_cast<int>(ys.size());
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    Node node = g_.nodes[nodes[i]];
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty() || !g_.is_constant(in)) continue;  // the chain's value: in `part`
      const Tensor& c = *g_.tensor(in).data;
      const int crank = static_cast<int>(c.shape().size());
      // The constant's axis that meets `axis`: BatchNormalization's parameters are per
      // channel (axis 1); other ops broadcast from the right.
      const int caxis =
          node.op_type == "BatchNormalization" ? (axis == 1 ? 0 : -1) : axis - (rank - crank);
      if (caxis >= 0 && caxis < crank && c.shape()[caxis] == ys[axis] && ys[axis] > 1) {
        const std::string sliced = in + "#block";
        if (!part.has_tensor(sliced)) part.set_constant(sliced, slice_axis(c, caxis, begin, end));
        node.inputs[k] = sliced;
      } else if (!part.has_tensor(in)) {
        part.add_tensor(in) = g_.tensor(in);
      }
    }
    for (const std::string& o : node.outputs) {
      if (o.empty()) continue;
      part.add_tensor(o) = g_.tensor(o);
      part.set_type(o, g_.tensor(o).dtype, block);
    }
    part.nodes.push_back(std::move(node));
  }
}

// Whether a spatially split convolution's result can stay as row blocks on the members:
// its epilogue is a chain of elementwise ops (elementwise_chain), and the chain's result
// `kept`, the only tensor that leaves the layer, is read only by one layer's convolution,
// split spatially by the same group.
bool Runner::keeps_rows(int layer, std::string& kept) const {
  const std::vector<std::size_t>& nodes = w_.layers[layer].nodes;
  const Node& conv = g_.nodes[nodes[0]];
  if (g_.tensor(conv.outputs[0]).shape.size() != 4 || !elementwise_chain(layer, kept)) {
    return false;
  }
  // Not as a graph output.
  if (std::find(g_.outputs.begin(), g_.outputs.end(), kept) != g_.outputs.end()) return false;
  int readers = 0, next = -1;
  for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
    if (std::find(lay_.reads[l].begin(), lay_.reads[l].end(), kept) != lay_.reads[l].end()) {
      ++readers, next = l;
    }
  }
  if (readers != 1 || plan_.layers[next].group != group_ ||
      plan_.layers[next].sharding != Strategy::Spatial) {
    return false;
  }
  const std::vector<std::size_t>& next_nodes = w_.layers[next].nodes;
  const Node& next_conv = g_.nodes[next_nodes[0]];
  if (next_conv.op_type != "Conv" || next_conv.inputs[0] != kept ||
      !can_shard_op(g_, next_conv, Strategy::Spatial, members_)) {
    return false;
  }
  for (std::size_t i = 1; i < next_nodes.size(); ++i) {
    const auto& ins = g_.nodes[next_nodes[i]].inputs;
    if (std::find(ins.begin(), ins.end(), kept) != ins.end()) return false;
  }
  return true;
}

void Runner::prepare_layer(int layer) {
  const Strategy s = plan_.layers[layer].sharding;
  const std::vector<std::size_t>& nodes = w_.layers[layer].nodes;
  const Node& first = g_.nodes[nodes[0]];
  const std::string& name = w_.layers[layer].name;
  const bool split = s == Strategy::OutChannel || s == Strategy::InChannelAllReduce ||
                     s == Strategy::InChannelReduceScatter || s == Strategy::Spatial;
  if (members_ > 1 && split && can_shard_op(g_, first, s, members_)) {
    auto sl = std::make_unique<ShardedLayer>();
    Graph own_part;  // this member's part of the op
    for (int m = 0; m < members_; ++m) {
      // Members need only their own part (and, for a spatial chain, every part's rows).
      if (m != member_ && member_ != 0 && s != Strategy::Spatial) continue;
      OpShard shard = shard_op(g_, first, s, m, members_);
      sl->in_axis = shard.in_axis;
      sl->out_axis = shard.out_axis;
      sl->in_begin.push_back(shard.in_begin);
      sl->in_end.push_back(shard.in_end);
      sl->in_bytes.push_back(static_cast<int>(shape_numel(shard.in_shape) * 4));
      sl->out_shape.push_back(shard.out_shape);
      if (m == member_) {
        sl->own_in_shape = shard.in_shape;
        sl->own_in_begin = shard.in_begin;
        sl->own_in_end = shard.in_end;
        own_part = std::move(shard.graph);
      }
    }
    sl->x_everywhere = everywhere_.count(first.inputs[0]) > 0;
    if (s == Strategy::Spatial && first.op_type == "Conv") {
      if (auto it = row_blocks_.find(first.inputs[0]); it != row_blocks_.end()) {
        sl->rows_in = true;
        sl->held = it->second;
        for (int m = 0; m < members_; ++m) sl->need.push_back({sl->in_begin[m], sl->in_end[m]});
      }
      if (keeps_rows(layer, sl->kept)) {
        sl->rows_out = true;
        const Shape& ys = g_.tensor(first.outputs[0]).shape;
        auto& blocks = row_blocks_[sl->kept];
        for (int m = 0; m < members_; ++m) blocks.push_back(block_range(ys[2], m, members_));
        // The epilogue on this member's rows, in the same program as its part (one pass
        // over the block, fused as the orchestrator fuses the whole layer; run apart,
        // MobileNetV2's ReLU6 over 2.4 MB blocks took as long as their 1x1 convolutions).
        if (nodes.size() > 1) {
          append_chain(own_part, layer, 2, blocks[member_].first, blocks[member_].second);
          own_part.outputs = {sl->kept};
        }
        sl->part = make_program(std::move(own_part));
        sharded_[layer] = std::move(sl);
        return;
      }
    }
    // Out-channel: an elementwise epilogue runs on each member's block of channels in its
    // part's program, so the leader only concatenates (it ran the epilogue on the whole
    // result alone while the members waited: ViT-B/16's MLP expansions, bias Add).
    if (s == Strategy::OutChannel && nodes.size() > 1 && elementwise_chain(layer, sl->kept)) {
      const auto [lo, hi] =
          block_range(g_.tensor(first.outputs[0]).shape[sl->out_axis], member_, members_);
      append_chain(own_part, layer, sl->out_axis, lo, hi);
      own_part.outputs = {sl->kept};
      sl->chain_on_blocks = true;
      sl->part = make_program(std::move(own_part));
      sharded_[layer] = std::move(sl);
      return;
    }
    sl->part = make_program(std::move(own_part));
    const bool all_reduce = s == Strategy::InChannelAllReduce;
    if (all_reduce) everywhere_.insert(first.outputs[0]);
    std::vector<std::size_t> rest(nodes.begin() + 1, nodes.end());
    std::vector<std::string> outputs = layer_outputs(layer);
    std::erase(outputs, first.outputs[0]);  // the combined result is stored as it is
    if (!rest.empty() && !outputs.empty()) {
      Graph epilogue = mapping::nodes_subgraph(g_, name + "_epilogue", rest, outputs);
      if (all_reduce) {
        // Every member can run it when each of its inputs is on every member: the sum,
        // other all-reduced results, graph inputs, constants and free nodes' results.
        sl->epilogue_everywhere =
            std::all_of(epilogue.inputs.begin(), epilogue.inputs.end(), [&](const std::string& t) {
              if (everywhere_.count(t) || inputs_[0][0].count(t)) return true;
              auto p = lay_.producer.find(t);
              return p != lay_.producer.end() && lay_.node_layer[p->second] < 0;
            });
        if (sl->epilogue_everywhere) everywhere_.insert(outputs.begin(), outputs.end());
      }
      if (member_ == 0 || sl->epilogue_everywhere) sl->epilogue = make_program(std::move(epilogue));
    }
    sharded_[layer] = std::move(sl);
    return;
  }
  if (member_ == 0 || (members_ > 1 && s == Strategy::Batch)) {
    whole_[layer] = make_program(mapping::nodes_subgraph(g_, name, nodes, layer_outputs(layer)));
  }
}

void Runner::run_whole(int inference, int sample, int layer) {
  Program& p = *whole_.at(layer);
  for (auto& [name, tensor] : p.run(feed(p, inference, sample))) {
    env_[inference][sample][name] = std::move(tensor);
  }
}

void Runner::wait_collective(MPI_Request& request, const char* what, double bytes) {
  wait(request,
       fmt::format("{} in group {} (ranks {}..{})", what, group_, leader_, leader_ + members_ - 1),
       bytes);
}

void Runner::run_sharded(int inference, int layer) {
  ShardedLayer& sl = *sharded_.at(layer);
  const Strategy s = plan_.layers[layer].sharding;
  const Node& linear = g_.nodes[w_.layers[layer].nodes[0]];
  const std::string& xname = linear.inputs[0];
  const std::string& yname = linear.outputs[0];
  const bool leader = member_ == 0;
  for (int b = 0; b < settings_.batch; ++b) {
    // 1. Each member's input: the whole activation (broadcast) or its block (scatter of
    //    the blocks the leader packs, halos included).
    Stamp start = stamp();
    Tensor x_part;
    MPI_Request request;
    if (sl.rows_in) {
      // Halo exchange: this member's rows of x are its block of the previous layer; the
      // rows its part also reads come from the members that hold them (its neighbours),
      // point to point.
      const Tensor& mine = rows_[inference][b].at(xname);
      std::vector<MPI_Request> requests;
      std::vector<Tensor> outgoing, pieces(members_);
      std::vector<char> have(members_, 0);  // which members' rows this part reads
      const int tag = layer % 32000;
      double received = 0;
      auto overlap = [](std::pair<std::int64_t, std::int64_t> a,
                        std::pair<std::int64_t, std::int64_t> c) {
        return std::pair{std::max(a.first, c.first), std::min(a.second, c.second)};
      };
      for (int m = 0; m < members_; ++m) {
        if (m == member_) continue;
        const auto [lo, hi] = overlap(sl.need[m], sl.held[member_]);
        if (lo >= hi) continue;
        outgoing.push_back(
            slice_axis(mine, 2, lo - sl.held[member_].first, hi - sl.held[member_].first));
        MPI_Request& r = requests.emplace_back();
        MPI_Isend(outgoing.back().raw(), static_cast<int>(outgoing.back().nbytes()), MPI_BYTE, m,
                  tag, comm_, &r);
      }
      for (int j = 0; j < members_; ++j) {
        const auto [lo, hi] = overlap(sl.need[member_], sl.held[j]);
        if (lo >= hi) continue;
        have[j] = 1;
        if (j == member_) {
          pieces[j] = slice_axis(mine, 2, lo - sl.held[j].first, hi - sl.held[j].first);
          continue;
        }
        Shape shape = mine.shape();
        shape[2] = hi - lo;
        pieces[j] = Tensor(DType::F32, shape);
        received += static_cast<double>(pieces[j].nbytes());
        MPI_Request& r = requests.emplace_back();
        MPI_Irecv(pieces[j].raw(), static_cast<int>(pieces[j].nbytes()), MPI_BYTE, j, tag, comm_,
                  &r);
      }
      double sent = 0;
      for (const Tensor& t : outgoing) sent += static_cast<double>(t.nbytes());
      for (MPI_Request& r : requests) wait_collective(r, "a halo exchange", sent + received);
      std::vector<Tensor> parts;
      for (int j = 0; j < members_; ++j) {
        if (have[j]) parts.push_back(std::move(pieces[j]));
      }
      x_part = parts.size() == 1 ? std::move(parts[0]) : concat_axis(parts, 2);
      event(layer, inference, "halo", "neighbours", start, received);
    } else if (sl.x_everywhere) {
      // The input is on every member already: no message.
      const Tensor& x = value(inference, b, xname);
      x_part = sl.in_axis < 0 ? Tensor::view(x.dtype(), x.shape(), const_cast<std::byte*>(x.raw()))
                              : slice_axis(x, sl.in_axis, sl.own_in_begin, sl.own_in_end);
    } else if (sl.in_axis < 0) {
      const TensorInfo& xi = g_.tensor(xname);
      if (leader) {
        const Tensor& x = value(inference, b, xname);
        x_part = Tensor::view(x.dtype(), x.shape(), const_cast<std::byte*>(x.raw()));
      } else {
        x_part = Tensor(xi.dtype, xi.shape);
      }
      MPI_Ibcast(x_part.raw(), static_cast<int>(x_part.nbytes()), MPI_BYTE, 0, comm_, &request);
      wait_collective(request, "a broadcast", static_cast<double>(x_part.nbytes()));
      event(layer, inference, "bcast", "group", start, static_cast<double>(x_part.nbytes()));
    } else {
      std::vector<std::byte> packed;
      std::vector<int> displs;
      if (leader) {
        const Tensor& x = value(inference, b, xname);
        for (int m = 0; m < members_; ++m) {
          displs.push_back(static_cast<int>(packed.size()));
          const Tensor block = slice_axis(x, sl.in_axis, sl.in_begin[m], sl.in_end[m]);
          packed.insert(packed.end(), block.raw(), block.raw() + block.nbytes());
        }
      }
      x_part = Tensor(DType::F32, sl.own_in_shape);
      MPI_Iscatterv(packed.data(), sl.in_bytes.data(), displs.data(), MPI_BYTE, x_part.raw(),
                    static_cast<int>(x_part.nbytes()), MPI_BYTE, 0, comm_, &request);
      wait_collective(request, "a scatter",
                      static_cast<double>(std::max(packed.size(), x_part.nbytes())));
      event(layer, inference, "scatter", "group", start, static_cast<double>(x_part.nbytes()));
    }
    // 2. This member's part on the executor.
    start = compute_stamp(layer);
    TensorMap in;
    in.emplace(xname, std::move(x_part));
    Tensor part =
        std::move(sl.part->run(in).at(sl.rows_out || sl.chain_on_blocks ? sl.kept : yname));
    event(layer, inference, "compute", strategy_name(s), start);
    if (sl.rows_out) {
      // The result (after the epilogue, in the same program) stays here as this
      // member's rows for the next layer.
      rows_[inference][b][sl.kept] = std::move(part);
      continue;
    }
    // 3. Combine at the leader: gather the blocks, or sum the partials.
    start = stamp();
    Tensor combined;
    if (sl.out_axis >= 0) {
      std::vector<int> counts, displs;
      std::vector<std::byte> packed;
      if (leader) {
        int at = 0;
        for (const Shape& shape : sl.out_shape) {
          counts.push_back(static_cast<int>(shape_numel(shape) * 4));
          displs.push_back(at);
          at += counts.back();
        }
        packed.resize(at);
      }
      MPI_Igatherv(part.raw(), static_cast<int>(part.nbytes()), MPI_BYTE, packed.data(),
                   counts.data(), displs.data(), MPI_BYTE, 0, comm_, &request);
      wait_collective(request, "a gather",
                      static_cast<double>(std::max(packed.size(), part.nbytes())));
      if (leader) {
        std::vector<Tensor> parts;
        for (int m = 0; m < members_; ++m) {
          parts.push_back(Tensor::view(DType::F32, sl.out_shape[m], packed.data() + displs[m]));
        }
        combined = concat_axis(parts, sl.out_axis);
      }
      event(layer, inference, "gather", "group", start, static_cast<double>(part.nbytes()));
    } else if (s == Strategy::InChannelAllReduce) {
      // Every member gets the sum (MPI's all-reduce: the same bits on every member).
      combined = Tensor(DType::F32, part.shape());
      MPI_Iallreduce(part.raw(), combined.raw(), static_cast<int>(part.numel()), MPI_FLOAT, MPI_SUM,
                     comm_, &request);
      wait_collective(request, "an all-reduce", 2.0 * static_cast<double>(part.nbytes()));
      event(layer, inference, "allreduce", "group", start, static_cast<double>(part.nbytes()));
    } else {
      // Reduce-scatter: member m sums block m of the partials (blocks of the flattened
      // result: output-channel blocks of a convolution), then the leader gathers the
      // summed blocks.
      std::vector<int> counts(members_), displs(members_);
      for (int m = 0; m < members_; ++m) {
        const auto [lo, hi] = block_range(part.numel(), m, members_);
        displs[m] = static_cast<int>(lo);
        counts[m] = static_cast<int>(hi - lo);
      }
      Tensor mine(DType::F32, Shape{counts[member_]});
      MPI_Ireduce_scatter(part.raw(), mine.raw(), counts.data(), MPI_FLOAT, MPI_SUM, comm_,
                          &request);
      wait_collective(request, "a reduce-scatter", static_cast<double>(part.nbytes()));
      event(layer, inference, "reduce-scatter", "group", start, static_cast<double>(part.nbytes()));
      start = stamp();
      if (leader) combined = Tensor(DType::F32, part.shape());
      MPI_Igatherv(mine.raw(), counts[member_], MPI_FLOAT, leader ? combined.raw() : nullptr,
                   counts.data(), displs.data(), MPI_FLOAT, 0, comm_, &request);
      wait_collective(request, "a gather of summed blocks", static_cast<double>(part.nbytes()));
      event(layer, inference, "gather", "group", start, static_cast<double>(mine.nbytes()));
    }
    if (!leader && !sl.epilogue_everywhere) {
      if (s == Strategy::InChannelAllReduce) env_[inference][b][yname] = std::move(combined);
      continue;
    }
    // 4. The rest of the layer (bias, normalisation, activation...) at the leader, or on
    //    every member when all hold its inputs (unless the parts ran it on their blocks).
    env_[inference][b][sl.chain_on_blocks ? sl.kept : yname] = std::move(combined);
    if (sl.epilogue) {
      start = compute_stamp(layer);
      for (auto& [name, tensor] : sl.epilogue->run(feed(*sl.epilogue, inference, b))) {
        env_[inference][b][name] = std::move(tensor);
      }
      event(layer, inference, "compute", "epilogue", start);
    }
  }
}

// Batch chains: results of a batch layer stay with the members as their samples, so a
// chain of batch layers in one group scatters its inputs once and gathers once at its end,
// as data parallelism does, instead of a gather and a scatter between every two layers.
bool Runner::batch_here(int layer) const {
  return layer >= 0 && members_ > 1 && plan_.layers[layer].group == group_ &&
         plan_.layers[layer].sharding == Strategy::Batch && !sharded_.count(layer);
}

// Whether every member holds tensor `t` for its own samples without a scatter: graph
// inputs and constants (every rank has them), tensors held everywhere, results of this
// group's batch layers, and free nodes' results computed from those (value() computes
// them where needed).
bool Runner::members_hold(const std::string& t) {
  if (g_.is_constant(t) || inputs_[0][0].count(t) || everywhere_.count(t)) return true;
  if (auto it = members_hold_.find(t); it != members_hold_.end()) return it->second;
  bool held = false;
  if (auto p = lay_.producer.find(t); p != lay_.producer.end()) {
    const int layer = lay_.node_layer[p->second];
    if (layer >= 0) {
      held = batch_here(layer);
    } else {
      held = true;
      for (const std::string& in : g_.nodes[p->second].inputs) {
        if (!in.empty() && !members_hold(in)) held = false;
      }
    }
  }
  return members_hold_[t] = held;
}

// Whether the leader needs all samples of `t` (a result of this group's batch layer):
// it is a graph output, or something other than this group's batch layers reads it,
// directly or through free nodes. Decided from the plan alone, so every member agrees.
bool Runner::leader_needs_whole(const std::string& t) {
  if (auto it = leader_needs_whole_.find(t); it != leader_needs_whole_.end()) return it->second;
  bool needed = std::find(g_.outputs.begin(), g_.outputs.end(), t) != g_.outputs.end();
  if (auto c = lay_.consumers.find(t); c != lay_.consumers.end()) {
    for (std::size_t n : c->second) {
      const int layer = lay_.node_layer[n];
      if (layer >= 0) {
        needed = needed || !batch_here(layer);
      } else {
        for (const std::string& o : g_.nodes[n].outputs) {
          needed = needed || (!o.empty() && leader_needs_whole(o));
        }
      }
    }
  }
  return leader_needs_whole_[t] = needed;
}

// The last of this group's layers that reads `t`, directly or through free nodes (which
// value() computes when a layer needs them); INT_MAX for graph outputs, which rank 0
// collects at the end.
int Runner::last_reader(const std::string& t) {
  if (auto it = last_reader_.find(t); it != last_reader_.end()) return it->second;
  int last = -1;
  if (std::find(g_.outputs.begin(), g_.outputs.end(), t) != g_.outputs.end()) {
    last = std::numeric_limits<int>::max();
  } else if (auto c = lay_.consumers.find(t); c != lay_.consumers.end()) {
    for (std::size_t n : c->second) {
      const int layer = lay_.node_layer[n];
      if (layer >= 0) {
        if (plan_.layers[layer].group == group_) last = std::max(last, layer);
      } else {
        for (const std::string& o : g_.nodes[n].outputs) {
          if (!o.empty()) last = std::max(last, last_reader(o));
        }
      }
    }
  }
  return last_reader_[t] = last;
}

// Tensors are dropped after the last layer here that reads them: a rank that kept every
// activation of every inference in flight would touch fresh memory (page faults) for
// each result, which made layers run up to 3x slower than alone.
void Runner::plan_releases() {
  const int layers = static_cast<int>(w_.layers.size());
  release_after_.assign(layers, {});
  std::set<std::string> seen;
  for (int l = 0; l < layers; ++l) {
    if (plan_.layers[l].group != group_) continue;
    std::vector<std::string> touched = lay_.reads[l];
    for (std::size_t n : w_.layers[l].nodes) {
      for (const std::string& o : g_.nodes[n].outputs) touched.push_back(o);
    }
    for (const std::string& t : touched) {
      if (t.empty() || g_.is_constant(t) || !seen.insert(t).second) continue;
      const int last = last_reader(t);
      if (last == std::numeric_limits<int>::max()) continue;
      release_after_[std::max(l, last)].push_back(t);
    }
  }
}

void Runner::plan_messages() {
  const int layers = static_cast<int>(w_.layers.size());
  messages_.assign(layers, {});
  for (int l = 0; l < layers; ++l) {
    if (plan_.layers[l].group != group_) continue;
    LayerMessages& m = messages_[l];
    for (const std::string& t : lay_.reads[l]) {
      auto p = lay_.producer.find(t);
      if (p == lay_.producer.end() || lay_.node_layer[p->second] < 0) continue;
      if (plan_.layers[lay_.node_layer[p->second]].group != group_) m.receive.push_back(t);
    }
    if (auto w = whole_.find(l);
        w != whole_.end() && members_ > 1 && plan_.layers[l].sharding == Strategy::Batch) {
      for (const std::string& t : w->second->graph.inputs) {
        if (!members_hold(t)) m.scatter.push_back(t);
      }
      for (const std::string& t : w->second->graph.outputs) {
        if (leader_needs_whole(t)) m.gather.push_back(t);
      }
    }
    for (const std::string& t : lay_.exports[l]) {
      std::set<int> to;
      for (int u = 0; u < layers; ++u) {
        const int gu = plan_.layers[u].group;
        if (gu == group_) continue;
        if (std::find(lay_.reads[u].begin(), lay_.reads[u].end(), t) != lay_.reads[u].end()) {
          to.insert(leader_of(gu));
        }
      }
      if (std::find(g_.outputs.begin(), g_.outputs.end(), t) != g_.outputs.end() && rank_ != 0) {
        to.insert(0);
      }
      to.erase(rank_);
      if (!to.empty()) m.send.emplace_back(t, std::vector<int>(to.begin(), to.end()));
    }
  }
}

// Batch sharding: the samples of every read tensor that the members do not hold already
// scattered to them by blocks, each member runs the whole layer on its samples, and the
// results that the leader needs whole gathered back.
void Runner::run_batch(int inference, int layer) {
  // A member without samples has no part in it: waiting in its collectives would take a
  // core from the members that compute (4 ranks on 2 cores, batch 2: the final gather of a
  // 20 us plan took 6 us with the two idle members in it).
  if (member_ >= holders_) return;
  const bool leader = member_ == 0;
  std::vector<int> first(holders_), count(holders_);
  for (int m = 0; m < holders_; ++m) {
    const auto [lo, hi] = block_range(settings_.batch, m, members_);
    first[m] = static_cast<int>(lo);
    count[m] = static_cast<int>(hi - lo);
  }
  // Moves the samples of tensor `t` between the leader and the members.
  auto exchange = [&](const std::string& t, bool scatter) {
    const TensorInfo& info = g_.tensor(t);
    const int bytes = static_cast<int>(shape_numel(info.shape) * dtype_size(info.dtype));
    std::vector<int> counts(holders_), displs(holders_);
    for (int m = 0; m < holders_; ++m) counts[m] = count[m] * bytes, displs[m] = first[m] * bytes;
    std::vector<std::byte> all(leader ? static_cast<std::size_t>(settings_.batch) * bytes : 0);
    std::vector<std::byte> mine(static_cast<std::size_t>(counts[member_]));
    const Stamp start = stamp();
    MPI_Request request;
    if (scatter) {
      if (leader) {
        for (int b = 0; b < settings_.batch; ++b) {
          std::memcpy(all.data() + b * bytes, value(inference, b, t).raw(), bytes);
        }
      }
      MPI_Iscatterv(all.data(), counts.data(), displs.data(), MPI_BYTE, mine.data(),
                    counts[member_], MPI_BYTE, 0, batch_comm_, &request);
      wait_collective(request, "a batch scatter",
                      static_cast<double>(std::max(all.size(), mine.size())));
      for (int i = 0; i < count[member_]; ++i) {
        Tensor v(info.dtype, info.shape);
        std::memcpy(v.raw(), mine.data() + i * bytes, bytes);
        env_[inference][first[member_] + i][t] = std::move(v);
      }
    } else {
      for (int i = 0; i < count[member_]; ++i) {
        std::memcpy(mine.data() + i * bytes, env_[inference][first[member_] + i].at(t).raw(),
                    bytes);
      }
      MPI_Igatherv(mine.data(), counts[member_], MPI_BYTE, all.data(), counts.data(), displs.data(),
                   MPI_BYTE, 0, batch_comm_, &request);
      wait_collective(request, "a batch gather",
                      static_cast<double>(std::max(all.size(), mine.size())));
      if (leader) {
        for (int b = count[0]; b < settings_.batch; ++b) {
          Tensor v(info.dtype, info.shape);
          std::memcpy(v.raw(), all.data() + b * bytes, bytes);
          env_[inference][b][t] = std::move(v);
        }
      }
    }
    event(layer, inference, scatter ? "scatter" : "gather", "group", start,
          static_cast<double>(counts[member_]));
  };
  for (const std::string& t : messages_[layer].scatter) exchange(t, true);
  const Stamp start = compute_stamp(layer);
  for (int i = 0; i < count[member_]; ++i) run_whole(inference, first[member_] + i, layer);
  if (count[member_] > 0) event(layer, inference, "compute", "batch", start);
  for (const std::string& t : messages_[layer].gather) exchange(t, false);
}

void Runner::run_layer(int inference, int layer) {
  const Strategy s = plan_.layers[layer].sharding;
  // Inputs from other groups arrive at the leader.
  if (member_ == 0) {
    for (const std::string& t : messages_[layer].receive) {
      if (!env_[inference][0].count(t)) receive(inference, t, layer);
    }
  }
  if (sharded_.count(layer)) {
    run_sharded(inference, layer);
  } else if (members_ > 1 && s == Strategy::Batch) {
    run_batch(inference, layer);
  } else if (member_ == 0) {
    const Stamp start = compute_stamp(layer);
    for (int b = 0; b < settings_.batch; ++b) run_whole(inference, b, layer);
    event(layer, inference, "compute",
          s == Strategy::None || members_ == 1 ? "none"
                                               : fmt::format("none (planned {})", strategy_name(s)),
          start);
  }
  if (member_ == 0) send_exports(inference, layer);
}

// One round: `stream` inferences from a synchronised start; on the last round rank 0
// keeps the graph outputs (every round receives them, so no message is left over).
void Runner::run_round(DistributedRun& result, bool keep_outputs) {
  env_.assign(settings_.stream,
              std::vector<std::unordered_map<std::string, Tensor>>(settings_.batch));
  rows_.assign(settings_.stream,
               std::vector<std::unordered_map<std::string, Tensor>>(settings_.batch));
  // A waiting rank sleeps (MPI_Barrier would spin, taking a core where ranks share them).
  MPI_Request barrier;
  MPI_Ibarrier(active_, &barrier);
  wait(barrier, "the other ranks to start the round");
  t0_ = MPI_Wtime();
  for (int i = 0; i < settings_.stream; ++i) {
    // Receives posted before the compute, so other groups' results arrive under it.
    post_receives(i);
    for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
      if (plan_.layers[l].group != group_) continue;
      run_layer(i, l);
      for (const std::string& t : release_after_[l]) {
        for (auto& sample : env_[i]) sample.erase(t);
      }
    }
    // Free what this inference no longer needs on members (the leader keeps outputs).
    if (member_ != 0) env_[i].assign(settings_.batch, {});
    rows_[i].assign(settings_.batch, {});
  }
  if (rank_ != 0) return;
  // Graph outputs at rank 0.
  if (keep_outputs) {
    result.outputs.assign(settings_.stream, std::vector<TensorMap>(settings_.batch));
  }
  for (int i = 0; i < settings_.stream; ++i) {
    for (const std::string& o : g_.outputs) {
      auto p = lay_.producer.find(o);
      const int layer = p == lay_.producer.end() ? -1 : lay_.node_layer[p->second];
      const int from = layer < 0 ? 0 : leader_of(plan_.layers[layer].group);
      for (int b = 0; b < settings_.batch; ++b) {
        Tensor out;
        if (from == 0) {
          out = value(i, b, o);
        } else if (env_[i][b].count(o)) {
          out = env_[i][b].at(o);
        } else {
          const TensorInfo& info = g_.tensor(o);
          out = recv_tensor(info.dtype, info.shape, from, lay_.tensor_id.at(o),
                            "output '" + o + "'", i, layer);
        }
        if (keep_outputs) result.outputs[i][b][o] = std::move(out);
      }
    }
  }
}

DistributedRun Runner::run() {
  omp_set_num_threads(settings_.threads);
  // Every layer's results are fresh tensors, freed once read: without this each
  // inference faulted their pages in again.
  reuse_freed_memory();
  // Every layer this rank may run, orchestrated before the clock starts.
  for (int l = 0; l < static_cast<int>(w_.layers.size()); ++l) {
    if (plan_.layers[l].group == group_) prepare_layer(l);
  }
  plan_releases();
  plan_messages();
  // Connections within the group are made before the clock starts.
  int ready = 1, all_ready = 0;
  MPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_SUM, comm_);
  DistributedRun result;
  std::vector<TimedEvent> timed;
  // Ranks with work: rank 0 (it collects the outputs), the leader of a group with layers,
  // and members with a part in some layer: a split layer's part, or samples of a batch
  // layer (a batch smaller than the group leaves the last members without any).
  bool has_work = rank_ == 0;
  for (int l = 0; l < static_cast<int>(plan_.layers.size()); ++l) {
    if (plan_.layers[l].group != group_) continue;
    has_work = has_work || member_ == 0 || sharded_.count(l) != 0 ||
               (plan_.layers[l].sharding == Strategy::Batch && member_ < holders_);
  }
  if (MPI_Comm_split(MPI_COMM_WORLD, has_work ? 0 : 1, rank_, &active_) != MPI_SUCCESS) {
    fail("rank {}: MPI_Comm_split for the ranks with layers failed", rank_);
  }
  // Untimed rounds first: `warmup` of them, and more until they have taken `warmup_s`
  // (every round's time is the maximum over the ranks, so they all agree when to stop).
  int warm = 0, timed_rounds = 0;
  double warm_s = 0;
  while (has_work && timed_rounds < settings_.repeat) {
    const bool is_timed =
        warm >= settings_.warmup && (warm_s >= settings_.warmup_s || warm >= kMaxWarmupRounds);
    const int first_inference = timed_rounds * settings_.stream;
    run_round(result, is_timed && timed_rounds + 1 == settings_.repeat);
    // The round's messages are all matched before the next round reuses their tags.
    for (Pending& p : sends_) wait(p.request, p.what, static_cast<double>(p.buffer->nbytes()));
    sends_.clear();
    const double local_end = now();
    double seconds = 0;
    // Non-blocking, waited for with pauses: a rank that finished early would otherwise
    // busy-poll inside MPI beside the ranks still computing (on shared cores it took their
    // time and caches).
    MPI_Request done;
    MPI_Iallreduce(&local_end, &seconds, 1, MPI_DOUBLE, MPI_MAX, active_, &done);
    wait(done, "the other ranks to finish the round");
    if (!is_timed) {
      ++warm;
      warm_s += seconds;
      events_.clear();
      continue;
    }
    ++timed_rounds;
    result.round_seconds.push_back(seconds);
    for (TimedEvent& e : events_) {
      e.inference += first_inference;
      timed.push_back(std::move(e));
    }
    events_.clear();
  }
  result.warmup_rounds = warm;
  events_ = std::move(timed);
  // A rank without work waits here for the whole run, waking every 10 ms: were it to
  // keep step with the rounds, the ranks that compute would sleep between them while it
  // polls, and a rank that slept finds its caches cold (a 20 us inference ran 1.8x
  // slower). The ranks that compute bound every wait of their own, and a rank that fails
  // ends all of them.
  MPI_Request all_done;
  MPI_Ibarrier(MPI_COMM_WORLD, &all_done);
  if (has_work) {
    wait(all_done, "the ranks without work");
  } else {
    const int most_rounds = std::max(settings_.warmup, kMaxWarmupRounds) + settings_.repeat;
    wait_bounded(all_done, settings_.timeout_s * most_rounds, "the other ranks to finish", 0,
                 10e-3);
  }
  // Every rank's events to rank 0.
  nlohmann::json mine = nlohmann::json::array();
  for (const TimedEvent& e : events_) {
    mine.push_back(
        {e.rank, e.layer, e.inference, e.kind, e.how, e.start_s, e.end_s, e.bytes, e.cpu_s});
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
    const std::size_t inferences = static_cast<std::size_t>(settings_.stream) * settings_.repeat;
    result.latency_s.assign(inferences, 0);
    std::vector<double> first(inferences, 1e300), last(inferences, 0);
    for (int r = 0; r < size_; ++r) {
      for (const auto& e : nlohmann::json::parse(all.substr(offsets[r], lengths[r]))) {
        TimedEvent ev{e[0].get<int>(),         e[1].get<int>(),         e[2].get<int>(),
                      e[3].get<std::string>(), e[4].get<std::string>(), e[5].get<double>(),
                      e[6].get<double>(),      e[7].get<double>(),      e[8].get<double>()};
        // An inference starts with its first computation: a rank waiting early in a
        // transfer or collective for it (one with nothing to compute runs ahead to its
        // next wait) does not start it.
        if (ev.kind == "compute") first[ev.inference] = std::min(first[ev.inference], ev.start_s);
        last[ev.inference] = std::max(last[ev.inference], ev.end_s);
        result.events.push_back(std::move(ev));
      }
    }
    for (std::size_t i = 0; i < inferences; ++i) {
      result.latency_s[i] = first[i] <= last[i] ? last[i] - first[i] : 0;
    }
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
  if (settings.warmup < 0 || settings.repeat < 1 || settings.stream < 1) {
    fail("distributed run: --stream and --repeat must be at least 1 (got {} and {})",
         settings.stream, settings.repeat);
  }
  if (settings.batch != plan.batch) {
    fail("{}: the plan was made for batch {}, the run has batch {}", plan.path, plan.batch,
         settings.batch);
  }
}

}  // namespace orchid::distributed
