#include "passes/static_graph.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "eval/reference_interpreter.hpp"
#include "ir/op_registry.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

// Ops whose result depends only on input shapes, not values.
bool depends_only_on_shapes(const Node& node) {
  return node.op_type == "Shape" || node.op_type == "Size";
}

bool all_inputs_constant(const Graph& graph, const Node& node) {
  for (const auto& in : node.inputs) {
    if (!in.empty() && !graph.is_constant(in)) return false;
  }
  return true;
}

bool can_fold(const Graph& graph, const Node& node, const StaticGraphOptions& options,
              LargeFolds& large) {
  if (node.outputs.empty()) return false;
  if (depends_only_on_shapes(node)) return true;
  // A DequantizeLinear of a constant (a QDQ model's weights) stays, so fission sees the
  // int8 weights and their scales of a quantized Conv/MatMul (fission/qdq_linear.hpp);
  // fission folds it itself where the op stays in float.
  if (node.op_type == "DequantizeLinear") return false;
  if (!all_inputs_constant(graph, node)) return false;
  std::int64_t elements = 0, bytes = 0;
  for (const auto& out : node.outputs) {
    if (out.empty() || graph.is_dynamic(out)) continue;
    const TensorInfo& info = graph.tensor(out);
    elements += shape_numel(info.shape);
    bytes += shape_numel(info.shape) * static_cast<std::int64_t>(dtype_size(info.dtype));
  }
  if (elements <= options.max_folded_elements) return true;
  std::int64_t largest_input = 0;
  for (const auto& in : node.inputs) {
    if (!in.empty()) largest_input = std::max(largest_input, graph.tensor(in).data->numel());
  }
  return large.admit(elements, bytes, largest_input);
}

bool reads_dynamic(const Graph& graph, const Node& node) {
  return std::any_of(node.inputs.begin(), node.inputs.end(),
                     [&](const std::string& in) { return !in.empty() && graph.is_dynamic(in); });
}

void mark_outputs_dynamic(Graph& graph, const Node& node) {
  for (const auto& out : node.outputs) {
    if (!out.empty()) graph.set_dynamic(out);
  }
}

std::vector<Tensor> fold_shape_query(const Graph& graph, const Node& node) {
  // Shapes are static, so Shape/Size are known without the input's values.
  const Shape& shape = graph.tensor(node.inputs[0]).shape;
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (node.op_type == "Size") return {Tensor::from_vector<std::int64_t>({}, {shape_numel(shape)})};
  std::int64_t start = node.attr_int("start", 0);
  std::int64_t end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, 0, rank);
  std::vector<std::int64_t> dims;
  for (std::int64_t d = start; d < end; ++d) dims.push_back(shape[static_cast<std::size_t>(d)]);
  return {Tensor::from_int64s(dims)};
}

// The nodes that replace an If whose condition is a constant: the chosen branch's nodes
// (branch-local names that clash with the outer graph get the If's name as a prefix),
// its constants copied out, and one Identity per If output.
std::vector<Node> inline_branch(Graph& graph, const Node& node, const Graph& branch) {
  std::unordered_map<std::string, std::string> rename;
  for (std::size_t k = 0; k < branch.inputs.size(); ++k) {
    rename[branch.inputs[k]] = node.inputs[k + 1];
  }
  auto local_name = [&](const std::string& name) {
    auto [it, inserted] = rename.try_emplace(name, name);
    if (inserted) {
      std::string fresh = name;
      for (int k = 1; graph.has_tensor(fresh); ++k)
        fresh = fmt::format("{}/{}#{}", node.name, name, k);
      it->second = fresh;
    }
    return it->second;
  };
  for (const auto& [name, info] : branch.tensors()) {
    if (info.is_constant() && !rename.count(name)) {
      TensorInfo& copy = graph.set_type(local_name(name), info.dtype, info.shape);
      copy.data = info.data;
    }
  }
  std::vector<Node> nodes;
  for (const Node& inner : branch.nodes) {
    Node n = inner;
    n.name = node.name + "/" + inner.name;
    for (auto& in : n.inputs) {
      if (!in.empty()) in = local_name(in);
    }
    for (auto& out : n.outputs) {
      if (!out.empty()) {
        out = local_name(out);
        graph.add_tensor(out);
      }
    }
    nodes.push_back(std::move(n));
  }
  for (std::size_t j = 0; j < node.outputs.size(); ++j) {
    if (node.outputs[j].empty()) continue;
    Node copy;
    copy.name = fmt::format("{}/output_{}", node.name, j);
    copy.op_type = "Identity";
    copy.inputs = {local_name(branch.outputs[j])};
    copy.outputs = {node.outputs[j]};
    nodes.push_back(std::move(copy));
  }
  return nodes;
}

// Control flow decided at run time. Subgraph inputs [0, state) are per-run state (a
// Loop body's iteration number, condition and carried values; none for If branches),
// typed per run; the rest mirror node.inputs from `state` on (If: from 1, after cond):
// the outer values the subgraph reads. Outer constants become subgraph constants, each
// subgraph is made static against the outer types, and for If the outputs are static
// where both branches agree on dtype and shape.
void prepare_subgraphs(Graph& graph, Node& node, std::size_t state, std::size_t first_outer,
                       const StaticGraphOptions& options, StaticGraphStats& stats) {
  if (node.inputs.size() < first_outer) {
    fail("{}: has {} inputs, expected at least {}", node.describe(), node.inputs.size(),
         first_outer);
  }
  std::vector<std::string> outer(node.inputs.begin() + static_cast<std::ptrdiff_t>(first_outer),
                                 node.inputs.end());
  std::vector<std::size_t> kept_positions;
  for (std::size_t k = 0; k < outer.size(); ++k) {
    if (!graph.is_constant(outer[k])) kept_positions.push_back(k);
  }
  for (auto& [key, sub] : node.subgraphs) {
    const std::vector<std::string> inner = sub->inputs;
    if (inner.size() != state + outer.size()) {
      fail("{}: {} lists {} inputs, expected {} + {} outer values", node.describe(), key,
           inner.size(), state, outer.size());
    }
    sub->inputs.assign(inner.begin(), inner.begin() + static_cast<std::ptrdiff_t>(state));
    for (std::size_t k = 0; k < state; ++k) sub->set_dynamic(inner[k]);
    for (std::size_t k = 0; k < outer.size(); ++k) {
      const std::string& name = inner[state + k];
      const TensorInfo& info = graph.tensor(outer[k]);
      if (info.is_constant()) {
        TensorInfo& copy = sub->set_type(name, info.dtype, info.shape);
        copy.data = info.data;
        continue;
      }
      sub->inputs.push_back(name);
      if (info.dynamic) {
        sub->set_dynamic(name);
      } else if (info.has_type) {
        sub->set_type(name, info.dtype, info.shape);
      } else {
        fail("{}: outer value '{}' has no type", node.describe(), outer[k]);
      }
    }
    try {
      stats.inlined_branches += make_static(*sub, options).inlined_branches;
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(fmt::format("{}, {}: {}", node.describe(), key, e.what()));
    } catch (const Error& e) {
      throw Error(fmt::format("{}, {}: {}", node.describe(), key, e.what()));
    }
  }
  std::vector<std::string> inputs(node.inputs.begin(),
                                  node.inputs.begin() + static_cast<std::ptrdiff_t>(first_outer));
  for (std::size_t k : kept_positions) inputs.push_back(outer[k]);
  node.inputs = std::move(inputs);

  for (std::size_t j = 0; j < node.outputs.size(); ++j) {
    if (node.outputs[j].empty()) continue;
    graph.set_dynamic(node.outputs[j]);
    if (node.op_type != "If") continue;  // a Loop's results depend on its trip count
    const Graph& then_branch = *node.subgraphs.at("then_branch");
    const Graph& else_branch = *node.subgraphs.at("else_branch");
    const TensorInfo& a = then_branch.tensor(then_branch.outputs[j]);
    const TensorInfo& b = else_branch.tensor(else_branch.outputs[j]);
    if (a.has_type && b.has_type && a.dtype == b.dtype && a.shape == b.shape) {
      graph.set_type(node.outputs[j], a.dtype, a.shape);
    }
  }
}

}  // namespace

LargeFolds::LargeFolds(const Graph& graph) {
  for (const auto& w : graph.weights()) {
    allowance_ += static_cast<std::int64_t>(graph.tensor(w).data->nbytes());
  }
}

bool LargeFolds::admit(std::int64_t elements, std::int64_t bytes, std::int64_t largest_input) {
  if (elements > largest_input || bytes > allowance_) return false;
  allowance_ -= bytes;
  return true;
}

StaticGraphStats make_static(Graph& graph, const StaticGraphOptions& options) {
  StaticGraphStats stats;
  stats.nodes_before = graph.nodes.size();
  graph.sort_topologically();

  LargeFolds large(graph);
  std::deque<Node> work(std::make_move_iterator(graph.nodes.begin()),
                        std::make_move_iterator(graph.nodes.end()));
  graph.nodes.clear();
  std::vector<Node> kept;
  while (!work.empty()) {
    Node node = std::move(work.front());
    work.pop_front();
    if (node.op_type == "If") {
      // The node's own contract (cond a bool scalar, branch arity); a cond computed from
      // data has no type yet and is checked when it runs.
      if (!graph.is_dynamic(node.inputs.at(0))) infer_node_types(graph, node);
      const Tensor* cond = graph.tensor(node.inputs[0]).data.get();
      if (cond) {
        const char* key = cond->get_as_double(0) != 0.0 ? "then_branch" : "else_branch";
        std::vector<Node> branch = inline_branch(graph, node, *node.subgraphs.at(key));
        work.insert(work.begin(), std::make_move_iterator(branch.begin()),
                    std::make_move_iterator(branch.end()));
        ++stats.inlined_branches;
        continue;
      }
      prepare_subgraphs(graph, node, 0, 1, options, stats);
      kept.push_back(std::move(node));
      continue;
    }
    if (node.op_type == "Loop") {
      // State: iteration number, condition, carried values (node inputs 2..).
      const std::size_t state = loop_state_inputs(node);
      prepare_subgraphs(graph, node, state, state, options, stats);
      kept.push_back(std::move(node));
      continue;
    }
    if (reads_dynamic(graph, node)) {
      mark_outputs_dynamic(graph, node);
      kept.push_back(std::move(node));
      continue;
    }
    try {
      infer_node_types(graph, node);
    } catch (const NotConstantError&) {
      // A shape input computed at run time: sized per run by the interpreter.
      mark_outputs_dynamic(graph, node);
      kept.push_back(std::move(node));
      continue;
    }
    if (!can_fold(graph, node, options, large)) {
      kept.push_back(std::move(node));
      continue;
    }
    std::vector<Tensor> results;
    if (depends_only_on_shapes(node)) {
      results = fold_shape_query(graph, node);
    } else {
      std::vector<const Tensor*> inputs;
      for (const auto& in : node.inputs) {
        inputs.push_back(in.empty() ? nullptr : graph.tensor(in).data.get());
      }
      results = run_reference_node(graph, node, inputs);
    }
    for (std::size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      graph.set_constant(node.outputs[k], std::move(results[k]));
    }
    ++stats.folded_nodes;
  }

  graph.nodes = std::move(kept);
  const std::size_t before_dce = graph.nodes.size();
  graph.remove_dead_nodes();
  stats.dead_nodes = before_dce - graph.nodes.size();
  stats.nodes_after = graph.nodes.size();
  stats.dynamic_nodes = static_cast<std::size_t>(
      std::count_if(graph.nodes.begin(), graph.nodes.end(),
                    [&](const Node& node) { return graph.is_dynamic_node(node); }));
  graph.validate();
  return stats;
}

}  // namespace orchid
