// ONNX importer/exporter tests: small ModelProtos built here and written to a temp dir,
// plus a few models from Debian's libonnx-testdata.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "eval/reference_interpreter.hpp"
#include "ir/op_registry.hpp"
#include "onnx/onnx_reader.hpp"
#include "onnx/onnx_writer.hpp"
#include "onnx/proto_io.hpp"
#include "onnx/stripped_weights.hpp"
#include "onnx/tensor_proto.hpp"
#include "passes/load_model.hpp"
#include "passes/static_graph.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"

namespace {

namespace fs = std::filesystem;
using namespace orchid;
using onnx::TensorProto;

const std::string kTestData = "/usr/share/libonnx-testdata/data/";

class OnnxIo : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        fs::temp_directory_path() / fmt::format("orchid_onnx_io_{}_{}", info->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& file) const { return (dir_ / file).string(); }
  std::string save(const onnx::ModelProto& model, const std::string& file = "model.onnx") {
    const std::string p = path(file);
    std::ofstream out(p, std::ios::binary);
    model.SerializeToOstream(&out);
    return p;
  }
  void write_bytes(const std::string& file, const std::string& bytes) {
    std::ofstream out(path(file), std::ios::binary);
    out << bytes;
  }

  fs::path dir_;
};

onnx::ModelProto make_model(std::int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("orchid-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// dims < 0 become a dim_param "N".
void add_input(onnx::ModelProto& m, const std::string& name, std::vector<std::int64_t> dims,
               int elem = TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (auto d : dims) {
    if (d < 0) {
      shape->add_dim()->set_dim_param("N");
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
}

void add_output(onnx::ModelProto& m, const std::string& name) {
  m.mutable_graph()->add_output()->set_name(name);
}

void add_typed_output(onnx::ModelProto& m, const std::string& name,
                      std::vector<std::int64_t> dims) {
  auto* t = m.mutable_graph()->add_output();
  t->set_name(name);
  auto* tt = t->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TensorProto::FLOAT);
  for (auto d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op,
                          std::vector<std::string> inputs, std::vector<std::string> outputs,
                          const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

void set_ints(onnx::NodeProto* n, const std::string& key, std::vector<std::int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void set_int(onnx::NodeProto* n, const std::string& key, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(onnx::NodeProto* n, const std::string& key, float v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_floats(onnx::NodeProto* n, const std::string& key, std::vector<float> v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (auto x : v) a->add_floats(x);
}
void set_string(onnx::NodeProto* n, const std::string& key, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

TensorProto float_tensor(const std::string& name, std::vector<std::int64_t> dims,
                         const std::vector<float>& values) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  t.set_raw_data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return t;
}

std::vector<float> iota(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f;
  return v;
}

void add_init(onnx::ModelProto& m, const TensorProto& t) {
  *m.mutable_graph()->add_initializer() = t;
}

// One-Conv model: X [N,3,8,8], W [4,3,3,3], B [4] -> Y.
onnx::ModelProto conv_model() {
  auto m = make_model();
  add_input(m, "X", {-1, 3, 8, 8});
  add_init(m, float_tensor("W", {4, 3, 3, 3}, iota(108)));
  add_init(m, float_tensor("B", {4}, iota(4)));
  auto* conv = add_node(m, "Conv", {"X", "W", "B"}, {"Y"}, "conv1");
  set_ints(conv, "kernel_shape", {3, 3});
  set_ints(conv, "pads", {1, 1, 1, 1});
  add_output(m, "Y");
  auto* p = m.add_metadata_props();
  p->set_key("author");
  p->set_value("tests");
  return m;
}

// Runs `f`, expects an orchid::Error (of type E) and returns its message.
template <typename E = Error>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception thrown";
  return "";
}

const Node& node_of(const Graph& g, const std::string& op, std::size_t k = 0) {
  for (const Node& n : g.nodes) {
    if (n.op_type == op && k-- == 0) return n;
  }
  throw std::runtime_error("no node " + op);
}

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

std::vector<std::int64_t> const_ints(const Graph& g, const std::string& name) {
  return g.tensor(name).data->to_int64s();
}

// ---------------------------------------------------------------- basic reading

TEST_F(OnnxIo, ReadsConvModel) {
  const std::string file = save(conv_model());
  const Graph g = read_onnx(file);
  EXPECT_EQ(g.name, "g");
  EXPECT_EQ(g.opset, 17);
  EXPECT_EQ(g.metadata.at("onnx.opset"), "17");
  EXPECT_EQ(g.metadata.at("onnx.producer"), "orchid-test");
  EXPECT_EQ(g.metadata.at("author"), "tests");
  ASSERT_EQ(g.inputs, std::vector<std::string>{"X"});
  EXPECT_EQ(g.tensor("X").shape, (Shape{1, 3, 8, 8}));
  EXPECT_EQ(g.tensor("X").dtype, DType::F32);
  EXPECT_EQ(g.outputs, std::vector<std::string>{"Y"});
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& conv = g.nodes[0];
  EXPECT_EQ(conv.name, "conv1");
  EXPECT_EQ(conv.attr_ints("pads", {}), (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(g.weights(), (std::vector<std::string>{"B", "W"}));
  EXPECT_EQ(g.tensor("W").data->shape(), (Shape{4, 3, 3, 3}));
  EXPECT_FLOAT_EQ(g.tensor("W").data->values<float>()[5], 2.5f);
  EXPECT_NO_THROW(g.validate());
}

TEST_F(OnnxIo, DimParamsResolveAndOverridesApply) {
  const std::string file = save(conv_model());
  ImportOptions options;
  options.dim_params["N"] = 4;
  EXPECT_EQ(read_onnx(file, options).tensor("X").shape, (Shape{4, 3, 8, 8}));
  options.default_dim = 7;
  options.dim_params.clear();
  EXPECT_EQ(read_onnx(file, options).tensor("X").shape, (Shape{7, 3, 8, 8}));
  options.input_shapes["X"] = {2, 3, 16, 16};
  EXPECT_EQ(read_onnx(file, options).tensor("X").shape, (Shape{2, 3, 16, 16}));
  options.input_shapes["nope"] = {1};
  const auto msg = error_of([&] { read_onnx(file, options); });
  EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
}

TEST_F(OnnxIo, InitializersListedAsInputsAreConstants) {
  auto m = conv_model();
  add_input(m, "W", {4, 3, 3, 3});
  add_input(m, "B", {4});
  const Graph g = read_onnx(save(m));
  EXPECT_EQ(g.inputs, std::vector<std::string>{"X"});
  EXPECT_TRUE(g.is_constant("W"));
}

TEST_F(OnnxIo, InputWithoutShapeNeedsOverride) {
  auto m = make_model();
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name("X");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  add_node(m, "Relu", {"X"}, {"Y"});
  add_output(m, "Y");
  const std::string file = save(m);
  const auto msg = error_of([&] { read_onnx(file); });
  EXPECT_NE(msg.find("'X'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  ImportOptions options;
  options.input_shapes["X"] = {2, 5};
  EXPECT_EQ(read_onnx(file, options).tensor("X").shape, (Shape{2, 5}));
}

TEST_F(OnnxIo, EmptyAndDuplicateNodeNamesBecomeUnique) {
  auto m = make_model();
  add_input(m, "X", {2, 2});
  add_node(m, "Relu", {"X"}, {"a"});
  add_node(m, "Relu", {"a"}, {"b"}, "r");
  add_node(m, "Relu", {"b"}, {"c"}, "r");
  add_node(m, "Relu", {"c"}, {"d"});
  add_output(m, "d");
  const Graph g = read_onnx(save(m));
  std::set<std::string> names;
  for (const Node& n : g.nodes) names.insert(n.name);
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(g.nodes[0].name, "Relu_0");
  EXPECT_EQ(g.nodes[1].name, "r");
  EXPECT_NO_THROW(g.validate());
}

TEST_F(OnnxIo, UnknownOpsAreConvertedNotRejected) {
  auto m = make_model();
  add_input(m, "X", {2, 2});
  add_node(m, "MadeUpOp", {"X"}, {"Y"});
  add_output(m, "Y");
  const Graph g = read_onnx(save(m));
  EXPECT_EQ(g.nodes[0].op_type, "MadeUpOp");
}

TEST_F(OnnxIo, AttributesOfEveryKind) {
  auto m = make_model();
  add_input(m, "X", {2, 2});
  auto* n = add_node(m, "Custom", {"X"}, {"Y"}, "n");
  set_int(n, "i", 3);
  set_float(n, "f", 1.5f);
  set_string(n, "s", "hi");
  set_ints(n, "is", {1, 2});
  set_floats(n, "fs", {0.5f});
  auto* a = n->add_attribute();
  a->set_name("ss");
  a->set_type(onnx::AttributeProto::STRINGS);
  a->add_strings("x");
  a = n->add_attribute();
  a->set_name("t");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("t", {2}, {1.f, 2.f});
  add_output(m, "Y");
  const Graph g = read_onnx(save(m));
  const Node& node = g.nodes.at(0);
  EXPECT_EQ(node.attr_int("i", 0), 3);
  EXPECT_FLOAT_EQ(node.attr_float("f", 0), 1.5f);
  EXPECT_EQ(node.attr_string("s", ""), "hi");
  EXPECT_EQ(node.attr_ints("is", {}), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(node.attr_floats("fs", {}), std::vector<float>{0.5f});
  EXPECT_EQ(std::get<std::vector<std::string>>(node.attributes.at("ss")),
            std::vector<std::string>{"x"});
  EXPECT_EQ(node.required_tensor("t").to_floats(), (std::vector<float>{1.f, 2.f}));
}

// ---------------------------------------------------------------- tensor protos

TEST_F(OnnxIo, TypedTensorFields) {
  TensorProto t;
  t.set_name("t");
  t.add_dims(3);
  t.set_data_type(TensorProto::INT8);
  for (int v : {-1, 2, 127}) t.add_int32_data(v);
  Tensor a = tensor_from_proto(t, ".", "t");
  EXPECT_EQ(a.dtype(), DType::I8);
  EXPECT_EQ(a.to_int64s(), (std::vector<std::int64_t>{-1, 2, 127}));

  t.set_data_type(TensorProto::UINT8);
  EXPECT_EQ(tensor_from_proto(t, ".", "t").get_as_int64(2), 127);
  t.set_data_type(TensorProto::BOOL);
  EXPECT_EQ(tensor_from_proto(t, ".", "t").to_int64s(), (std::vector<std::int64_t>{1, 1, 1}));
  t.set_data_type(TensorProto::FLOAT16);
  t.clear_int32_data();
  for (float v : {1.0f, -2.0f, 0.5f}) t.add_int32_data(float_to_half(v));
  EXPECT_EQ(tensor_from_proto(t, ".", "t").to_floats(), (std::vector<float>{1.0f, -2.0f, 0.5f}));

  TensorProto i64;
  i64.set_data_type(TensorProto::INT64);
  i64.add_dims(2);
  i64.add_int64_data(-5);
  i64.add_int64_data(1LL << 40);
  EXPECT_EQ(tensor_from_proto(i64, ".", "i").to_int64s(),
            (std::vector<std::int64_t>{-5, 1LL << 40}));

  TensorProto f64;
  f64.set_data_type(TensorProto::DOUBLE);
  f64.add_double_data(0.25);  // scalar: no dims
  EXPECT_EQ(tensor_from_proto(f64, ".", "d").shape(), Shape{});
  EXPECT_DOUBLE_EQ(tensor_from_proto(f64, ".", "d").get_as_double(0), 0.25);

  TensorProto f32;
  f32.set_data_type(TensorProto::FLOAT);
  f32.add_dims(2);
  f32.add_float_data(1.f);
  const auto msg = error_of([&] { tensor_from_proto(f32, ".", "file 'x': tensor 'f'"); });
  EXPECT_NE(msg.find("tensor 'f'"), std::string::npos) << msg;

  // Round trip through raw_data.
  TensorProto back;
  tensor_to_proto(a, back);
  EXPECT_TRUE(back.has_raw_data());
  EXPECT_EQ(tensor_from_proto(back, ".", "t"), a);
}

TEST_F(OnnxIo, UnsupportedDtypeNamesTensor) {
  for (int type : std::initializer_list<int>{TensorProto::STRING, 17 /* FLOAT8E4M3FN */,
                                             TensorProto::UINT16, TensorProto::COMPLEX64}) {
    auto m = conv_model();
    TensorProto t;
    t.set_name("odd_tensor");
    t.set_data_type(type);
    add_init(m, t);
    const std::string file = save(m);
    const auto msg = error_of<UnsupportedError>([&] { read_onnx(file); });
    EXPECT_NE(msg.find("odd_tensor"), std::string::npos) << msg;
    EXPECT_NE(msg.find(file), std::string::npos) << msg;
  }
}

void make_external(TensorProto& t, const std::string& location, std::int64_t offset,
                   std::int64_t length) {
  t.clear_raw_data();
  t.set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
}

onnx::ModelProto external_conv_model(const std::string& location, std::int64_t offset) {
  auto m = conv_model();
  make_external(*m.mutable_graph()->mutable_initializer(0), location, offset, 108 * 4);
  return m;
}

TEST_F(OnnxIo, ExternalDataReadsSideFileRelativeToModel) {
  const auto w = iota(108);
  std::string bytes(16, 'x');  // data starts at offset 16
  bytes.append(reinterpret_cast<const char*>(w.data()), w.size() * 4);
  fs::create_directories(dir_ / "sub" / "data");
  std::ofstream(path("sub/data/weights.bin"), std::ios::binary) << bytes;
  auto m = external_conv_model("data/weights.bin", 16);
  const Graph g = read_onnx(save(m, "sub/model.onnx"));
  EXPECT_EQ(g.tensor("W").data->to_floats(), w);
}

// A large external tensor at an offset aligned to 64 bytes (as exporters write them, here
// not to a page) is mapped, not read; one elsewhere is read. Both hold the file's values,
// and a mapped one stays valid in copies of the graph after the original is gone.
TEST_F(OnnxIo, LargeExternalTensorsAreMappedWhereAligned) {
  std::vector<float> w(512 * 1024);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 1000) * 0.5f;
  for (const std::int64_t offset : {std::int64_t{4160}, std::int64_t{4100}}) {
    std::string bytes(static_cast<std::size_t>(offset), 'x');
    bytes.append(reinterpret_cast<const char*>(w.data()), w.size() * 4);
    write_bytes("big.bin", bytes);
    auto m = make_model();
    add_input(m, "X", {2, 512});
    TensorProto t = float_tensor("W", {512, 1024}, std::vector<float>(w.size(), 0.f));
    make_external(t, "big.bin", offset, static_cast<std::int64_t>(w.size() * 4));
    add_init(m, t);
    add_node(m, "MatMul", {"X", "W"}, {"y"});
    add_typed_output(m, "y", {2, 1024});
    std::optional<Graph> g = read_onnx(save(m));
    EXPECT_EQ(g->tensor("W").data->is_view(), offset % 64 == 0) << offset;
    const Graph copy = *g;
    g.reset();
    EXPECT_EQ(copy.tensor("W").data->to_floats(), w) << offset;
  }
}

TEST_F(OnnxIo, ExternalDataErrorsNameTensorAndFile) {
  write_bytes("short.bin", std::string(100, '\0'));
  struct Case {
    std::string location;
    std::string expect;
  };
  for (const Case& c : {Case{"missing.bin", "missing.bin"}, Case{"short.bin", "short.bin"},
                        Case{"/etc/passwd", "absolute"}, Case{"../escape.bin", "leaves"},
                        Case{"a/../../b.bin", "leaves"}}) {
    const std::string file = save(external_conv_model(c.location, 0));
    const auto msg = error_of([&] { read_onnx(file); });
    EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- Constant nodes

TEST_F(OnnxIo, ConstantNodesAreWeights) {
  auto m = make_model();
  add_input(m, "X", {2, 3});
  auto* c = add_node(m, "Constant", {}, {"Wc"}, "wconst");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("", {3, 4}, iota(12));
  set_float(add_node(m, "Constant", {}, {"s"}), "value_float", 2.0f);
  set_ints(add_node(m, "Constant", {}, {"shape"}), "value_ints", {4, 2});
  set_int(add_node(m, "Constant", {}, {"k"}), "value_int", 5);
  set_floats(add_node(m, "Constant", {}, {"fs"}), "value_floats", {1.f, 2.f});
  add_node(m, "MatMul", {"X", "Wc"}, {"y"});
  add_node(m, "Mul", {"y", "s"}, {"z"});
  add_node(m, "Reshape", {"z", "shape"}, {"out"});
  add_output(m, "out");
  const Graph g = read_onnx(save(m));
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"MatMul", "Mul", "Reshape"}));
  EXPECT_EQ(g.weights(), (std::vector<std::string>{"Wc", "s", "shape"}));
  EXPECT_EQ(g.tensor("Wc").data->shape(), (Shape{3, 4}));
  EXPECT_EQ(g.tensor("s").data->shape(), Shape{});
  EXPECT_EQ(const_ints(g, "shape"), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(g.tensor("k").data->dtype(), DType::I64);
  EXPECT_EQ(g.tensor("fs").data->to_floats(), (std::vector<float>{1.f, 2.f}));
  EXPECT_NO_THROW(g.validate());
}

TEST_F(OnnxIo, SparseAndStringConstantsAreRefused) {
  auto m = make_model();
  set_string(add_node(m, "Constant", {}, {"c"}, "strconst"), "value_string", "hello");
  add_output(m, "c");
  const auto msg = error_of<UnsupportedError>([&] { read_onnx(save(m)); });
  EXPECT_NE(msg.find("strconst"), std::string::npos) << msg;

  auto m2 = make_model();
  auto* a = add_node(m2, "Constant", {}, {"c"}, "sparse")->add_attribute();
  a->set_name("sparse_value");
  a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
  a->mutable_sparse_tensor()->add_dims(4);
  add_output(m2, "c");
  const auto msg2 = error_of<UnsupportedError>([&] { read_onnx(save(m2)); });
  EXPECT_NE(msg2.find("sparse"), std::string::npos) << msg2;
}

// ---------------------------------------------------------------- opset checks

TEST_F(OnnxIo, OpsetRangeAndDomains) {
  for (std::int64_t opset : {6, 29}) {
    auto m = conv_model();
    m.mutable_opset_import(0)->set_version(opset);
    const std::string file = save(m);
    const auto msg = error_of<UnsupportedError>([&] { read_onnx(file); });
    EXPECT_NE(msg.find(std::to_string(opset)), std::string::npos) << msg;
    EXPECT_NE(msg.find(file), std::string::npos) << msg;
  }
  auto m = conv_model();
  m.mutable_opset_import(0)->set_version(11);
  EXPECT_EQ(read_onnx(save(m)).metadata.at("onnx.opset"), "11");

  auto ms = conv_model();
  auto* op = ms.add_opset_import();
  op->set_domain("com.microsoft");
  op->set_version(1);
  auto* n = add_node(ms, "FusedGelu", {"Y"}, {"Z"}, "gelu");
  n->set_domain("com.microsoft");
  const auto msg = error_of<UnsupportedError>([&] { read_onnx(save(ms)); });
  EXPECT_NE(msg.find("gelu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FusedGelu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("com.microsoft"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- opset rewrites

onnx::ModelProto one_op(std::int64_t opset, const std::string& op,
                        std::vector<std::int64_t> x_shape, int outputs = 1) {
  auto m = make_model(opset);
  add_input(m, "X", std::move(x_shape));
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back(fmt::format("Y{}", i));
  add_node(m, op, {"X"}, outs, "n");
  for (auto& o : outs) add_output(m, o);
  return m;
}

onnx::NodeProto* first_node(onnx::ModelProto& m) {
  return m.mutable_graph()->mutable_node(0);
}

TEST_F(OnnxIo, SqueezeUnsqueezeAxesBecomeInputs) {
  for (const std::string op : {"Squeeze", "Unsqueeze"}) {
    auto m = one_op(11, op, {1, 3, 1});
    set_ints(first_node(m), "axes", {0, 2});
    const Graph g = read_onnx(save(m));
    const Node& n = g.nodes.at(0);
    EXPECT_FALSE(n.has_attribute("axes"));
    ASSERT_EQ(n.inputs.size(), 2u);
    EXPECT_EQ(const_ints(g, n.inputs[1]), (std::vector<std::int64_t>{0, 2}));
    EXPECT_EQ(g.tensor(n.inputs[1]).dtype, DType::I64);
  }
  // Opset 13 forms are left alone; Squeeze without axes stays input-less.
  auto m = one_op(11, "Squeeze", {1, 3});
  EXPECT_EQ(read_onnx(save(m)).nodes.at(0).inputs.size(), 1u);
}

TEST_F(OnnxIo, SplitAndReduceSumAttributesBecomeInputs) {
  auto m = one_op(11, "Split", {6, 2}, 2);
  set_ints(first_node(m), "split", {2, 4});
  set_int(first_node(m), "axis", 0);
  Graph g = read_onnx(save(m));
  EXPECT_EQ(const_ints(g, g.nodes[0].inputs.at(1)), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(g.nodes[0].attr_int("axis", -9), 0);

  auto r = one_op(12, "ReduceSum", {2, 3});
  set_ints(first_node(r), "axes", {1});
  set_int(first_node(r), "keepdims", 0);
  g = read_onnx(save(r));
  EXPECT_EQ(const_ints(g, g.nodes[0].inputs.at(1)), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(g.nodes[0].attr_int("keepdims", 1), 0);

  // ReduceMean keeps its attribute form through opset 17.
  auto rm = one_op(11, "ReduceMean", {2, 3});
  set_ints(first_node(rm), "axes", {1});
  g = read_onnx(save(rm));
  EXPECT_TRUE(g.nodes[0].has_attribute("axes"));
  EXPECT_EQ(g.nodes[0].inputs.size(), 1u);
}

TEST_F(OnnxIo, UpsampleBecomesResize) {
  auto m7 = one_op(7, "Upsample", {1, 1, 2, 2});
  set_floats(first_node(m7), "scales", {1.f, 1.f, 2.f, 2.f});
  Graph g = read_onnx(save(m7));
  const Node& r = g.nodes.at(0);
  EXPECT_EQ(r.op_type, "Resize");
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(r.inputs[1], "");
  EXPECT_EQ(g.tensor(r.inputs[2]).data->to_floats(), (std::vector<float>{1, 1, 2, 2}));
  EXPECT_EQ(r.attr_string("mode", ""), "nearest");
  EXPECT_EQ(r.attr_string("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(r.attr_string("nearest_mode", ""), "floor");
  EXPECT_FALSE(r.has_attribute("scales"));

  auto m9 = make_model(9);
  add_input(m9, "X", {1, 1, 2, 2});
  add_init(m9, float_tensor("sc", {4}, {1, 1, 2, 2}));
  set_string(add_node(m9, "Upsample", {"X", "sc"}, {"Y"}), "mode", "linear");
  add_output(m9, "Y");
  g = read_onnx(save(m9));
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"X", "", "sc"}));
  EXPECT_EQ(g.nodes[0].attr_string("mode", ""), "linear");
  EXPECT_FALSE(g.nodes[0].has_attribute("nearest_mode"));
}

TEST_F(OnnxIo, Resize10GetsEmptyRoi) {
  auto m = make_model(10);
  add_input(m, "X", {1, 1, 2, 2});
  add_init(m, float_tensor("sc", {4}, {1, 1, 2, 2}));
  set_string(add_node(m, "Resize", {"X", "sc"}, {"Y"}), "mode", "linear");
  add_output(m, "Y");
  const Graph g = read_onnx(save(m));
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"X", "", "sc"}));
  EXPECT_EQ(g.nodes[0].attr_string("mode", ""), "linear");
  EXPECT_EQ(g.nodes[0].attr_string("coordinate_transformation_mode", ""), "asymmetric");

  // Resize-11 with empty roi/scales placeholders and sizes -> omitted inputs.
  auto m11 = make_model(11);
  add_input(m11, "X", {1, 1, 2, 2});
  add_init(m11, float_tensor("roi", {0}, {}));
  add_init(m11, float_tensor("scales", {0}, {}));
  TensorProto sizes;
  sizes.set_name("sizes");
  sizes.set_data_type(TensorProto::INT64);
  sizes.add_dims(4);
  for (int v : {1, 1, 4, 4}) sizes.add_int64_data(v);
  add_init(m11, sizes);
  add_node(m11, "Resize", {"X", "roi", "scales", "sizes"}, {"Y"});
  add_output(m11, "Y");
  EXPECT_EQ(read_onnx(save(m11)).nodes[0].inputs, (std::vector<std::string>{"X", "", "", "sizes"}));
}

TEST_F(OnnxIo, PadClipSliceAttributesBecomeInputs) {
  auto p = one_op(2 + 5, "Pad", {2, 2});
  set_ints(first_node(p), "pads", {0, 1, 0, 1});
  set_float(first_node(p), "value", 1.5f);
  Graph g = read_onnx(save(p));
  const Node& pad = g.nodes[0];
  ASSERT_EQ(pad.inputs.size(), 3u);
  EXPECT_EQ(const_ints(g, pad.inputs[1]), (std::vector<std::int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(g.tensor(pad.inputs[2]).data->to_floats(), std::vector<float>{1.5f});
  EXPECT_EQ(g.tensor(pad.inputs[2]).data->shape(), Shape{});
  EXPECT_FALSE(pad.has_attribute("pads"));
  EXPECT_FALSE(pad.has_attribute("value"));

  auto c = one_op(7, "Clip", {2, 2});
  set_float(first_node(c), "max", 6.0f);
  g = read_onnx(save(c));
  const Node& clip = g.nodes[0];
  ASSERT_EQ(clip.inputs.size(), 3u);
  EXPECT_EQ(clip.inputs[1], "");  // no min: omitted
  EXPECT_EQ(g.tensor(clip.inputs[2]).data->to_floats(), std::vector<float>{6.0f});

  auto s = one_op(9, "Slice", {4, 4});
  set_ints(first_node(s), "starts", {1});
  set_ints(first_node(s), "ends", {3});
  set_ints(first_node(s), "axes", {1});
  g = read_onnx(save(s));
  const Node& slice = g.nodes[0];
  ASSERT_EQ(slice.inputs.size(), 4u);
  EXPECT_EQ(const_ints(g, slice.inputs[1]), std::vector<std::int64_t>{1});
  EXPECT_EQ(const_ints(g, slice.inputs[2]), std::vector<std::int64_t>{3});
  EXPECT_EQ(const_ints(g, slice.inputs[3]), std::vector<std::int64_t>{1});
  EXPECT_TRUE(slice.attributes.empty());
}

TEST_F(OnnxIo, OldSoftmaxBecomesFlattenSoftmaxReshape) {
  auto m = one_op(11, "Softmax", {2, 3, 4});  // default axis 1: softmax over 3*4
  Graph g = read_onnx(save(m));
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Flatten", "Shape", "Softmax", "Reshape"}));
  const Node& flatten = node_of(g, "Flatten");
  const Node& softmax = node_of(g, "Softmax");
  const Node& reshape = node_of(g, "Reshape");
  EXPECT_EQ(flatten.inputs, std::vector<std::string>{"X"});
  EXPECT_EQ(flatten.attr_int("axis", -9), 1);
  EXPECT_EQ(softmax.attr_int("axis", 0), -1);
  EXPECT_EQ(softmax.inputs[0], flatten.outputs[0]);
  EXPECT_EQ(reshape.inputs,
            (std::vector<std::string>{softmax.outputs[0], node_of(g, "Shape").outputs[0]}));
  EXPECT_EQ(reshape.outputs, std::vector<std::string>{"Y0"});
  EXPECT_NO_THROW(g.validate());

  // Same semantics as opset 13 when the axis is the last one: no rewrite.
  auto last = one_op(11, "LogSoftmax", {2, 3});
  g = read_onnx(save(last));
  EXPECT_EQ(op_types(g), std::vector<std::string>{"LogSoftmax"});
  EXPECT_EQ(g.nodes[0].attr_int("axis", 0), -1);
}

TEST_F(OnnxIo, BatchNormAndDropoutLegacyAttributesDropped) {
  auto m = make_model(7);
  add_input(m, "X", {1, 2, 3, 3});
  for (const char* name : {"s", "b", "mean", "var"}) add_init(m, float_tensor(name, {2}, {1, 1}));
  auto* bn = add_node(m, "BatchNormalization", {"X", "s", "b", "mean", "var"},
                      {"Y", "m_out", "v_out"}, "bn");
  set_int(bn, "spatial", 1);
  set_float(bn, "epsilon", 1e-3f);
  set_float(add_node(m, "Dropout", {"Y"}, {"Z"}, "drop"), "ratio", 0.3f);
  add_output(m, "Z");
  Graph g = read_onnx(save(m));
  const Node& b = node_of(g, "BatchNormalization");
  EXPECT_FALSE(b.has_attribute("spatial"));
  EXPECT_FLOAT_EQ(b.attr_float("epsilon", 0), 1e-3f);
  EXPECT_EQ(b.outputs, std::vector<std::string>{"Y"});
  EXPECT_FALSE(node_of(g, "Dropout").has_attribute("ratio"));

  first_node(m)->mutable_attribute(0)->set_i(0);  // spatial = 0
  const auto msg = error_of<UnsupportedError>([&] { read_onnx(save(m)); });
  EXPECT_NE(msg.find("bn"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spatial"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- writer

TEST_F(OnnxIo, WriteReadRoundTripPassesChecker) {
  auto m = conv_model();
  add_node(m, "Relu", {"Y"}, {"R"}, "relu");
  auto* c = add_node(m, "Constant", {}, {"shape"}, "c");
  set_ints(c, "value_ints", {1, -1});
  add_node(m, "Reshape", {"R", "shape"}, {"out"}, "reshape");
  m.mutable_graph()->mutable_output(0)->set_name("out");
  Graph g = read_onnx(save(m));
  g.set_type("Y", DType::F32, {1, 4, 8, 8});  // a typed intermediate becomes value_info

  const std::string out = path("written.onnx");
  write_onnx(g, out);
  EXPECT_NO_THROW(onnx::checker::check_model(out));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
  const onnx::ModelProto proto = load_model_proto(out);
  EXPECT_EQ(proto.ir_version(), 8);
  EXPECT_EQ(proto.producer_name(), "orchid");
  EXPECT_EQ(proto.opset_import(0).version(), 17);
  EXPECT_EQ(proto.graph().value_info_size(), 1);

  const Graph back = read_onnx(out);
  EXPECT_EQ(op_types(back), op_types(g));
  EXPECT_EQ(back.inputs, g.inputs);
  EXPECT_EQ(back.outputs, g.outputs);
  EXPECT_EQ(back.weights(), g.weights());
  EXPECT_EQ(*back.tensor("W").data, *g.tensor("W").data);
  EXPECT_EQ(*back.tensor("shape").data, *g.tensor("shape").data);
  EXPECT_EQ(back.metadata.at("author"), "tests");
  EXPECT_EQ(back.tensor("X").shape, g.tensor("X").shape);
  EXPECT_EQ(back.nodes[0].attributes, g.nodes[0].attributes);
}

TEST_F(OnnxIo, OldTopKAndRoiAlignFormsAreUpgraded) {
  // TopK before opset 10 took k as an attribute: it becomes a constant input.
  auto topk = make_model(9);
  add_input(topk, "x", {2, 5});
  set_int(add_node(topk, "TopK", {"x"}, {"v", "i"}, "top"), "k", 3);
  add_output(topk, "v");
  add_output(topk, "i");
  Graph g = read_onnx(save(topk));
  make_static(g);
  const Node& t = node_of(g, "TopK");
  EXPECT_FALSE(t.has_attribute("k"));
  ASSERT_TRUE(g.is_constant(t.inputs.at(1)));
  EXPECT_EQ(g.tensor(t.inputs[1]).data->to_int64s(), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(g.tensor("v").shape, (Shape{2, 3}));

  // RoiAlign before opset 16 had no coordinate_transformation_mode and behaved as
  // output_half_pixel (opset 16's default is half_pixel).
  auto roi = make_model(11);
  add_input(roi, "x", {1, 2, 4, 4});
  add_input(roi, "rois", {1, 4});
  add_input(roi, "batch", {1}, TensorProto::INT64);
  add_node(roi, "RoiAlign", {"x", "rois", "batch"}, {"y"}, "pool");
  add_output(roi, "y");
  const Graph r = read_onnx(save(roi));
  EXPECT_EQ(node_of(r, "RoiAlign").attr_string("coordinate_transformation_mode", ""),
            "output_half_pixel");
}

TEST_F(OnnxIo, WrittenUpgradedModelPassesChecker) {
  auto m = one_op(11, "Softmax", {2, 3, 4});
  const Graph g = read_onnx(save(m));
  write_onnx(g, path("softmax17.onnx"));
  EXPECT_NO_THROW(onnx::checker::check_model(path("softmax17.onnx")));
}

// ---------------------------------------------------------------- stripped weights

onnx::ModelProto stripped_model(bool with_key) {
  auto m = make_model();
  add_input(m, "X", {1, 3, 8, 8});
  add_init(m, float_tensor("conv.weight", {16, 3, 3, 3}, std::vector<float>(432, 0.f)));
  add_init(m, float_tensor("bn.scale", {16}, std::vector<float>(16, 0.f)));
  add_init(m, float_tensor("bn.bias", {16}, std::vector<float>(16, 0.f)));
  add_init(m, float_tensor("bn.mean", {16}, std::vector<float>(16, 0.f)));
  add_init(m, float_tensor("bn.var", {16}, std::vector<float>(16, 0.f)));
  add_init(m, float_tensor("fc.weight", {10, 16}, std::vector<float>(160, 0.f)));
  std::int64_t offset = 0;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    const auto bytes = static_cast<std::int64_t>(t.raw_data().size());
    make_external(t, "weights.bin", offset, bytes);
    offset += bytes;
  }
  add_node(m, "Conv", {"X", "conv.weight"}, {"c"});
  add_node(m, "BatchNormalization", {"c", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"b"});
  add_node(m, "GlobalAveragePool", {"b"}, {"p"});
  add_node(m, "Flatten", {"p"}, {"f"});
  set_int(add_node(m, "Gemm", {"f", "fc.weight"}, {"y"}), "transB", 1);
  add_typed_output(m, "y", {1, 10});
  if (with_key) {
    auto* p = m.add_metadata_props();
    p->set_key(kStrippedWeightsKey);
    p->set_value(kStrippedWeightsValue);
  }
  return m;
}

void expect_range(const Graph& g, const std::string& name, float lo, float hi) {
  const auto v = g.tensor(name).data->to_floats();
  float mn = v[0], mx = v[0];
  for (float x : v) {
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  EXPECT_GE(mn, lo) << name;
  EXPECT_LE(mx, hi) << name;
  EXPECT_GT(mx - mn, 0.5f * (hi - lo)) << name;  // actually spread, not constant
}

TEST_F(OnnxIo, StrippedWeightsAreRegeneratedDeterministically) {
  const std::string file = save(stripped_model(true));
  const Graph a = read_onnx(file);
  const Graph b = read_onnx(file);
  for (const auto& w : a.weights()) EXPECT_EQ(*a.tensor(w).data, *b.tensor(w).data) << w;
  const float conv = std::sqrt(3.0f / 27.0f);
  expect_range(a, "conv.weight", -conv, conv);
  expect_range(a, "bn.scale", 0.8f, 1.2f);
  expect_range(a, "bn.bias", -0.1f, 0.1f);
  expect_range(a, "bn.mean", -0.1f, 0.1f);
  expect_range(a, "bn.var", 0.5f, 1.5f);
  const float fc = std::sqrt(3.0f / 16.0f);  // transB: [N, K] -> fan_in K = 16
  expect_range(a, "fc.weight", -fc, fc);
  // Different names -> different streams.
  EXPECT_NE(a.tensor("bn.bias").data->to_floats(), a.tensor("bn.mean").data->to_floats());
}

TEST_F(OnnxIo, StrippedValuesArePinned) {
  // Guards the cross-platform contract: these bits must never change.
  const Graph g = read_onnx(save(stripped_model(true)));
  const auto v = g.tensor("bn.var").data->to_floats();
  std::uint32_t bits0 = 0;
  std::memcpy(&bits0, &v[0], 4);
  // Recompute element 0 by hand: FNV-1a("bn.var") -> splitmix64 -> top 24 bits.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : std::string("bn.var")) h = (h ^ c) * 0x100000001b3ULL;
  std::uint64_t z = h + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 40) * 0x1p-24;
  const auto expected = static_cast<float>(std::fma(0.5, 2.0 * u - 1.0, 1.0));
  EXPECT_EQ(v[0], expected);
  EXPECT_NE(bits0, 0u);
}

TEST_F(OnnxIo, StrippedSideFilePresentIsRead) {
  const auto m = stripped_model(true);
  std::string bytes;
  for (const auto& t : m.graph().initializer()) {
    const auto n = static_cast<std::size_t>(std::stoll(t.external_data(2).value())) / 4;
    for (std::size_t i = 0; i < n; ++i) {
      const float v = 0.25f;
      bytes.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  write_bytes("weights.bin", bytes);
  const Graph g = read_onnx(save(m));
  for (const auto& w : g.weights()) {
    for (float x : g.tensor(w).data->to_floats()) ASSERT_EQ(x, 0.25f) << w;
  }
}

TEST_F(OnnxIo, MissingSideFileWithoutKeyIsAnError) {
  const std::string file = save(stripped_model(false));
  const auto msg = error_of([&] { read_onnx(file); });
  EXPECT_NE(msg.find("conv.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("weights.bin"), std::string::npos) << msg;
}

TEST_F(OnnxIo, MaterializeWritesSelfContainedModel) {
  const std::string in = save(stripped_model(true));
  fs::create_directories(dir_ / "elsewhere");
  const std::string out = path("elsewhere/full.onnx");
  materialize_stripped_weights(in, out);
  const onnx::ModelProto proto = load_model_proto(out);
  for (const auto& t : proto.graph().initializer()) {
    EXPECT_FALSE(has_external_data(t)) << t.name();
    EXPECT_TRUE(t.has_raw_data()) << t.name();
  }
  for (const auto& p : proto.metadata_props()) EXPECT_NE(p.key(), kStrippedWeightsKey);
  EXPECT_NO_THROW(onnx::checker::check_model(out));
  const Graph a = read_onnx(in);
  const Graph b = read_onnx(out);
  for (const auto& w : a.weights()) EXPECT_EQ(*a.tensor(w).data, *b.tensor(w).data) << w;
}

// ---------------------------------------------------------------- malformed input

TEST_F(OnnxIo, MalformedFilesAreCleanErrors) {
  std::string good;
  conv_model().SerializeToString(&good);
  write_bytes("truncated.onnx", good.substr(0, good.size() / 2));
  std::string random(4096, '\0');
  std::uint64_t s = 42;
  for (auto& ch : random) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    ch = static_cast<char>(s >> 56);
  }
  write_bytes("random.onnx", random);
  write_bytes("text.onnx", "This is not an ONNX model.\nJust some text, honestly.\n");
  write_bytes("empty.onnx", "");
  auto nograph = make_model();
  nograph.clear_graph();
  save(nograph, "nograph.onnx");
  fs::create_directories(dir_ / "folder.onnx");

  for (const char* name : {"missing.onnx", "truncated.onnx", "random.onnx", "text.onnx",
                           "empty.onnx", "nograph.onnx", "folder.onnx"}) {
    const std::string file = path(name);
    const auto msg = error_of([&] { read_onnx(file); });
    EXPECT_NE(msg.find(file), std::string::npos) << name << ": " << msg;
  }
}

TEST_F(OnnxIo, MissingTensorReferenceNamesNodeAndTensor) {
  auto m = conv_model();
  add_node(m, "Add", {"Y", "ghost"}, {"Z"}, "adder");
  const std::string file = save(m);
  const auto msg = error_of([&] { read_onnx(file); });
  EXPECT_NE(msg.find("adder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ghost"), std::string::npos) << msg;
  EXPECT_NE(msg.find(file), std::string::npos) << msg;

  auto m2 = conv_model();
  add_output(m2, "never");
  const auto msg2 = error_of([&] { read_onnx(save(m2)); });
  EXPECT_NE(msg2.find("never"), std::string::npos) << msg2;
}

TEST_F(OnnxIo, BadAttributeTypesAreErrors) {
  // No type and no value.
  auto m = conv_model();
  first_node(m)->add_attribute()->set_name("mystery");
  auto msg = error_of([&] { read_onnx(save(m)); });
  EXPECT_NE(msg.find("mystery"), std::string::npos) << msg;
  EXPECT_NE(msg.find("conv1"), std::string::npos) << msg;

  // Wrong kind for a rewrite: Squeeze-11 axes given as a float.
  auto sq = one_op(11, "Squeeze", {1, 3});
  set_float(first_node(sq), "axes", 0.0f);
  msg = error_of([&] { read_onnx(save(sq)); });
  EXPECT_NE(msg.find("axes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'n'"), std::string::npos) << msg;
}

TEST_F(OnnxIo, ScanAndMalformedIfAreRefused) {
  // Scan bodies are not read: refused, naming node, attribute and opset.
  auto m = make_model();
  add_input(m, "x", {2, 3}, TensorProto::FLOAT);
  auto* loop = add_node(m, "Scan", {"x"}, {"Y"}, "looping");
  auto* body = loop->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  body->mutable_g()->set_name("body");
  add_output(m, "Y");
  std::string file = save(m);
  std::string msg = error_of<UnsupportedError>([&] { read_onnx(file); });
  for (const char* part : {"looping", "Scan", "body", "opset 17"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << ": " << msg;
  }
  EXPECT_NE(msg.find(file), std::string::npos) << msg;

  // An If whose branch has the wrong number of outputs, or lacks a branch, is broken.
  auto bad_if = make_model();
  add_input(bad_if, "cond", {}, TensorProto::BOOL);
  auto* n = add_node(bad_if, "If", {"cond"}, {"Y"}, "branch");
  auto* a = n->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("then");
  add_output(bad_if, "Y");
  file = save(bad_if);
  msg = error_of([&] { read_onnx(file); });
  for (const char* part : {"branch", "If", "then_branch", "0 outputs"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << ": " << msg;
  }
  a->mutable_g()->add_output()->set_name("cond");
  msg = error_of([&] { read_onnx(save(bad_if)); });
  EXPECT_NE(msg.find("else_branch"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- real models

TEST_F(OnnxIo, ReadsOnnxBackendConvModel) {
  const std::string dir = kTestData + "node/test_conv_with_strides_padding/";
  if (!fs::exists(dir)) GTEST_SKIP() << "libonnx-testdata not installed";
  const Graph g = read_onnx(dir + "model.onnx");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Conv");
  EXPECT_EQ(g.nodes[0].attr_ints("strides", {}), (std::vector<std::int64_t>{2, 2}));
  ASSERT_EQ(g.inputs.size(), 2u);  // x and W are both runtime inputs in this test
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor t = read_tensor_pb(dir + fmt::format("test_data_set_0/input_{}.pb", i));
    EXPECT_EQ(t.shape(), g.tensor(g.inputs[i]).shape) << g.inputs[i];
    EXPECT_EQ(t.dtype(), DType::F32);
  }
  const Tensor out = read_tensor_pb(dir + "test_data_set_0/output_0.pb");
  EXPECT_EQ(out.shape(), (Shape{1, 1, 4, 3}));
}

TEST_F(OnnxIo, ReadsPytorchConvertedModels) {
  const std::string base = kTestData + "pytorch-converted/";
  if (!fs::exists(base)) GTEST_SKIP() << "libonnx-testdata not installed";
  // The two opset-12 models of the set (the rest are opset 6).
  for (const char* name :
       {"test_MaxPool1d_stride_padding_dilation", "test_MaxPool2d_stride_padding_dilation"}) {
    const std::string dir = base + name + "/";
    const Graph g = read_onnx(dir + "model.onnx");
    EXPECT_EQ(g.metadata.at("onnx.opset"), "12");
    EXPECT_EQ(node_of(g, "MaxPool").op_type, "MaxPool") << name;
    EXPECT_NO_THROW(g.validate()) << name;
    ASSERT_EQ(g.inputs.size(), 1u) << name;
    const Tensor in = read_tensor_pb(dir + "test_data_set_0/input_0.pb");
    EXPECT_EQ(in.shape(), g.tensor(g.inputs[0]).shape) << name;
  }
  // Opset 6 is outside 7..17: refused cleanly, naming the file and opset.
  const std::string conv = base + "test_Conv2d/model.onnx";
  const auto msg = error_of<UnsupportedError>([&] { read_onnx(conv); });
  EXPECT_NE(msg.find(conv), std::string::npos) << msg;
  EXPECT_NE(msg.find("opset 6"), std::string::npos) << msg;
  // Its test data still reads (read_tensor_pb does not care about opsets).
  const Tensor in = read_tensor_pb(base + "test_Conv2d/test_data_set_0/input_0.pb");
  EXPECT_EQ(in.rank(), 4u);
}

// Every backend node test either reads or fails with an orchid::Error: never a crash.
TEST_F(OnnxIo, BackendNodeSuiteReadsOrFailsCleanly) {
  const std::string base = kTestData + "node/";
  if (!fs::exists(base)) GTEST_SKIP() << "libonnx-testdata not installed";
  int ok = 0, refused = 0;
  for (const auto& entry : fs::directory_iterator(base)) {
    const std::string model = (entry.path() / "model.onnx").string();
    if (!fs::exists(model)) continue;
    try {
      const Graph g = read_onnx(model);
      EXPECT_NO_THROW(g.validate()) << model;
      ++ok;
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(ok, 500) << "refused " << refused;
}

TEST_F(OnnxIo, ReadTensorPbErrors) {
  write_bytes("bad.pb", std::string("\xff\xff\xff\xff\xff", 5));
  for (const char* name : {"nothere.pb", "bad.pb"}) {
    const auto msg = error_of([&] { read_tensor_pb(path(name)); });
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- rewrite semantics

namespace semantics {

bool ops_available(std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (!find_op_schema(op)) return false;
  }
  return true;
}

Tensor run_single_output(Graph g, const Tensor& x) {
  make_static(g);  // the pipeline's shape inference + folding (Shape -> constant)
  ReferenceInterpreter interpreter(g);
  return interpreter.run({{"X", x}}).at(g.outputs.at(0));
}

}  // namespace semantics

TEST_F(OnnxIo, OldSoftmaxRewriteComputesTwoDimensionalSoftmax) {
  if (!semantics::ops_available({"Flatten", "Shape", "Softmax", "Reshape"})) GTEST_SKIP();
  auto m = one_op(11, "Softmax", {2, 3, 4});  // axis 1: softmax over each row of 12
  std::vector<float> xs(24);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = 0.1f * static_cast<float>(i % 7);
  const Tensor y =
      semantics::run_single_output(read_onnx(save(m)), Tensor::from_vector<float>({2, 3, 4}, xs));
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  for (int b = 0; b < 2; ++b) {
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += std::exp(xs[b * 12 + i]);
    for (int i = 0; i < 12; ++i) {
      EXPECT_NEAR(y.values<float>()[b * 12 + i], std::exp(xs[b * 12 + i]) / sum, 1e-6);
    }
  }
}

TEST_F(OnnxIo, UpsampleRewriteRepeatsNearestPixels) {
  if (!semantics::ops_available({"Resize"})) GTEST_SKIP();
  auto m = one_op(7, "Upsample", {1, 1, 2, 2});
  set_floats(first_node(m), "scales", {1.f, 1.f, 2.f, 3.f});
  const Tensor y = semantics::run_single_output(
      read_onnx(save(m)), Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4}));
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
  const std::vector<float> expected = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                       3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  EXPECT_EQ(y.to_floats(), expected);
}

// ---------------------------------------------------------------- hostile external data

namespace hostile {

// A secret outside the model folder that no external-data location may reach.
struct Outside {
  fs::path dir;
  fs::path secret;
  explicit Outside(const fs::path& model_dir) {
    dir = model_dir.parent_path() / (model_dir.filename().string() + "_outside");
    fs::create_directories(dir);
    secret = dir / "secret.bin";
    std::ofstream(secret, std::ios::binary) << std::string(108 * 4, 's');
  }
  ~Outside() { fs::remove_all(dir); }
};

}  // namespace hostile

TEST_F(OnnxIo, ExternalDataSymlinksLeavingTheModelFolderAreRefused) {
  const hostile::Outside outside(dir_);
  fs::create_symlink(outside.secret, dir_ / "link.bin");                      // file link
  fs::create_directory_symlink(outside.dir, dir_ / "linked_dir");             // folder link
  fs::create_symlink(fs::path("..") / outside.dir.filename() / "secret.bin",  // relative link
                     dir_ / "relative.bin");
  fs::create_directories(dir_ / "sub");
  fs::create_symlink(fs::path("../..") / outside.dir.filename(), dir_ / "sub" / "up");
  for (const std::string location :
       {"link.bin", "linked_dir/secret.bin", "relative.bin", "sub/up/secret.bin"}) {
    const std::string file = save(external_conv_model(location, 0));
    const auto msg = error_of([&] { read_onnx(file); });
    EXPECT_NE(msg.find("outside the model folder"), std::string::npos) << location << ": " << msg;
    EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
    // materialize would copy the bytes into a new model: it refuses the same way.
    const auto copy = error_of([&] { materialize_stripped_weights(file, path("out.onnx")); });
    EXPECT_NE(copy.find("outside the model folder"), std::string::npos) << location << ": " << copy;
    EXPECT_FALSE(fs::exists(path("out.onnx")));
  }
}

TEST_F(OnnxIo, ExternalDataSymlinkInsideTheModelFolderIsRead) {
  const auto w = iota(108);
  write_bytes("real.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  fs::create_symlink("real.bin", dir_ / "alias.bin");
  const Graph g = read_onnx(save(external_conv_model("alias.bin", 0)));
  EXPECT_EQ(g.tensor("W").data->to_floats(), w);
}

TEST_F(OnnxIo, ExternalDataMustBeARegularFile) {
  fs::create_directories(dir_ / "folder.bin");
  ASSERT_EQ(::mkfifo(path("fifo.bin").c_str(), 0600), 0);
  for (const std::string location : {"folder.bin", "fifo.bin"}) {
    const auto msg = error_of([&] { read_onnx(save(external_conv_model(location, 0))); });
    EXPECT_NE(msg.find("not a regular file"), std::string::npos) << location << ": " << msg;
  }
}

TEST_F(OnnxIo, DeclaredSizesAreCheckedBeforeAnythingIsAllocated) {
  // A 2^40-element stripped weight: refused by name before regeneration allocates 4 TiB.
  auto m = stripped_model(true);
  auto& w = *m.mutable_graph()->mutable_initializer(0);
  w.clear_dims();
  for (auto d : {1024, 1024, 1024, 1024}) w.add_dims(d);
  const auto msg = error_of([&] { read_onnx(save(m)); });
  EXPECT_NE(msg.find("conv.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("memory budget"), std::string::npos) << msg;
  // Dimensions whose product overflows 64 bits.
  auto o = conv_model();
  auto& b = *o.mutable_graph()->mutable_initializer(1);
  b.clear_dims();
  for (auto d : {std::int64_t{1} << 62, std::int64_t{4}}) b.add_dims(d);
  const auto overflow = error_of([&] { read_onnx(save(o)); });
  EXPECT_NE(overflow.find("'B'"), std::string::npos) << overflow;
  EXPECT_NE(overflow.find("too many elements"), std::string::npos) << overflow;
}

TEST_F(OnnxIo, MemoryBudgetIsConfigurable) {
  const std::string file = save(conv_model());
  set_memory_budget(256);  // W alone holds 432 bytes
  const auto msg = error_of([&] { read_onnx(file); });
  set_memory_budget(0);
  EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("432 bytes"), std::string::npos) << msg;
  EXPECT_NO_THROW(read_onnx(file));
}

// Found by fuzz_onnx_import: a Constant whose 'value' attribute is not a tensor ended in
// std::bad_variant_access ("orchid: internal error"). Both the fuzzer's input and a
// hand-built model are one clear error now.
TEST_F(OnnxIo, FuzzRegressionConstantValueThatIsNotATensor) {
  auto m = make_model();
  set_int(add_node(m, "Constant", {}, {"c"}, "const"), "value", 3);
  add_output(m, "c");
  const auto msg = error_of([&] { read_onnx(save(m)); });
  EXPECT_NE(msg.find("'value' must be a tensor"), std::string::npos) << msg;
  const std::string found =
      std::string(ORCHID_TEST_DATA_DIR) + "/fuzz_constant_value_not_a_tensor.onnx";
  EXPECT_NE(error_of([&] { read_onnx(found); }), "");
}

// Found by fuzz_onnx_import: ConvInteger (and QLinearConv) with a scalar weight read the
// weight's first dimension before Conv's shape check ("orchid: internal error:
// vector::_M_range_check"). Both the fuzzer's input and a hand-built model are one clear
// error now.
// Found by fuzz_onnx_import on the merged code of 2026-12-04: a Slice without axes and
// more starts than the input has axes indexed the shape past its end.
TEST_F(OnnxIo, FuzzRegressionSliceWithMoreStartsThanAxes) {
  auto m = make_model();
  add_input(m, "x", {2, 3});
  for (const char* name : {"starts", "ends"}) {
    TensorProto t;
    t.set_name(name);
    t.set_data_type(TensorProto::INT64);
    t.add_dims(3);
    const std::int64_t values[3] = {0, 0, 0};
    t.set_raw_data(reinterpret_cast<const char*>(values), sizeof values);
    add_init(m, t);
  }
  add_node(m, "Slice", {"x", "starts", "ends"}, {"y"}, "cut");
  add_output(m, "y");
  const auto msg = error_of([&] { load_model(save(m)); });
  EXPECT_NE(msg.find("'cut'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 starts but no axes for a rank-2 input"), std::string::npos) << msg;
  const std::string found =
      std::string(ORCHID_TEST_DATA_DIR) + "/fuzz_slice_more_starts_than_axes.onnx";
  EXPECT_NE(error_of([&] { load_model(found); }), "");
}

// Found by fuzz_onnx_import: an old-opset Clip without inputs made the opset upgrade read
// past the end of its input list (std::out_of_range escaped as a crash).
TEST_F(OnnxIo, FuzzRegressionOldClipWithoutInputs) {
  auto m = make_model(9);
  add_input(m, "x", {2, 3});
  add_node(m, "Clip", {}, {"y"}, "clamp");
  add_output(m, "y");
  const auto msg = error_of([&] { load_model(save(m)); });
  EXPECT_NE(msg.find("'clamp'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Clip needs its first input"), std::string::npos) << msg;
  const std::string found = std::string(ORCHID_TEST_DATA_DIR) + "/fuzz_clip_without_inputs.onnx";
  EXPECT_NE(error_of([&] { load_model(found); }), "");
}

// Found by fuzz_onnx_import: a Split of a scalar read its shape at the split axis.
TEST_F(OnnxIo, FuzzRegressionSplitOfAScalar) {
  auto m = make_model();
  add_input(m, "x", {});
  add_node(m, "Split", {"x"}, {"a", "b"}, "halves");
  add_output(m, "a");
  add_output(m, "b");
  const auto msg = error_of([&] { load_model(save(m)); });
  EXPECT_NE(msg.find("'halves'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot split a scalar"), std::string::npos) << msg;
  const std::string found = std::string(ORCHID_TEST_DATA_DIR) + "/fuzz_split_of_a_scalar.onnx";
  EXPECT_NE(error_of([&] { load_model(found); }), "");
}

TEST_F(OnnxIo, FuzzRegressionQuantizedConvWithScalarWeight) {
  for (const char* op : {"ConvInteger", "QLinearConv"}) {
    auto m = make_model();
    add_input(m, "x", {1, 2, 4, 4}, TensorProto::UINT8);
    add_input(m, "w", {}, TensorProto::INT8);
    add_input(m, "s", {}, TensorProto::FLOAT);
    add_input(m, "z", {}, TensorProto::UINT8);
    add_input(m, "wz", {}, TensorProto::INT8);
    if (std::string(op) == "ConvInteger") {
      add_node(m, op, {"x", "w"}, {"y"}, "qconv");
    } else {
      add_node(m, op, {"x", "s", "z", "w", "s", "wz", "s", "z"}, {"y"}, "qconv");
    }
    add_output(m, "y");
    const auto msg = error_of([&] { load_model(save(m)); });
    EXPECT_NE(msg.find("'qconv'"), std::string::npos) << op << ": " << msg;
    EXPECT_NE(msg.find("scalar"), std::string::npos) << op << ": " << msg;
  }
  const std::string found =
      std::string(ORCHID_TEST_DATA_DIR) + "/fuzz_conv_integer_scalar_weight.onnx";
  EXPECT_NE(error_of([&] { load_model(found); }), "");
}

}  // namespace
