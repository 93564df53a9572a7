#include "ir/graph.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/topological_sort.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace orchid {

TensorInfo& Graph::tensor(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail("graph '{}' has no tensor '{}'", this->name, name);
  return it->second;
}

const TensorInfo& Graph::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail("graph '{}' has no tensor '{}'", this->name, name);
  return it->second;
}

TensorInfo& Graph::add_tensor(const std::string& name) {
  auto [it, inserted] = tensors_.try_emplace(name);
  if (inserted) it->second.name = name;
  return it->second;
}

std::string Graph::fresh_tensor_name(const std::string& base) const {
  std::string name = base;
  for (int i = 1; has_tensor(name); ++i) name = fmt::format("{}_{}", base, i);
  return name;
}

TensorInfo& Graph::set_type(const std::string& name, DType dtype, Shape shape) {
  // Every inferred or declared shape passes here: sizes that overflow or exceed the
  // memory budget stop at the tensor that has them, before anything is allocated.
  const std::string what = fmt::format("tensor '{}'", name);
  check_memory_budget(checked_nbytes(shape, dtype_size(dtype), what),
                      fmt::format("{} ({} {})", what, dtype_name(dtype), shape_to_string(shape)));
  TensorInfo& info = add_tensor(name);
  info.dtype = dtype;
  info.shape = std::move(shape);
  info.has_type = true;
  info.dynamic = false;
  return info;
}

bool Graph::release_constant(const std::string& name, const Tensor* expected) {
  auto it = tensors_.find(name);
  if (it == tensors_.end() || !expected || it->second.data.get() != expected) return false;
  TensorInfo& info = it->second;
  info.data = std::make_shared<const Tensor>(Tensor::view(info.dtype, info.shape, nullptr));
  return true;
}

void Graph::release_constants() {
  for (const auto& w : weights()) release_constant(w, tensor(w).data.get());
}

TensorInfo& Graph::set_constant(const std::string& name, Tensor value) {
  TensorInfo& info = set_type(name, value.dtype(), value.shape());
  info.data = std::make_shared<const Tensor>(std::move(value));
  return info;
}

TensorInfo& Graph::set_dynamic(const std::string& name) {
  TensorInfo& info = add_tensor(name);
  info.has_type = false;
  info.dynamic = true;
  info.shape.clear();
  info.data.reset();
  return info;
}

bool Graph::is_dynamic(const std::string& name) const {
  auto it = tensors_.find(name);
  return it != tensors_.end() && it->second.dynamic;
}

bool Graph::is_dynamic_node(const Node& node) const {
  if (!node.subgraphs.empty()) return true;
  return std::any_of(node.outputs.begin(), node.outputs.end(),
                     [&](const std::string& out) { return !out.empty() && is_dynamic(out); });
}

const Node* Graph::first_dynamic_node() const {
  for (const Node& node : nodes) {
    if (is_dynamic_node(node)) return &node;
  }
  return nullptr;
}

void Graph::require_static_shapes(const std::string& what) const {
  const Node* node = first_dynamic_node();
  if (!node) return;
  const auto count =
      std::count_if(nodes.begin(), nodes.end(), [&](const Node& n) { return is_dynamic_node(n); });
  unsupported(
      "{} needs static shapes, but graph '{}' has {} node(s) whose output shapes depend on "
      "tensor values, first {}; only the reference interpreter runs such graphs",
      what, name, count, node->describe());
}

std::size_t loop_state_inputs(const Node& loop) {
  auto it = loop.subgraphs.find("body");
  if (it == loop.subgraphs.end()) fail("{} has no body", loop.describe());
  auto key = it->second->metadata.find(kLoopStateInputsKey);
  if (key == it->second->metadata.end()) fail("{}: body lacks its state count", loop.describe());
  const std::size_t state = std::stoul(key->second);
  if (state < 2 || state > it->second->inputs.size() || state > loop.inputs.size()) {
    fail("{}: body state count {} does not fit its {} inputs", loop.describe(), state,
         it->second->inputs.size());
  }
  return state;
}

bool Graph::is_constant(const std::string& name) const {
  auto it = tensors_.find(name);
  return it != tensors_.end() && it->second.is_constant();
}

std::vector<std::string> Graph::weights() const {
  std::set<std::string> used;
  for (const Node& node : nodes) {
    for (const auto& in : node.inputs) {
      if (!in.empty() && is_constant(in)) used.insert(in);
    }
  }
  for (const auto& out : outputs) {
    if (is_constant(out)) used.insert(out);
  }
  return {used.begin(), used.end()};
}

std::unordered_map<std::string, std::size_t> Graph::producers() const {
  std::unordered_map<std::string, std::size_t> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& t : nodes[i].outputs) {
      if (!t.empty()) out.emplace(t, i);
    }
  }
  return out;
}

std::unordered_map<std::string, std::vector<std::size_t>> Graph::consumers() const {
  std::unordered_map<std::string, std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& t : nodes[i].inputs) {
      if (!t.empty()) {
        auto& list = out[t];
        if (list.empty() || list.back() != i) list.push_back(i);
      }
    }
  }
  return out;
}

std::vector<std::size_t> Graph::topological_order() const {
  const auto producer = producers();
  std::vector<std::vector<std::size_t>> successors(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::unordered_set<std::size_t> seen;
    for (const auto& t : nodes[i].inputs) {
      if (t.empty()) continue;
      auto it = producer.find(t);
      if (it == producer.end() || !seen.insert(it->second).second) continue;
      successors[it->second].push_back(i);
    }
  }
  std::vector<std::size_t> order = stable_topological_order(successors);
  if (order.size() != nodes.size()) {
    std::vector<bool> placed(nodes.size(), false);
    for (std::size_t i : order) placed[i] = true;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!placed[i]) fail("graph '{}' has a cycle through {}", name, nodes[i].describe());
    }
  }
  return order;
}

void Graph::sort_topologically() {
  const auto order = topological_order();
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (std::size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

void Graph::remove_dead_nodes() {
  const auto producer = producers();
  std::vector<bool> live(nodes.size(), false);
  std::vector<std::string> stack(outputs.begin(), outputs.end());
  std::unordered_set<std::string> seen;
  while (!stack.empty()) {
    const std::string t = stack.back();
    stack.pop_back();
    if (t.empty() || !seen.insert(t).second) continue;
    auto it = producer.find(t);
    if (it == producer.end() || live[it->second]) continue;
    live[it->second] = true;
    for (const auto& in : nodes[it->second].inputs) stack.push_back(in);
  }
  std::vector<Node> kept;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (live[i]) kept.push_back(std::move(nodes[i]));
  }
  nodes = std::move(kept);
  std::unordered_set<std::string> used(inputs.begin(), inputs.end());
  used.insert(outputs.begin(), outputs.end());
  for (const Node& node : nodes) {
    used.insert(node.inputs.begin(), node.inputs.end());
    used.insert(node.outputs.begin(), node.outputs.end());
  }
  for (auto it = tensors_.begin(); it != tensors_.end();) {
    it = used.count(it->first) ? std::next(it) : tensors_.erase(it);
  }
}

void Graph::validate() const {
  std::unordered_set<std::string> node_names;
  std::unordered_set<std::string> produced;
  std::unordered_set<std::string> graph_inputs(inputs.begin(), inputs.end());
  if (graph_inputs.size() != inputs.size()) fail("graph '{}' lists an input twice", name);
  for (const auto& in : inputs) {
    if (!has_tensor(in)) fail("graph '{}': input '{}' has no tensor entry", name, in);
    if (is_constant(in)) fail("graph '{}': input '{}' is also a constant", name, in);
  }
  for (const Node& node : nodes) {
    if (!node.name.empty() && !node_names.insert(node.name).second) {
      fail("graph '{}' has two nodes named '{}'", name, node.name);
    }
    for (const auto& out : node.outputs) {
      if (out.empty()) continue;
      if (!produced.insert(out).second) {
        fail("graph '{}': tensor '{}' is produced twice (second time by {})", name, out,
             node.describe());
      }
      if (graph_inputs.count(out) || is_constant(out)) {
        fail("graph '{}': {} writes '{}', which is a graph input or constant", name,
             node.describe(), out);
      }
    }
  }
  for (const Node& node : nodes) {
    for (const auto& in : node.inputs) {
      if (in.empty()) continue;
      if (!produced.count(in) && !graph_inputs.count(in) && !is_constant(in)) {
        fail(
            "graph '{}': {} reads '{}', which no node produces and is neither an input nor a "
            "weight",
            name, node.describe(), in);
      }
    }
  }
  for (const auto& out : outputs) {
    if (!produced.count(out) && !graph_inputs.count(out) && !is_constant(out)) {
      fail("graph '{}': output '{}' is never produced", name, out);
    }
  }
  for (const auto& [tensor_name, info] : tensors_) {
    if (info.data && (info.data->shape() != info.shape || info.data->dtype() != info.dtype)) {
      fail("graph '{}': constant '{}' holds {} {} but is declared {} {}", name, tensor_name,
           dtype_name(info.data->dtype()), shape_to_string(info.data->shape()),
           dtype_name(info.dtype), shape_to_string(info.shape));
    }
  }
  (void)topological_order();  // throws on a cycle
  for (const Node& node : nodes) {
    for (const auto& [key, subgraph] : node.subgraphs) {
      const std::size_t expected = node.outputs.size() + (node.op_type == "Loop" ? 1 : 0);
      if (subgraph->outputs.size() != expected) {
        fail("graph '{}': {} expects {} outputs from its {}, which has {}", name, node.describe(),
             expected, key, subgraph->outputs.size());
      }
      subgraph->validate();
    }
  }
}

namespace {

std::string type_string(const Graph& g, const std::string& t) {
  if (t.empty()) return "<none>";
  if (!g.has_tensor(t)) return t + ":?";
  const TensorInfo& info = g.tensor(t);
  if (info.dynamic) return t + ":dynamic";
  if (!info.has_type) return t + ":?";
  return fmt::format("{}:{}[{}]{}", t, dtype_name(info.dtype), shape_to_string(info.shape),
                     info.is_constant() ? "=const" : "");
}

}  // namespace

std::string Graph::to_string() const {
  std::string out = fmt::format("graph '{}' (opset {}, {} nodes)\n", name, opset, nodes.size());
  for (const auto& in : inputs) out += fmt::format("  input  {}\n", type_string(*this, in));
  for (const auto& out_name : outputs) {
    out += fmt::format("  output {}\n", type_string(*this, out_name));
  }
  for (const Node& node : nodes) {
    out += fmt::format("  {} = {}(", fmt::join(node.outputs, ", "), node.op_type);
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      out += (i ? ", " : "") + type_string(*this, node.inputs[i]);
    }
    out += ")";
    for (const auto& [key, value] : node.attributes) {
      out += fmt::format(" {}={}", key, attribute_to_string(value));
    }
    out += fmt::format("  # {}\n", node.name);
    for (const auto& [key, subgraph] : node.subgraphs) {
      // Indented one level so nested branches read as blocks.
      const std::string body = subgraph->to_string();
      std::string indented = "    ";
      for (std::size_t i = 0; i < body.size(); ++i) {
        indented += body[i];
        if (body[i] == '\n' && i + 1 < body.size()) indented += "    ";
      }
      out += fmt::format("    {}:\n{}", key, indented);
    }
  }
  return out;
}

}  // namespace orchid
