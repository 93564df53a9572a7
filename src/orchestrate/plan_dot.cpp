// The plan as a Graphviz picture that answers "which kernels, doing what, at what cost":
// one cluster per kernel (its ops, predicted µs, the ONNX nodes it comes from), its
// primitives inside, edges where data flows. Long chains are collapsed so a BERT-base
// plan stays readable: a run of primitives inside a kernel becomes one box listing them,
// a block of kernels repeated three or more times in a row (a transformer's layers) is
// drawn once with the repeats as one summary box, and a run of kernels each feeding only
// the next becomes one summary box.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "orchestrate/plan_export.hpp"

namespace orchid {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// "MatMul, Add x2, Erf": ops in first-seen order with counts.
std::string op_summary(const std::vector<std::string>& ops, std::size_t most = 6) {
  std::vector<std::pair<std::string, int>> counts;
  for (const std::string& op : ops) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == op; });
    if (it == counts.end())
      counts.emplace_back(op, 1);
    else
      ++it->second;
  }
  std::string out;
  for (std::size_t i = 0; i < counts.size() && i < most; ++i) {
    out += (i ? ", " : "") + counts[i].first +
           (counts[i].second > 1 ? fmt::format(" x{}", counts[i].second) : "");
  }
  if (counts.size() > most) out += fmt::format(", +{} more", counts.size() - most);
  return out;
}

// The ONNX nodes a set of primitives came from: the first, shortened, and how many others.
std::string origin_summary(const std::vector<std::string>& origins) {
  std::vector<std::string> distinct;
  for (const std::string& o : origins) {
    if (!o.empty() && std::find(distinct.begin(), distinct.end(), o) == distinct.end())
      distinct.push_back(o);
  }
  if (distinct.empty()) return "";
  std::string first = distinct.front();
  constexpr std::size_t kMax = 56;
  if (first.size() > kMax) first = "..." + first.substr(first.size() - kMax + 3);
  return distinct.size() == 1 ? first : fmt::format("{} (+{} more)", first, distinct.size() - 1);
}

// The ONNX nodes a collapsed box covers: the first and the last, and how many.
std::string origin_span(const std::vector<std::string>& origins) {
  std::vector<std::string> distinct;
  for (const std::string& o : origins) {
    if (!o.empty() && std::find(distinct.begin(), distinct.end(), o) == distinct.end())
      distinct.push_back(o);
  }
  if (distinct.size() < 2) return origin_summary(distinct);
  return fmt::format("{} ONNX nodes: {} ... {}", distinct.size(),
                     origin_summary({distinct.front()}), origin_summary({distinct.back()}));
}

// Light, clearly different fills for neighbouring kernels (golden-angle hues).
std::string fill(std::size_t k) {
  return fmt::format("{:.3f} 0.22 0.98", std::fmod(static_cast<double>(k) * 0.618034, 1.0));
}

}  // namespace

std::string plan_to_dot(const Orchestration& o, const Plan& plan, std::size_t collapse_at) {
  const Graph& g = o.fission.graph;
  const std::size_t kernels = plan.kernels.size();
  const std::size_t min_chain = std::max<std::size_t>(2, collapse_at);
  auto origin_of = [&](std::size_t prim) {
    auto it = o.fission.origin.find(g.nodes[prim].name);
    return it == o.fission.origin.end() ? std::string() : it->second;
  };

  // Which kernel writes each materialised tensor, and which primitive of it produces it.
  std::map<std::string, std::pair<std::size_t, std::size_t>> written_by;  // -> (kernel, prim)
  for (std::size_t k = 0; k < kernels; ++k) {
    for (std::size_t v : plan.kernels[k].nodes) {
      for (const std::string& t : g.nodes[v].outputs) {
        const auto& outs = plan.kernels[k].outputs;
        if (std::find(outs.begin(), outs.end(), t) != outs.end())
          written_by.emplace(t, std::pair{k, v});
      }
    }
  }
  // Per kernel: the tensor each input name is read from (an alternative may stand in).
  auto source_of = [&](std::size_t k, const std::string& t) {
    const PlannedKernel& pk = plan.kernels[k];
    for (std::size_t i = 0; i < pk.inputs.size() && i < pk.sources.size(); ++i) {
      if (pk.inputs[i] == t) return pk.sources[i];
    }
    return t;
  };

  // Kernel-level edges, to find runs of kernels where each is the only reader of the one
  // before and reads only it.
  std::vector<std::set<std::size_t>> kpred(kernels), ksucc(kernels);
  for (std::size_t k = 0; k < kernels; ++k) {
    for (std::size_t i = 0; i < plan.kernels[k].inputs.size(); ++i) {
      const std::string src = source_of(k, plan.kernels[k].inputs[i]);
      auto w = written_by.find(src);
      if (w != written_by.end() && w->second.first != k) {
        kpred[k].insert(w->second.first);
        ksucc[w->second.first].insert(k);
      }
    }
  }
  // Collapsed boxes, each a range of kernels in execution order.
  struct Box {
    std::size_t first, last;
    std::string what;  // the first label line after the range
  };
  std::vector<Box> boxes;
  std::vector<int> box_of(kernels, -1);
  auto add_box = [&](std::size_t first, std::size_t last, std::string what) {
    for (std::size_t k = first; k <= last; ++k) box_of[k] = static_cast<int>(boxes.size());
    boxes.push_back({first, last, std::move(what)});
  };
  // Repeated blocks (a transformer's layers): where the same sequence of kernels (by their
  // ops) follows itself three or more times, the first copy is drawn and the others are
  // one box. Greedy from the start, longest coverage first.
  std::vector<std::string> signature(kernels);
  for (std::size_t k = 0; k < kernels; ++k) {
    for (std::size_t v : plan.kernels[k].nodes) signature[k] += g.nodes[v].op_type + ",";
  }
  constexpr std::size_t kMaxPeriod = 64;
  for (std::size_t i = 0; i < kernels;) {
    std::size_t best_period = 0, best_repeats = 0;
    for (std::size_t period = min_chain; period <= kMaxPeriod && i + period <= kernels; ++period) {
      std::size_t repeats = 1;
      while (i + period * (repeats + 1) <= kernels &&
             std::equal(signature.begin() + static_cast<std::ptrdiff_t>(i),
                        signature.begin() + static_cast<std::ptrdiff_t>(i + period),
                        signature.begin() + static_cast<std::ptrdiff_t>(i + period * repeats))) {
        ++repeats;
      }
      if (repeats >= 3 && period * repeats > best_period * best_repeats) {
        best_period = period;
        best_repeats = repeats;
      }
    }
    if (best_repeats == 0) {
      ++i;
      continue;
    }
    add_box(i + best_period, i + best_period * best_repeats - 1,
            fmt::format("{} more copies of the {}-kernel block k{}-k{} (the same ops)",
                        best_repeats - 1, best_period, i, i + best_period - 1));
    i += best_period * best_repeats;
  }
  // Runs of kernels where each is the only reader of the one before and reads only it.
  for (std::size_t k = 0; k < kernels;) {
    std::size_t end = k;
    while (end + 1 < kernels && box_of[k] < 0 && box_of[end + 1] < 0 &&
           kpred[end + 1].size() == 1 && *kpred[end + 1].begin() == end && ksucc[end].size() == 1) {
      ++end;
    }
    if (box_of[k] < 0 && end - k + 1 >= min_chain) {
      add_box(k, end, fmt::format("{} kernels in a row", end - k + 1));
    }
    k = end + 1;
  }

  std::string out = fmt::format(
      "digraph plan {{\n"
      "  label=\"{} plan on {}: {} kernels, {:.2f} us predicted\";\n  labelloc=t;\n"
      "  rankdir=TB; newrank=true; ranksep=0.22; nodesep=0.12;\n"
      "  graph [fontname=\"Helvetica\", fontsize=11];\n"
      "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", "
      "fontsize=9, height=0.22, margin=\"0.06,0.02\"];\n"
      "  edge [arrowsize=0.5, color=\"#555555\"];\n",
      escape(plan.kind), escape(o.device), kernels, plan.total_us);

  // Node id of primitive v as drawn in kernel k (a primitive computed by two kernels is
  // drawn in both); chains and collapsed runs map many primitives to one id.
  std::map<std::pair<std::size_t, std::size_t>, std::string> node_id;
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    std::vector<std::string> ops, origins;
    double us = 0;
    std::size_t prims = 0;
    for (std::size_t k = boxes[b].first; k <= boxes[b].last; ++k) {
      us += plan.kernels[k].cost_us;
      for (std::size_t v : plan.kernels[k].nodes) {
        ops.push_back(g.nodes[v].op_type);
        origins.push_back(origin_of(v));
        ++prims;
        node_id[{k, v}] = fmt::format("box{}", b);
      }
    }
    out += fmt::format(
        "  box{} [shape=box3d, style=filled, fillcolor=\"{}\", fontsize=10, "
        "label=\"k{}-k{}: {}, {:.2f} us\\n{} primitives: {}\\n{}\"];\n",
        b, fill(boxes[b].first), boxes[b].first, boxes[b].last, escape(boxes[b].what), us, prims,
        escape(op_summary(ops)), escape(origin_span(origins)));
  }

  for (std::size_t k = 0; k < kernels; ++k) {
    if (box_of[k] >= 0) continue;
    const PlannedKernel& pk = plan.kernels[k];
    std::vector<std::string> ops, origins;
    for (std::size_t v : pk.nodes) {
      ops.push_back(g.nodes[v].op_type);
      origins.push_back(origin_of(v));
    }
    out += fmt::format(
        "  subgraph cluster_k{} {{\n    label=\"k{}  {:.2f} us  {}\\n{}\";\n"
        "    style=\"rounded,filled\"; fillcolor=\"{}\"; color=\"#888888\"; fontsize=10;\n",
        k, k, pk.cost_us, escape(op_summary(ops)), escape(origin_summary(origins)), fill(k));
    // Chains inside the kernel: a primitive whose only in-kernel input comes from a
    // primitive whose only in-kernel reader it is continues that primitive's chain.
    std::map<std::string, std::size_t> producer;  // tensor -> primitive, inside the kernel
    for (std::size_t v : pk.nodes) {
      for (const std::string& t : g.nodes[v].outputs) producer.emplace(t, v);
    }
    std::map<std::size_t, std::vector<std::size_t>> preds, succs;
    for (std::size_t v : pk.nodes) {
      for (const std::string& t : g.nodes[v].inputs) {
        auto p = producer.find(t);
        if (p != producer.end() && p->second != v) {
          preds[v].push_back(p->second);
          succs[p->second].push_back(v);
        }
      }
    }
    std::vector<std::vector<std::size_t>> chains;
    std::map<std::size_t, std::size_t> chain_of;
    for (std::size_t v : pk.nodes) {
      const auto& pv = preds[v];
      if (pv.size() == 1 && succs[pv[0]].size() == 1 && chain_of.count(pv[0]) &&
          chains[chain_of[pv[0]]].back() == pv[0]) {
        chain_of[v] = chain_of[pv[0]];
        chains[chain_of[v]].push_back(v);
      } else {
        chain_of[v] = chains.size();
        chains.push_back({v});
      }
    }
    for (std::size_t c = 0; c < chains.size(); ++c) {
      const std::vector<std::size_t>& chain = chains[c];
      std::vector<std::size_t> boxes;  // one box, or one per primitive
      if (chain.size() >= min_chain) {
        std::string label;
        for (std::size_t i = 0; i < chain.size(); ++i) {
          label += (i ? (i % 4 == 0 ? " >\\n" : " > ") : "") + escape(g.nodes[chain[i]].op_type);
        }
        const std::string id = fmt::format("k{}_c{}", k, c);
        out += fmt::format("    {} [label=\"{}\"];\n", id, label);
        for (std::size_t v : chain) node_id[{k, v}] = id;
      } else {
        for (std::size_t v : chain) {
          const std::string id = fmt::format("k{}_p{}", k, v);
          const bool linear = g.nodes[v].op_type == "MatMul" || g.nodes[v].op_type == "Conv" ||
                              g.nodes[v].op_type == "Gemm";
          out += fmt::format("    {} [label=\"{}\"{}];\n", id, escape(g.nodes[v].op_type),
                             linear ? ", penwidth=2" : "");
          node_id[{k, v}] = id;
        }
      }
    }
    out += "  }\n";
  }

  // Edges: inside a kernel between its primitives, across kernels from the primitive
  // that wrote the tensor read. One edge per pair of boxes.
  std::set<std::pair<std::string, std::string>> edges;
  for (std::size_t k = 0; k < kernels; ++k) {
    const PlannedKernel& pk = plan.kernels[k];
    std::map<std::string, std::size_t> producer;
    for (std::size_t v : pk.nodes) {
      for (const std::string& t : g.nodes[v].outputs) producer.emplace(t, v);
    }
    for (std::size_t v : pk.nodes) {
      const std::string& to = node_id[{k, v}];
      for (const std::string& t : g.nodes[v].inputs) {
        std::string from;
        if (auto p = producer.find(t); p != producer.end()) {
          from = node_id[{k, p->second}];
        } else if (auto w = written_by.find(source_of(k, t)); w != written_by.end()) {
          from = node_id[{w->second.first, w->second.second}];
        }
        if (!from.empty() && from != to) edges.emplace(from, to);
      }
    }
  }
  for (const auto& [from, to] : edges) out += fmt::format("  {} -> {};\n", from, to);
  out += "}\n";
  return out;
}

}  // namespace orchid
