// Device specs (configs/devices/*.toml) and the analytic kernel cost model: loading and
// its errors, hand-computed costs, and the monotonicity the orchestrator relies on.
#include <gtest/gtest.h>
#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "cost/analytic_cost_model.hpp"
#include "cost/cost_model.hpp"
#include "cost/device_spec.hpp"
#include "fission/kernel_view.hpp"
#include "test_config_roots.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kDevices = {"v100", "a100", "h100", "h200", "cpu"};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `text` to a fresh file under the test temp dir and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / "orchid_cost_test";
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// The a100 file with the line starting with `key =` replaced (or removed if `line` is empty).
std::string a100_with(const std::string& key, const std::string& line) {
  std::istringstream in(
      read_text((test::source_configs().roots().front() / "devices" / "a100.toml").string()));
  std::string out, l;
  bool found = false;
  while (std::getline(in, l)) {
    if (l.rfind(key + " =", 0) == 0) {
      found = true;
      if (!line.empty()) out += line + "\n";
    } else {
      out += l + "\n";
    }
  }
  EXPECT_TRUE(found) << key;
  return out;
}

Node make_node(const std::string& name, const std::string& op, std::vector<std::string> in,
               std::vector<std::string> out) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// ---------------------------------------------------------------- device specs

TEST(CostDeviceSpec, AllFiveDevicesLoad) {
  const auto names = available_devices(test::source_configs());
  for (const auto& name : kDevices) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    const DeviceSpec d = load_device_spec(name, test::source_configs());
    EXPECT_EQ(d.name, name);
    EXPECT_EQ(d.kind, name == "cpu" ? "cpu" : "gpu");
    EXPECT_GT(d.dram_bandwidth_gbs, 0);
    EXPECT_LE(d.dram_bandwidth_gbs, d.dram_peak_bandwidth_gbs);
    EXPECT_GT(d.peak_fp32_gflops, 0);
    EXPECT_GT(d.compute_units, 0);
    EXPECT_GT(d.l2_bytes, 0);
    EXPECT_FALSE(d.curves.gemm_tiles.empty());
    EXPECT_TRUE(contains(d.source_file, name + ".toml"));
  }
}

TEST(CostDeviceSpec, DatasheetFigures) {
  const DeviceSpec v100 = load_device_spec("v100", test::source_configs());
  EXPECT_DOUBLE_EQ(v100.dram_peak_bandwidth_gbs, 900);
  EXPECT_DOUBLE_EQ(v100.peak_fp32_gflops, 15700);
  EXPECT_DOUBLE_EQ(v100.peak_tf32_gflops, 0);
  const DeviceSpec a100 = load_device_spec("a100", test::source_configs());
  EXPECT_DOUBLE_EQ(a100.dram_peak_bandwidth_gbs, 1555);
  EXPECT_DOUBLE_EQ(a100.peak_tf32_gflops, 156000);
  EXPECT_EQ(a100.compute_units, 108);
  const DeviceSpec h100 = load_device_spec("h100", test::source_configs());
  const DeviceSpec h200 = load_device_spec("h200", test::source_configs());
  EXPECT_DOUBLE_EQ(h100.dram_peak_bandwidth_gbs, 3350);
  EXPECT_DOUBLE_EQ(h200.dram_peak_bandwidth_gbs, 4800);
  EXPECT_DOUBLE_EQ(h100.peak_tf32_gflops, h200.peak_tf32_gflops);
  EXPECT_DOUBLE_EQ(h100.peak_fp32_gflops, h200.peak_fp32_gflops);
}

TEST(CostDeviceSpec, LoadsByPath) {
  const DeviceSpec d = load_device_spec(
      (test::source_configs().roots().front() / "devices" / "h100.toml").string(), ConfigRoots{});
  EXPECT_EQ(d.name, "h100");
}

TEST(CostDeviceSpec, UnknownDeviceListsAvailableOnes) {
  const std::string msg = error_of([] { load_device_spec("tpu9000", test::source_configs()); });
  EXPECT_TRUE(contains(msg, "tpu9000")) << msg;
  for (const auto& name : kDevices) EXPECT_TRUE(contains(msg, name)) << msg;
}

TEST(CostDeviceSpec, MissingFileNamesIt) {
  const std::string msg =
      error_of([] { load_device_spec("/nonexistent/x.toml", test::source_configs()); });
  EXPECT_TRUE(contains(msg, "/nonexistent/x.toml")) << msg;
}

TEST(CostDeviceSpec, MalformedTomlNamesFile) {
  const std::string path = write_temp("malformed.toml", "name = \"x\"\nkind = [unclosed\n");
  const std::string msg = error_of([&] { load_device_spec(path, test::source_configs()); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "parse")) << msg;
}

TEST(CostDeviceSpec, MissingKeyNamesFileAndKey) {
  const std::string path = write_temp("missing.toml", a100_with("dram_bandwidth_gbs", ""));
  const std::string msg = error_of([&] { load_device_spec(path, test::source_configs()); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "'dram_bandwidth_gbs'")) << msg;
  EXPECT_TRUE(contains(msg, "missing")) << msg;
}

TEST(CostDeviceSpec, MissingModelKeyNamesTableAndKey) {
  const std::string path = write_temp("missing_model.toml", a100_with("gemm_tiles", ""));
  const std::string msg = error_of([&] { load_device_spec(path, test::source_configs()); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "'model.gemm_tiles'")) << msg;
}

TEST(CostDeviceSpec, NegativeOrZeroBandwidthIsRejected) {
  for (const std::string value : {"-5", "0"}) {
    const std::string path = write_temp(
        "negative.toml", a100_with("dram_bandwidth_gbs", "dram_bandwidth_gbs = " + value));
    const std::string msg = error_of([&] { load_device_spec(path, test::source_configs()); });
    EXPECT_TRUE(contains(msg, path)) << msg;
    EXPECT_TRUE(contains(msg, "'dram_bandwidth_gbs'")) << msg;
    EXPECT_TRUE(contains(msg, "must be in [1e-09, 1e+18]")) << msg;  // a stated range
  }
}

TEST(CostDeviceSpec, WrongTypeIsRejected) {
  const std::string path =
      write_temp("wrong_type.toml", a100_with("compute_units", "compute_units = \"many\""));
  const std::string msg = error_of([&] { load_device_spec(path, test::source_configs()); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "'compute_units'")) << msg;
  EXPECT_TRUE(contains(msg, "integer")) << msg;
}

TEST(CostDeviceSpec, UnknownKeyIsRejected) {
  const std::string path =
      write_temp("typo.toml", a100_with("l2_bytes", "l2_bytes = 41943040\nl2_bites = 1"));
  const std::string msg = error_of([&] { load_device_spec(path, test::source_configs()); });
  EXPECT_TRUE(contains(msg, "'l2_bites'")) << msg;
}

TEST(CostDeviceSpec, ConfigRootsAreSearchedInOrder) {
  const fs::path root = fs::path(::testing::TempDir()) / "orchid_cost_roots";
  fs::remove_all(root);  // the a100.toml an earlier run (any checkout's) left there
  fs::create_directories(root / "devices");
  std::ofstream(root / "devices" / "mygpu.toml") << a100_with("name", "name = \"mygpu\"");
  const ConfigRoots only_mine({root});
  EXPECT_EQ(load_device_spec("mygpu", only_mine).name, "mygpu");
  EXPECT_EQ(available_devices(only_mine), std::vector<std::string>{"mygpu"});
  const std::string msg = error_of([&] { load_device_spec("a100", only_mine); });
  EXPECT_TRUE(contains(msg, "unknown device 'a100'") && contains(msg, root.string())) << msg;
  // A root given first shadows the ones after it; names are the union.
  std::ofstream(root / "devices" / "a100.toml") << a100_with("name", "name = \"shadow\"");
  const ConfigRoots both({root, test::source_configs().roots().front()});
  EXPECT_EQ(load_device_spec("a100", both).name, "shadow");
  EXPECT_EQ(load_device_spec("h100", both).name, "h100");
  const auto names = available_devices(both);
  EXPECT_TRUE(std::count(names.begin(), names.end(), "mygpu") == 1 &&
              std::count(names.begin(), names.end(), "a100") == 1);
}

// ---------------------------------------------------------------- cost model

class CostKernel : public ::testing::Test {
 protected:
  double cost(const Graph& g, std::vector<std::size_t> nodes, const std::string& device = "a100") {
    return analytic_kernel_cost(make_kernel_view(g, std::move(nodes)), spec(device)).total_us;
  }
  KernelCost breakdown(const Graph& g, std::vector<std::size_t> nodes,
                       const std::string& device = "a100") {
    return analytic_kernel_cost(make_kernel_view(g, std::move(nodes)), spec(device));
  }
  const DeviceSpec& spec(const std::string& name) {
    auto it = specs_.find(name);
    if (it == specs_.end())
      it = specs_.emplace(name, load_device_spec(name, test::source_configs())).first;
    return it->second;
  }

 private:
  std::map<std::string, DeviceSpec> specs_;
};

// c = Add(a, b), all of `shape`.
Graph add_graph(Shape shape) {
  Graph g;
  g.set_type("a", DType::F32, shape);
  g.set_type("b", DType::F32, shape);
  g.set_type("c", DType::F32, shape);
  g.inputs = {"a", "b"};
  g.nodes.push_back(make_node("add", "Add", {"a", "b"}, {"c"}));
  g.outputs = {"c"};
  return g;
}

// y = A[m,k] x B[k,n]
Graph matmul_graph(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype = DType::F32) {
  Graph g;
  g.set_type("A", dtype, {m, k});
  g.set_type("B", dtype, {k, n});
  g.set_type("y", dtype, {m, n});
  g.inputs = {"A", "B"};
  g.nodes.push_back(make_node("mm", "MatMul", {"A", "B"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

// y = ReduceSum(x, axes={axis}, keepdims=1)
Graph reduce_graph(Shape shape, std::int64_t axis) {
  Graph g;
  g.set_type("x", DType::F32, shape);
  g.set_constant("axes", Tensor::from_int64s({axis}));
  Shape out = shape;
  out[static_cast<std::size_t>(axis)] = 1;
  g.set_type("y", DType::F32, out);
  g.inputs = {"x"};
  g.nodes.push_back(make_node("sum", "ReduceSum", {"x", "axes"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

TEST_F(CostKernel, ElementwiseAddOfTwoMillionFloatTensorsOnA100) {
  const Graph g = add_graph({1'000'000});
  const DeviceSpec& d = spec("a100");
  const KernelCost c = breakdown(g, {0});
  EXPECT_DOUBLE_EQ(c.dram_bytes, 12e6);  // 2 inputs read + 1 output written
  EXPECT_FALSE(c.compute_bound());
  const double expected =
      d.launch_overhead_us + (12e6 + d.curves.mem_half_bytes) / (d.dram_bandwidth_gbs * 1e3);
  EXPECT_NEAR(c.total_us, expected, 1e-9);
  // Against the datasheet figure 12e6 B / 1555 GB/s: slower, but by no more than 25%.
  const double datasheet_us = 12e6 / 1555e9 * 1e6;
  EXPECT_GT(c.memory_us, datasheet_us);
  EXPECT_LT(c.memory_us, 1.25 * datasheet_us);
  EXPECT_NEAR(c.total_us, datasheet_us + d.launch_overhead_us, 0.25 * datasheet_us);
}

TEST_F(CostKernel, LargeMatMulIsComputeBoundNearTf32Peak) {
  const Graph g = matmul_graph(4096, 4096, 4096);
  const DeviceSpec& d = spec("a100");
  const KernelCost c = breakdown(g, {0});
  EXPECT_TRUE(c.compute_bound());
  EXPECT_DOUBLE_EQ(c.linear_flops, 2.0 * 4096.0 * 4096.0 * 4096.0);
  const double achieved_gflops = c.linear_flops / (c.compute_us * 1e3);
  // gemm_efficiency (0.75) times a wave efficiency of 512 tiles over 108 SMs (0.95),
  // times the K overhead: about 70% of the TF32 peak.
  EXPECT_GT(achieved_gflops, 0.6 * d.peak_tf32_gflops);
  EXPECT_LT(achieved_gflops, d.curves.gemm_efficiency * d.peak_tf32_gflops);
  // On V100 (no TF32) the same GEMM runs on the FP32 units.
  const KernelCost v = breakdown(g, {0}, "v100");
  EXPECT_LT(v.linear_flops / (v.compute_us * 1e3),
            load_device_spec("v100", test::source_configs()).peak_fp32_gflops);
  EXPECT_GT(v.total_us, 4 * c.total_us);
}

TEST_F(CostKernel, WaveQuantisation) {
  const DeviceSpec& d = spec("a100");
  const double peak = d.peak_tf32_gflops;
  // One full wave of 256x128 tiles on 108 SMs, then one tile more.
  const double full = linear_time_us({108, 256, 128, 4096}, d, peak);
  const double spill = linear_time_us({109, 256, 128, 4096}, d, peak);
  EXPECT_GT(spill / full, 1.3);
  // A single small GEMM cannot fill the machine: far below peak.
  const double small = linear_time_us({1, 128, 128, 4096}, d, peak);
  EXPECT_LT(2.0 * 128 * 128 * 4096 / (small * 1e3), 0.5 * peak);
}

TEST_F(CostKernel, Fp16MatMulUsesFp16TensorCores) {
  const double f32 = cost(matmul_graph(4096, 4096, 4096), {0});
  const double f16 = cost(matmul_graph(4096, 4096, 4096, DType::F16), {0});
  EXPECT_LT(f16, 0.6 * f32);
}

TEST_F(CostKernel, FusingTwoElementwiseOpsBeatsTwoKernels) {
  Graph g = add_graph({1 << 20});
  g.set_type("r", DType::F32, {1 << 20});
  g.nodes.push_back(make_node("relu", "Relu", {"c"}, {"r"}));
  g.outputs = {"r"};
  for (const auto& device : kDevices) {
    const double separate = cost(g, {0}, device) + cost(g, {1}, device);
    const double fused = cost(g, {0, 1}, device);
    EXPECT_LT(fused, separate) << device;
    // The intermediate never reaches DRAM: 3 tensors moved instead of 5.
    EXPECT_DOUBLE_EQ(breakdown(g, {0, 1}, device).dram_bytes, 3.0 * 4 * (1 << 20));
  }
}

TEST_F(CostKernel, NeverBelowLaunchOverhead) {
  const Graph tiny = add_graph({1});
  const Graph mm = matmul_graph(1, 1, 1);
  for (const auto& device : kDevices) {
    const double launch = spec(device).launch_overhead_us;
    EXPECT_GE(cost(tiny, {0}, device), launch) << device;
    EXPECT_GE(cost(mm, {0}, device), launch) << device;
    EXPECT_GE(cost(add_graph({1 << 22}), {0}, device), launch) << device;
  }
}

TEST_F(CostKernel, BiggerInputsNeverCostLess) {
  for (const auto& device : kDevices) {
    double previous = 0;
    for (std::int64_t n = 1; n <= (1 << 24); n *= 4) {
      const double c = cost(add_graph({n}), {0}, device);
      EXPECT_GE(c, previous) << device << " add n=" << n;
      previous = c;
    }
    for (const char dim : {'m', 'n', 'k'}) {
      previous = 0;
      for (std::int64_t s = 1; s <= 8192; s = s * 3 / 2 + 1) {
        const Graph g =
            matmul_graph(dim == 'm' ? s : 512, dim == 'n' ? s : 512, dim == 'k' ? s : 512);
        const double c = cost(g, {0}, device);
        EXPECT_GE(c, previous) << device << " matmul " << dim << "=" << s;
        previous = c;
      }
    }
    previous = 0;
    for (std::int64_t len = 1; len <= 65536; len *= 2) {
      const double c = cost(reduce_graph({256, len}, 1), {0}, device);
      EXPECT_GE(c, previous) << device << " reduce len=" << len;
      previous = c;
    }
  }
}

TEST_F(CostKernel, Deterministic) {
  const Graph g = matmul_graph(300, 700, 900);
  auto model = make_analytic_cost_model(spec("h100"));
  const KernelView view = make_kernel_view(g, {0});
  EXPECT_EQ(model->latency_us(view), model->latency_us(view));
  EXPECT_EQ(model->latency_us(view), cost(g, {0}, "h100"));
  EXPECT_TRUE(contains(model->describe(), "h100")) << model->describe();
}

TEST_F(CostKernel, TransposeOfInnerAxisPaysStridedPenalty) {
  Graph g;
  g.set_type("x", DType::F32, {2048, 2048});
  g.set_type("t", DType::F32, {2048, 2048});
  g.set_type("r", DType::F32, {2048, 2048});
  g.inputs = {"x"};
  Node tr = make_node("tr", "Transpose", {"x"}, {"t"});
  tr.attributes["perm"] = std::vector<std::int64_t>{1, 0};
  g.nodes.push_back(tr);
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, {"r"}));
  g.outputs = {"t", "r"};
  const KernelCost t = breakdown(g, {0});
  const KernelCost r = breakdown(g, {1});
  EXPECT_DOUBLE_EQ(t.dram_bytes, r.dram_bytes);
  EXPECT_DOUBLE_EQ(t.access_efficiency, spec("a100").curves.strided_efficiency);
  EXPECT_GT(t.total_us, r.total_us);

  // Swapping two outer axes keeps long contiguous rows: no penalty.
  Graph h;
  h.set_type("x", DType::F32, {64, 64, 1024});
  h.set_type("t", DType::F32, {64, 64, 1024});
  h.inputs = {"x"};
  Node outer = make_node("tr", "Transpose", {"x"}, {"t"});
  outer.attributes["perm"] = std::vector<std::int64_t>{1, 0, 2};
  h.nodes.push_back(outer);
  h.outputs = {"t"};
  EXPECT_DOUBLE_EQ(breakdown(h, {0}).access_efficiency, 1.0);
}

TEST_F(CostKernel, ShortAndStridedReductionsAreLessEfficient) {
  // Same bytes each: 4M floats in.
  const KernelCost long_row = breakdown(reduce_graph({4, 1 << 20}, 1), {0});
  const KernelCost short_row = breakdown(reduce_graph({1 << 20, 4}, 1), {0});
  const KernelCost strided = breakdown(reduce_graph({1 << 20, 4}, 0), {0});
  const KernelCost coalesced = breakdown(reduce_graph({4, 1 << 20}, 0), {0});
  EXPECT_GT(long_row.access_efficiency, 0.99);
  EXPECT_LT(short_row.access_efficiency, 0.6);
  EXPECT_GT(short_row.memory_us, long_row.memory_us);
  // Outer-axis reduction: strided when the kept inner extent is short, coalesced across
  // outputs when it is long, however short the reduced axis.
  EXPECT_LT(strided.access_efficiency, 0.7);
  EXPECT_GT(coalesced.access_efficiency, 0.9);
}

TEST_F(CostKernel, LinearWithEpilogueCostsTheLinearOpPlusExtraBytes) {
  // y = Relu(x[1,4096] . W[4096,4096] + b): a GEMV, memory bound on W.
  Graph g = matmul_graph(1, 4096, 4096);
  g.set_type("bias", DType::F32, {4096});
  g.set_type("z", DType::F32, {1, 4096});
  g.set_type("o", DType::F32, {1, 4096});
  g.inputs.push_back("bias");
  g.nodes.push_back(make_node("add", "Add", {"y", "bias"}, {"z"}));
  g.nodes.push_back(make_node("relu", "Relu", {"z"}, {"o"}));
  g.outputs = {"o"};
  const DeviceSpec& d = spec("a100");
  const KernelCost alone = breakdown(g, {0});
  const KernelCost fused = breakdown(g, {0, 1, 2});
  EXPECT_FALSE(fused.compute_bound());
  // Extra bytes: the bias vector, nothing else (y and z stay on chip, o replaces y).
  EXPECT_DOUBLE_EQ(fused.dram_bytes - alone.dram_bytes, 4096.0 * 4);
  EXPECT_NEAR(fused.total_us - alone.total_us, 4096.0 * 4 / (d.dram_bandwidth_gbs * 1e3), 1e-9);
  EXPECT_LT(fused.total_us, alone.total_us + cost(g, {1}) + cost(g, {2}));
}

TEST_F(CostKernel, DepthwiseConvIsMemoryBoundNotTileBound) {
  Graph g;
  g.set_type("x", DType::F32, {1, 32, 112, 112});
  g.set_type("w", DType::F32, {32, 1, 3, 3});
  g.set_type("y", DType::F32, {1, 32, 112, 112});
  g.inputs = {"x", "w"};
  Node conv = make_node("dw", "Conv", {"x", "w"}, {"y"});
  conv.attributes["group"] = std::int64_t{32};
  conv.attributes["kernel_shape"] = std::vector<std::int64_t>{3, 3};
  conv.attributes["pads"] = std::vector<std::int64_t>{1, 1, 1, 1};
  g.nodes.push_back(conv);
  g.outputs = {"y"};
  const KernelCost c = breakdown(g, {0});
  GemmShape s;
  ASSERT_TRUE(linear_gemm_shape(g, g.nodes[0], s));
  EXPECT_EQ(s.batch, 32);
  EXPECT_EQ(s.n, 1);
  EXPECT_EQ(s.k, 9);
  EXPECT_FALSE(c.compute_bound());
  EXPECT_LT(c.total_us, 20.0);
}

TEST_F(CostKernel, SliceReadsOnlyWhatItKeeps) {
  Graph g;
  g.set_type("x", DType::F32, {1024, 1024});
  g.set_constant("starts", Tensor::from_int64s({0}));
  g.set_constant("ends", Tensor::from_int64s({512}));
  g.set_constant("axes", Tensor::from_int64s({0}));
  g.set_type("s", DType::F32, {512, 1024});
  g.inputs = {"x"};
  g.nodes.push_back(make_node("slice", "Slice", {"x", "starts", "ends", "axes"}, {"s"}));
  g.outputs = {"s"};
  const KernelCost c = breakdown(g, {0});
  EXPECT_DOUBLE_EQ(c.dram_bytes, 2.0 * 512 * 1024 * 4 + 3 * 8);
}

// Col2Im is a layout primitive: priced by the bytes it reads (the blocks and its two
// shape constants) and writes (the image), its additions far below the memory time.
TEST_F(CostKernel, Col2ImIsMemoryBound) {
  Graph g;
  g.set_type("x", DType::F32, {1, 16 * 9, 64 * 64});
  g.set_constant("image", Tensor::from_int64s({64, 64}));
  g.set_constant("block", Tensor::from_int64s({3, 3}));
  g.set_type("y", DType::F32, {1, 16, 64, 64});
  g.inputs = {"x"};
  Node node = make_node("c2i", "Col2Im", {"x", "image", "block"}, {"y"});
  node.attributes["pads"] = std::vector<std::int64_t>{1, 1, 1, 1};
  g.nodes.push_back(node);
  g.outputs = {"y"};
  for (const std::string device : {"a100", "cpu"}) {
    const KernelCost c = breakdown(g, {0}, device);
    EXPECT_DOUBLE_EQ(c.dram_bytes, 4.0 * (16 * 9 * 4096 + 16 * 4096) + 4 * 8);
    EXPECT_DOUBLE_EQ(c.flops, 16.0 * 9 * 4096);  // one addition per block element
    EXPECT_FALSE(c.compute_bound()) << device;
  }
}

TEST_F(CostKernel, CostModelInterfaceAllowsAFallbackWrapper) {
  // What a measured model looks like: answer from a table, else ask the analytic model.
  class TableModel : public CostModel {
   public:
    explicit TableModel(std::unique_ptr<CostModel> fallback) : fallback_(std::move(fallback)) {}
    double latency_us(const KernelView& k) const override {
      return k.nodes.size() == 1 && k.nodes[0] == 0 ? 42.0 : fallback_->latency_us(k);
    }
    std::string describe() const override { return "table, else " + fallback_->describe(); }

   private:
    std::unique_ptr<CostModel> fallback_;
  };
  Graph g = add_graph({1024});
  g.set_type("r", DType::F32, {1024});
  g.nodes.push_back(make_node("relu", "Relu", {"c"}, {"r"}));
  g.outputs = {"r"};
  const TableModel model(make_analytic_cost_model(spec("a100")));
  EXPECT_EQ(model.latency_us(make_kernel_view(g, {0})), 42.0);
  EXPECT_EQ(model.latency_us(make_kernel_view(g, {1})), cost(g, {1}));
}

}  // namespace
}  // namespace orchid
