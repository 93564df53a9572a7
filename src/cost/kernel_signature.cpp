#include "cost/kernel_signature.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "cost/layout_policy.hpp"
#include "util/error.hpp"
#include "util/random.hpp"

namespace orchid {

namespace {

constexpr const char* kFormat = "orchid-kernel-signature v2";  // v2: NHWC boundaries

// Constants whose values can change what a kernel does or how long it takes.
bool values_matter(const Tensor& t) {
  const std::int64_t n = t.numel();
  if (n <= 16) return true;
  return (t.dtype() == DType::I64 || t.dtype() == DType::I32) && n <= 64;
}

std::string tensor_values(const Tensor& t) {
  std::string out;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (i) out += ',';
    out += is_float(t.dtype()) ? fmt::format("{}", t.get_as_double(i))
                               : std::to_string(t.get_as_int64(i));
  }
  return out;
}

std::string type_of(const Graph& g, const std::string& name) {
  if (!g.has_tensor(name)) fail("kernel signature: unknown tensor '{}'", name);
  const TensorInfo& info = g.tensor(name);
  if (!info.has_type) return "untyped";
  return fmt::format("{}[{}]", dtype_name(info.dtype), shape_to_string(info.shape));
}

// An external input as the signature sees it.
std::string describe_input(const Graph& g, const std::string& name) {
  std::string out = type_of(g, name);
  const TensorInfo& info = g.tensor(name);
  if (!info.is_constant()) return fmt::format("{} runtime", out);
  out += " const";
  if (values_matter(*info.data)) out += fmt::format("{{{}}}", tensor_values(*info.data));
  return out;
}

std::string describe_attributes(const Node& node) {
  std::string out;
  for (const auto& [key, value] : node.attributes) {  // std::map: sorted by key
    out += fmt::format(" {}:{}={}", key, value.index(), attribute_to_string(value));
    if (const auto* t = std::get_if<Tensor>(&value); t && values_matter(*t)) {
      out += fmt::format("{{{}}}", tensor_values(*t));
    }
  }
  return out;
}

struct LocalNode {
  std::size_t index = 0;          // into graph.nodes
  std::vector<std::size_t> deps;  // local positions of in-kernel producers
  std::uint64_t label = 0;        // structural label (node + in-kernel ancestors)
};

}  // namespace

std::string kernel_canonical_form(const KernelView& k, const std::string& device) {
  if (!k.graph) fail("kernel signature: kernel view has no graph");
  const Graph& g = *k.graph;
  const std::size_t n = k.nodes.size();
  // tensor -> (local position of producer, output slot)
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> produced;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes.at(k.nodes[i]);
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      if (!node.outputs[o].empty()) produced[node.outputs[o]] = {i, o};
    }
  }
  std::vector<LocalNode> local(n);
  std::vector<std::vector<std::size_t>> users(n);
  for (std::size_t i = 0; i < n; ++i) {
    local[i].index = k.nodes[i];
    for (const auto& t : g.nodes[k.nodes[i]].inputs) {
      auto p = produced.find(t);
      if (p != produced.end() && p->second.first != i) local[i].deps.push_back(p->second.first);
    }
    std::sort(local[i].deps.begin(), local[i].deps.end());
    local[i].deps.erase(std::unique(local[i].deps.begin(), local[i].deps.end()),
                        local[i].deps.end());
    for (std::size_t d : local[i].deps) users[d].push_back(i);
  }

  // Label of a node once its in-kernel producers are labelled: its own description with
  // each input named by what produces it (a label) or what it is (external type).
  auto label_of = [&](std::size_t i) {
    const Node& node = g.nodes[local[i].index];
    std::string text = node.domain + "::" + node.op_type + describe_attributes(node);
    for (const auto& t : node.inputs) {
      if (t.empty()) {
        text += " -";
        continue;
      }
      auto p = produced.find(t);
      if (p != produced.end()) {
        text += fmt::format(" n{:x}.{}", local[p->second.first].label, p->second.second);
      } else {
        text += " x" + describe_input(g, t);
      }
    }
    return fnv1a64(text);
  };

  // Canonical topological order: Kahn's algorithm, ready nodes taken by (label, position).
  std::vector<std::size_t> pending(n);
  std::vector<std::pair<std::uint64_t, std::size_t>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    pending[i] = local[i].deps.size();
    if (pending[i] == 0) {
      local[i].label = label_of(i);
      ready.emplace_back(local[i].label, i);
    }
  }
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    auto best = std::min_element(ready.begin(), ready.end());
    const std::size_t i = best->second;
    ready.erase(best);
    order.push_back(i);
    for (std::size_t u : users[i]) {
      if (--pending[u] == 0) {
        local[u].label = label_of(u);
        ready.emplace_back(local[u].label, u);
      }
    }
  }
  if (order.size() != n) internal_error("kernel signature: the kernel's primitives form a cycle");
  std::vector<std::size_t> canonical_position(n);
  for (std::size_t p = 0; p < n; ++p) canonical_position[order[p]] = p;

  const std::unordered_set<std::string> written(k.outputs.begin(), k.outputs.end());
  // Boundary layouts depend on the neighbours, and change what the kernel costs.
  const std::set<std::string> nhwc = channels_last_boundaries(k);
  std::map<std::string, std::size_t> input_index;  // external tensor -> first-use index
  std::vector<std::string> input_lines;
  std::string out = fmt::format("{}\ndevice {}\n", kFormat, device);
  for (std::size_t p = 0; p < n; ++p) {
    const Node& node = g.nodes[local[order[p]].index];
    out +=
        fmt::format("node {} {}::{}{} (", p, node.domain, node.op_type, describe_attributes(node));
    for (std::size_t j = 0; j < node.inputs.size(); ++j) {
      const std::string& t = node.inputs[j];
      if (j) out += ", ";
      if (t.empty()) {
        out += "-";
        continue;
      }
      auto pr = produced.find(t);
      if (pr != produced.end()) {
        out += fmt::format("n{}.{}", canonical_position[pr->second.first], pr->second.second);
        continue;
      }
      auto [it, fresh] = input_index.emplace(t, input_index.size());
      if (fresh) input_lines.push_back(describe_input(g, t) + (nhwc.count(t) ? " nhwc" : ""));
      out += fmt::format("i{}", it->second);
    }
    out += ") ->";
    for (const auto& t : node.outputs) {
      if (t.empty()) {
        out += " -";
        continue;
      }
      out += fmt::format(" {}{}{}", type_of(g, t), written.count(t) ? " written" : "",
                         nhwc.count(t) ? " nhwc" : "");
    }
    out += "\n";
  }
  for (std::size_t i = 0; i < input_lines.size(); ++i) {
    out += fmt::format("input {} {}\n", i, input_lines[i]);
  }
  return out;
}

std::uint64_t kernel_signature(const KernelView& kernel, const std::string& device) {
  return fnv1a64(kernel_canonical_form(kernel, device));
}

std::string signature_hex(std::uint64_t signature) {
  return fmt::format("{:016x}", signature);
}

std::string kernel_summary(const KernelView& k) {
  if (!k.graph) return "";
  std::string ops;
  for (std::size_t i : k.nodes) {
    if (!ops.empty()) ops += '+';
    ops += k.graph->nodes.at(i).op_type;
  }
  std::string outs;
  for (const auto& t : k.outputs) {
    if (!outs.empty()) outs += ", ";
    outs += type_of(*k.graph, t);
  }
  return ops + " -> " + (outs.empty() ? "nothing" : outs);
}

}  // namespace orchid
