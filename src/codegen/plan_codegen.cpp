#include "codegen/plan_codegen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "codegen/kernel_families.hpp"
#include "codegen/kernel_writer.hpp"
#include "codegen/vendor_linear.hpp"
#include "fission/kernel_view.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {

// Weights, scratch and inputs start on 256 bytes: the alignment cuBLASLt's kernels assume
// by default (operand_alignment tells it the truth either way).
constexpr std::int64_t kAlign = 256;

std::int64_t aligned(std::int64_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Buffers and constants shared by every kernel of the program.
struct ProgramLayout {
  const Graph& graph;
  DeviceProgram& program;
  std::unordered_map<std::string, std::int64_t> arena_offset;
  std::unordered_map<std::string, std::int64_t> input_offset;
  std::unordered_map<std::string, std::int64_t> constant_offset;

  std::int64_t add_constant(const std::string& key, std::shared_ptr<const Tensor> data) {
    if (auto it = constant_offset.find(key); it != constant_offset.end()) return it->second;
    const std::int64_t offset = program.weights_bytes;
    program.weights_bytes += aligned(static_cast<std::int64_t>(data->nbytes()));
    program.constants.push_back(DeviceConstant{key, offset, std::move(data)});
    constant_offset[key] = offset;
    return offset;
  }

  // A tensor outside the plan kernel being written: constant, graph input or arena.
  std::optional<DeviceTensor> locate_global(const std::string& t) {
    const TensorInfo& info = graph.tensor(t);
    DeviceTensor d{t, Region::Arena, 0, info.dtype, info.shape};
    if (info.is_constant()) {
      d.region = Region::Weights;
      d.offset = add_constant(t, info.data);
      return d;
    }
    if (auto it = input_offset.find(t); it != input_offset.end()) {
      d.region = Region::Inputs;
      d.offset = it->second;
      return d;
    }
    if (auto it = arena_offset.find(t); it != arena_offset.end()) {
      d.offset = it->second;
      return d;
    }
    return std::nullopt;
  }
};

std::string ops_of(const std::vector<const Node*>& nodes) {
  std::string out;
  for (const Node* n : nodes) out += (out.empty() ? "" : "+") + n->op_type;
  return out;
}

// Writes the device kernels of one plan kernel.
class KernelPlanner {
 public:
  KernelPlanner(ProgramLayout& layout, const PlannedKernel& pk, std::size_t index,
                const CodegenOptions& options)
      : layout_(layout), g_(layout.graph), pk_(pk), index_(index), options_(options) {
    for (std::size_t i = 0; i < pk.inputs.size(); ++i) source_[pk.inputs[i]] = pk.sources[i];
    for (std::size_t p = 0; p < pk.nodes.size(); ++p) {
      const Node& n = g_.nodes[pk.nodes[p]];
      nodes_.push_back(&n);
      for (const auto& o : n.outputs) {
        if (!o.empty()) {
          producer_[o] = &n;
          position_[o] = p;
        }
      }
      for (const auto& t : n.inputs) {
        if (!t.empty() && g_.tensor(t).has_type &&
            shape_numel(g_.tensor(t).shape) >= std::numeric_limits<std::int32_t>::max() / 2) {
          wide_ = true;
        }
      }
      for (const auto& t : n.outputs) {
        if (!t.empty() &&
            shape_numel(g_.tensor(t).shape) >= std::numeric_limits<std::int32_t>::max() / 2) {
          wide_ = true;
        }
      }
    }
  }

  // Kernels' text appended to `source`, launches to `launches`; returns scratch bytes.
  std::int64_t write(std::string& source, std::vector<Launch>& launches) {
    std::set<std::string> stored(pk_.outputs.begin(), pk_.outputs.end());
    for (std::size_t attempt = 0; attempt <= nodes_.size() + 1; ++attempt) {
      try {
        std::string text;
        std::vector<Launch> made;
        vendor_calls_.clear();
        const std::int64_t scratch = try_write(stored, text, made);
        source += text;
        auto& calls = layout_.program.vendor_calls;
        for (auto& l : made) {
          if (l.vendor >= 0) l.vendor += static_cast<int>(calls.size());
        }
        calls.insert(calls.end(), vendor_calls_.begin(), vendor_calls_.end());
        launches.insert(launches.end(), made.begin(), made.end());
        return scratch;
      } catch (const FusionRefused& r) {
        if (stored.count(r.tensor)) {
          unsupported("plan kernel {}: '{}' is read where it is not computed ({})", index_,
                      r.tensor, ops_of(nodes_));
        }
        stored.insert(r.tensor);
      }
    }
    unsupported("plan kernel {}: no stage arrangement found", index_);
  }

 private:
  bool produced_here(const std::string& t) const { return producer_.count(t) != 0; }
  bool is_anchor(const Node& n) const { return anchor_family(n) != Family::Map; }

  // Anchor outputs (not stored) that computing `t` inline needs.
  std::set<std::string> roots_of(const std::string& t, const std::set<std::string>& stored,
                                 std::map<std::string, std::set<std::string>>& memo) const {
    if (!produced_here(t) || stored.count(t)) return {};
    if (auto it = memo.find(t); it != memo.end()) return it->second;
    const Node& n = *producer_.at(t);
    std::set<std::string> r;
    if (is_anchor(n)) {
      r.insert(t);
    } else {
      for (const auto& in : n.inputs) {
        if (in.empty()) continue;
        auto sub = roots_of(in, stored, memo);
        r.insert(sub.begin(), sub.end());
      }
    }
    memo[t] = r;
    return r;
  }

  // Stored tensors another stage must have written before this stage runs.
  void reads_of(const std::string& t, const std::set<std::string>& stored,
                const std::set<std::string>& own, std::set<std::string>& reads,
                std::set<std::string>& seen) const {
    if (!seen.insert(t).second) return;
    if (!produced_here(t)) return;
    if (stored.count(t) && !own.count(t)) {
      reads.insert(t);
      return;
    }
    for (const auto& in : producer_.at(t)->inputs) {
      if (!in.empty()) reads_of(in, stored, own, reads, seen);
    }
  }

  struct Stage {
    StageSpec spec;
    std::set<std::string> reads;
  };

  std::set<std::string> stage_reads(const StageSpec& s, const std::set<std::string>& stored) const {
    std::set<std::string> own(s.stores.begin(), s.stores.end()), reads, seen;
    for (const Node* r : s.roots) own.insert(r->outputs[0]);
    for (const auto& t : s.stores) reads_of(t, stored, own, reads, seen);
    for (const Node* r : s.roots) {
      for (const auto& in : r->inputs) {
        if (!in.empty()) reads_of(in, stored, own, reads, seen);
      }
    }
    return reads;
  }

  // Stage order by dependencies (stable); empty when there is a cycle.
  std::vector<std::size_t> order(const std::vector<Stage>& stages) const {
    std::unordered_map<std::string, std::size_t> writer;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      for (const auto& t : stages[i].spec.stores) writer[t] = i;
    }
    std::vector<std::size_t> result;
    std::vector<int> state(stages.size(), 0);
    bool cycle = false;
    std::function<void(std::size_t)> visit = [&](std::size_t i) {
      if (state[i] == 2 || cycle) return;
      if (state[i] == 1) {
        cycle = true;
        return;
      }
      state[i] = 1;
      for (const auto& t : stages[i].reads) {
        if (auto it = writer.find(t); it != writer.end() && it->second != i) visit(it->second);
      }
      state[i] = 2;
      result.push_back(i);
    };
    for (std::size_t i = 0; i < stages.size(); ++i) visit(i);
    if (cycle) return {};
    return result;
  }

  std::vector<Stage> plan_stages(const std::set<std::string>& stored) const {
    std::map<std::string, std::set<std::string>> memo;
    // Tensors to store in node order, each with the anchors it needs.
    std::vector<std::pair<std::string, std::set<std::string>>> items;
    for (const Node* n : nodes_) {
      // An anchor computes its first output; an inline node may compute several (TopK).
      for (const std::string& t : n->outputs) {
        if (t.empty() || !stored.count(t)) continue;
        std::set<std::string> roots;
        if (is_anchor(*n)) {
          if (t != n->outputs[0]) {  // MaxPool's indices, say
            unsupported("{}: no device code for its output '{}'", n->describe(), t);
          }
          roots.insert(t);
          for (const auto& in : n->inputs) {
            if (in.empty()) continue;
            for (const auto& r : roots_of(in, stored, memo)) {
              // Only a reduction may read another (unstored) reduction of its rows.
              if (anchor_family(*n) != Family::Row) throw FusionRefused{r};
              roots.insert(r);
            }
          }
        } else {
          for (const auto& in : n->inputs) {
            if (in.empty()) continue;
            auto sub = roots_of(in, stored, memo);
            roots.insert(sub.begin(), sub.end());
          }
        }
        items.emplace_back(t, std::move(roots));
      }
    }
    // Anchors that end up in one stage: union of the root sets that share an anchor.
    std::map<std::string, std::string> parent;
    std::function<std::string(const std::string&)> find = [&](const std::string& x) {
      auto it = parent.find(x);
      if (it == parent.end() || it->second == x) return x;
      return it->second = find(it->second);
    };
    for (const auto& [t, roots] : items) {
      for (const auto& r : roots) {
        if (!parent.count(r)) parent[r] = r;
      }
      for (const auto& r : roots) parent[find(r)] = find(*roots.begin());
    }
    std::map<std::string, std::size_t> stage_of_component;
    std::vector<Stage> stages;
    for (const auto& [t, roots] : items) {
      if (roots.empty()) {
        Stage s;
        s.spec.family = Family::Map;
        s.spec.stores.push_back(t);
        stages.push_back(std::move(s));
        continue;
      }
      const std::string comp = find(*roots.begin());
      auto [it, fresh] = stage_of_component.emplace(comp, stages.size());
      if (fresh) stages.emplace_back();
      stages[it->second].spec.stores.push_back(t);
    }
    // Each anchor stage: its roots in node order, all compatible.
    for (const auto& [comp, si] : stage_of_component) {
      Stage& s = stages[si];
      std::vector<const Node*> roots;
      for (const Node* n : nodes_) {
        const std::string& t = n->outputs[0];
        if (is_anchor(*n) && parent.count(t) && find(t) == comp) roots.push_back(n);
      }
      s.spec.family = anchor_family(*roots.front());
      s.spec.roots = roots;
      if (s.spec.family != Family::Row) {
        if (roots.size() > 1) throw FusionRefused{unstored_root(roots, stored, 1)};
        const Shape& shape = g_.tensor(roots[0]->outputs[0]).shape;
        for (const auto& t : s.spec.stores) {
          if (g_.tensor(t).shape != shape) throw FusionRefused{unstored_root(roots, stored, 0)};
        }
        continue;
      }
      std::vector<bool> reduced;
      const Shape space = row_space(g_, *roots[0], &reduced);
      std::int64_t rows = 1;
      for (std::size_t d = 0; d < space.size(); ++d) rows *= reduced[d] ? 1 : space[d];
      for (std::size_t i = 1; i < roots.size(); ++i) {
        std::vector<bool> r2;
        if (anchor_family(*roots[i]) != Family::Row || row_space(g_, *roots[i], &r2) != space ||
            r2 != reduced) {
          throw FusionRefused{unstored_root(roots, stored, i)};
        }
      }
      for (const auto& t : s.spec.stores) {
        const Shape& shape = g_.tensor(t).shape;
        bool ok = shape == space;
        for (const Node* r : roots) ok = ok || shape == g_.tensor(r->outputs[0]).shape;
        if (!ok) throw FusionRefused{unstored_root(roots, stored, roots.size() - 1)};
      }
      (void)rows;
    }
    for (auto& s : stages) s.reads = stage_reads(s.spec, stored);
    // Map stages of one shape merge when the order stays acyclic.
    for (std::size_t i = 0; i < stages.size(); ++i) {
      if (stages[i].spec.family != Family::Map) continue;
      const Shape& shape = g_.tensor(stages[i].spec.stores[0]).shape;
      for (std::size_t j = i + 1; j < stages.size();) {
        if (stages[j].spec.family != Family::Map ||
            g_.tensor(stages[j].spec.stores[0]).shape != shape) {
          ++j;
          continue;
        }
        std::vector<Stage> trial = stages;
        trial[i].spec.stores.insert(trial[i].spec.stores.end(), trial[j].spec.stores.begin(),
                                    trial[j].spec.stores.end());
        trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(j));
        trial[i].reads = stage_reads(trial[i].spec, stored);
        if (!order(trial).empty()) {
          stages = std::move(trial);
        } else {
          ++j;
        }
      }
    }
    const std::vector<std::size_t> ord = order(stages);
    if (ord.empty()) {
      for (const auto& s : stages) {
        for (const Node* r : s.spec.roots) {
          if (!stored.count(r->outputs[0])) throw FusionRefused{r->outputs[0]};
        }
      }
      unsupported("plan kernel {}: its stages depend on each other in a cycle", index_);
    }
    std::vector<Stage> sorted;
    for (std::size_t i : ord) sorted.push_back(stages[i]);
    return sorted;
  }

  // A root to store instead of fusing: the one at `preferred`, or any unstored one.
  static std::string unstored_root(const std::vector<const Node*>& roots,
                                   const std::set<std::string>& stored, std::size_t preferred) {
    if (!stored.count(roots[preferred]->outputs[0])) return roots[preferred]->outputs[0];
    for (const Node* r : roots) {
      if (!stored.count(r->outputs[0])) return r->outputs[0];
    }
    unsupported("stage roots {} cannot share a kernel", roots.front()->describe());
  }

  std::int64_t try_write(const std::set<std::string>& stored, std::string& text,
                         std::vector<Launch>& launches) {
    const std::vector<Stage> stages = plan_stages(stored);
    // Scratch offsets for stored intermediates that are not in the arena.
    std::unordered_map<std::string, std::int64_t> scratch;
    std::int64_t scratch_bytes = 0;
    for (const auto& t : stored) {
      if (!produced_here(t) || layout_.arena_offset.count(t)) continue;
      scratch[t] = scratch_bytes;
      scratch_bytes += aligned(tensor_bytes(g_, t));
    }
    for (std::size_t si = 0; si < stages.size(); ++si) {
      const StageSpec& spec = stages[si].spec;
      WriterEnvironment env;
      env.graph = &g_;
      env.wide_index = wide_;
      env.vectorize = options_.vectorize;
      std::set<std::string> own(spec.stores.begin(), spec.stores.end());
      for (const auto& [t, n] : producer_) {
        if (is_anchor(*n)) continue;
        if (!stored.count(t) || own.count(t)) env.inline_producers[t] = n;
      }
      env.locate = [&](const std::string& t) -> DeviceTensor {
        const auto src = source_.find(t);
        const std::string& name = src == source_.end() ? t : src->second;
        if (auto it = scratch.find(name); it != scratch.end()) {
          const TensorInfo& info = g_.tensor(name);
          return DeviceTensor{name, Region::Scratch, it->second, info.dtype, info.shape};
        }
        if (auto d = layout_.locate_global(name)) return *d;
        if (produced_here(name)) throw FusionRefused{name};
        throw std::logic_error(fmt::format("device code: no location for '{}'", name));
      };
      env.add_table = [&](const std::string& key, std::shared_ptr<const Tensor> data) {
        return layout_.add_constant("table:" + key, std::move(data));
      };
      KernelWriter w(env);
      std::string shared;
      const std::int64_t groups = write_stage(w, spec, &shared);
      const std::string name = fmt::format("k{}_{}", index_, si);
      text += w.finish(name, shared);
      std::vector<const Node*> covered;
      for (const Node* n : nodes_) {
        if (std::any_of(n->outputs.begin(), n->outputs.end(),
                        [&](const std::string& t) { return own.count(t) != 0; })) {
          covered.push_back(n);
        }
      }
      Launch l;
      l.name = name;
      l.family = family_name(spec.family);
      l.groups = groups;
      l.plan_kernel = index_;
      l.ops = ops_of(spec.roots.empty() ? covered : spec.roots);
      l.vector_width = w.vector_width();
      if (options_.linear_backend != LinearBackend::Generated &&
          layout_.program.target == Target::Cuda &&
          (spec.family == Family::MatMul || spec.family == Family::Conv)) {
        auto producer = [&](const std::string& t) -> const Node* {
          auto it = env.inline_producers.find(t);
          return it == env.inline_producers.end() ? nullptr : it->second;
        };
        if (auto call = match_vendor_call(g_, spec, producer, env.locate, &l.vendor_refusal)) {
          l.vendor = static_cast<int>(vendor_calls_.size());
          vendor_calls_.push_back(std::make_shared<VendorCall>(*call));
        }
      }
      launches.push_back(l);
    }
    return scratch_bytes;
  }

  ProgramLayout& layout_;
  const Graph& g_;
  const PlannedKernel& pk_;
  std::size_t index_;
  const CodegenOptions& options_;
  std::vector<std::shared_ptr<const VendorCall>> vendor_calls_;  // of the current attempt
  std::vector<const Node*> nodes_;
  std::unordered_map<std::string, const Node*> producer_;
  std::unordered_map<std::string, std::size_t> position_;
  std::unordered_map<std::string, std::string> source_;
  bool wide_ = false;
};

}  // namespace

DeviceProgram generate_device_program(const Graph& g, const Plan& plan,
                                      const std::map<std::string, std::string>& alternatives,
                                      Target target, const CodegenOptions& options) {
  DeviceProgram program;
  program.target = target;
  program.linear_backend = options.linear_backend;
  program.plan_kernels = plan.kernels.size();
  program.arena_bytes = plan.arena_bytes;
  ProgramLayout layout{g, program, {}, {}, {}};
  for (const auto& s : plan.arena) layout.arena_offset[s.tensor] = s.offset;
  for (const auto& in : g.inputs) {
    const TensorInfo& info = g.tensor(in);
    layout.input_offset[in] = program.inputs_bytes;
    program.inputs.push_back(
        DeviceTensor{in, Region::Inputs, program.inputs_bytes, info.dtype, info.shape});
    program.inputs_bytes += aligned(tensor_bytes(g, in));
  }
  std::string source = prelude(target);
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    KernelPlanner planner(layout, plan.kernels[k], k, options);
    program.scratch_bytes =
        std::max(program.scratch_bytes, planner.write(source, program.launches));
  }
  for (const auto& out : g.outputs) {
    std::optional<DeviceTensor> loc = layout.locate_global(out);
    if (!loc) {
      for (const auto& [alt, main] : alternatives) {
        if (main == out && layout.arena_offset.count(alt)) loc = layout.locate_global(alt);
      }
    }
    if (!loc) fail("device code: graph output '{}' has no location in the plan", out);
    loc->name = out;
    program.outputs.push_back(*loc);
  }
  program.source = std::move(source);
  return program;
}

}  // namespace orchid::codegen
