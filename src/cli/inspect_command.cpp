// `orchid inspect MODEL`: what the model is, as orchid sees it after import.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/format.hpp"
#include "cli/report_files.hpp"
#include "ir/graph_stats.hpp"
#include "passes/load_model.hpp"
#include "passes/model_summary.hpp"

namespace orchid::cli {

namespace {

struct InspectOptions {
  ModelOptions model;
  bool print_graph = false;
  std::string json;  // model_summary() as JSON ("-": stdout, no text)
};

std::string type_of(const Graph& g, const std::string& name) {
  const TensorInfo& info = g.tensor(name);
  if (info.dynamic) return "dynamic (sized by tensor values at run time)";
  return fmt::format("{} {}", dtype_name(info.dtype), shape_to_string(info.shape));
}

void inspect(const InspectOptions& options) {
  const LoadedModel loaded = load_model(options.model.model, options.model.import_options());
  const Graph& g = loaded.graph;
  if (!options.json.empty()) {
    if (is_stdout(options.json) && options.print_graph) {
      fail("--print-graph prints text; it does not combine with --json -");
    }
    write_report_files({{options.json, model_summary(loaded, options.model.model).dump(2) + "\n"}});
    if (is_stdout(options.json)) return;
  }
  const GraphStats stats = compute_graph_stats(g);

  fmt::print("model       {}\n", options.model.model);
  auto meta = [&](const char* key) {
    auto it = g.metadata.find(key);
    return it == g.metadata.end() ? std::string("?") : it->second;
  };
  fmt::print("producer    {}   source opset {}\n", meta("onnx.producer"), meta("onnx.opset"));
  if (g.metadata.count("orchid.weights")) {
    fmt::print("weights     stripped in the file, regenerated deterministically\n");
  }
  for (const auto& in : g.inputs) {
    auto declared = g.metadata.find(declared_shape_key(in));  // symbolic dim names
    fmt::print("input       {}  {}{}\n", in, type_of(g, in),
               declared == g.metadata.end() ? "" : "  (declared " + declared->second + ")");
  }
  for (const auto& out : g.outputs) fmt::print("output      {}  {}\n", out, type_of(g, out));
  fmt::print("nodes       {} (imported {}, {} folded to constants, {} dead)\n", stats.nodes,
             loaded.stats.nodes_before, loaded.stats.folded_nodes, loaded.stats.dead_nodes);
  fmt::print(
      "rewrites    {} affine op(s) folded into linear weights, {} 1x1 convolution(s) moved "
      "before upsampling, {} token/image transpose(s) turned around\n",
      loaded.affine.folded_nodes, loaded.resize_commute.convolutions,
      loaded.token_transposes.rewritten);
  if (loaded.stats.inlined_branches > 0) {
    fmt::print("branches    {} If node(s) with a constant condition replaced by their branch\n",
               loaded.stats.inlined_branches);
  }
  if (const Node* first = g.first_dynamic_node()) {
    fmt::print(
        "dynamic     {} node(s) have data-dependent output shapes, first {}; FLOPs below "
        "count the static part; only the reference interpreter runs this model\n",
        loaded.stats.dynamic_nodes, first->describe());
  }
  fmt::print("tensors     {}\n", stats.tensors);
  fmt::print("parameters  {} ({})\n", human_count(static_cast<double>(stats.parameters)),
             human_bytes(static_cast<double>(stats.parameter_bytes)));
  fmt::print("FLOPs       {} (multiply-add = 2)\n", human_count(static_cast<double>(stats.flops)));
  std::vector<std::pair<std::string, std::size_t>> ops(stats.op_histogram.begin(),
                                                       stats.op_histogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  fmt::print("op histogram\n");
  for (const auto& [op, count] : ops) fmt::print("  {:<24} {:>6}\n", op, count);
  if (options.print_graph) fmt::print("\n{}", g.to_string());
  if (!options.json.empty()) fmt::print("wrote       {}\n", options.json);
}

}  // namespace

Action add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Print a model's inputs, outputs, op histogram, parameters and FLOPs");
  add_model_options(*cmd, options->model);
  cmd->add_flag("--print-graph", options->print_graph, "Also print every node");
  cmd->add_option("--json", options->json,
                  "Write the same facts as JSON to FILE; '-' prints only the JSON to stdout");
  return [options] { inspect(*options); };
}

}  // namespace orchid::cli
