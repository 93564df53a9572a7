#include "fission/qdq_linear.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace orchid::fission_detail {

namespace {

bool all_equal(const Tensor& t, double v) {
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (t.get_as_double(i) != v) return false;
  }
  return true;
}

bool is_int8(DType d) {
  return d == DType::I8 || d == DType::U8;
}

// Checks one scale / zero point pair: constant, and per tensor unless `per_channel`
// (then one value per entry of `channels`).
bool params_ok(const std::string& scale, const std::string& zp,
               const std::function<const Tensor*(const std::string&)>& constant_of,
               std::int64_t per_channel, const char* what, std::string& why) {
  const Tensor* s = scale.empty() ? nullptr : constant_of(scale);
  if (!s) {
    why = fmt::format("the {} scale is computed at run time", what);
    return false;
  }
  const Tensor* z = zp.empty() ? nullptr : constant_of(zp);
  if (!zp.empty() && !z) {
    why = fmt::format("the {} zero point is computed at run time", what);
    return false;
  }
  const std::int64_t n = s->numel();
  if (n != 1 && (per_channel == 0 || n != per_channel)) {
    why = fmt::format("{} scales are not per tensor{}", what,
                      per_channel ? " or per output channel" : "");
    return false;
  }
  if (z && z->numel() != n) {
    why = fmt::format("the {} zero point does not match its scale", what);
    return false;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = s->get_as_double(i);
    if (!(v > 0) || !std::isfinite(v)) {
      why = fmt::format("a {} scale is not positive", what);
      return false;
    }
  }
  return true;
}

}  // namespace

bool int8_linear_eligible(const Node& node,
                          const std::function<const Tensor*(const std::string&)>& constant_of,
                          const std::function<const Shape&(const std::string&)>& shape_of,
                          std::string& why) {
  const bool conv = node.op_type == "QLinearConv";
  if (!conv && node.op_type != "QLinearMatMul") {
    why = "not a QLinearConv or QLinearMatMul";
    return false;
  }
  auto in = [&](std::size_t i) { return node.has_input(i) ? node.inputs[i] : std::string(); };
  const std::string w = in(3);
  const Tensor* wv = constant_of(w);
  if (!wv) {
    why = "the weights are computed at run time";
    return false;
  }
  if (wv->dtype() != DType::I8) {
    why = "the weights are not int8 (oneDNN's int8 kernels take s8 weights)";
    return false;
  }
  const Shape& x = shape_of(in(0));
  const Shape& ws = wv->shape();
  if (conv && (x.size() != 4 || ws.size() != 4)) {
    why = "not a 2-D convolution";
    return false;
  }
  if (!conv && (ws.size() != 2 || x.size() < 2)) {
    why = "the weights are not a matrix";
    return false;
  }
  const std::int64_t out_channels = conv ? ws[0] : ws[1];
  if (!params_ok(in(1), in(2), constant_of, 0, "input", why) ||
      !params_ok(in(4), in(5), constant_of, out_channels, "weight", why) ||
      !params_ok(in(6), in(7), constant_of, 0, "output", why)) {
    return false;
  }
  if (const Tensor* wz = constant_of(in(5)); wz && !all_equal(*wz, 0.0)) {
    why = "the weight zero points are not 0";
    return false;
  }
  if (conv && !in(8).empty() && !constant_of(in(8))) {
    why = "the bias is computed at run time";
    return false;
  }
  if (conv && node.attr_string("auto_pad", "NOTSET") != "NOTSET") {
    why = "auto_pad";
    return false;
  }
  return true;
}

namespace {

struct Readers {
  std::map<std::string, std::vector<std::size_t>> of;  // tensor -> reading node indices
  std::set<std::string> outputs;                       // graph outputs
};

}  // namespace

void fuse_qdq_linear(const Graph& model, std::vector<Node>& nodes, std::vector<std::string>& notes,
                     std::map<std::string, Tensor>& new_constants) {
  std::map<std::string, std::size_t> producer;
  Readers readers;
  readers.outputs.insert(model.outputs.begin(), model.outputs.end());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& o : nodes[i].outputs) producer[o] = i;
    for (const auto& t : nodes[i].inputs) {
      if (!t.empty()) readers.of[t].push_back(i);
    }
  }
  auto constant_of = [&](const std::string& t) -> const Tensor* {
    if (auto it = new_constants.find(t); it != new_constants.end()) return &it->second;
    if (t.empty() || !model.has_tensor(t)) return nullptr;
    return model.tensor(t).data.get();
  };
  auto shape_of = [&](const std::string& t) -> const Shape& { return model.tensor(t).shape; };
  auto dq_of = [&](const std::string& t) -> const Node* {
    auto it = producer.find(t);
    if (it == producer.end()) return nullptr;
    const Node& n = nodes[it->second];
    return n.op_type == "DequantizeLinear" && n.domain.empty() ? &n : nullptr;
  };
  auto in = [](const Node& n, std::size_t i) {
    return n.has_input(i) ? n.inputs[i] : std::string();
  };

  std::set<std::size_t> removed;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node& lin = nodes[i];
    const bool conv = lin.op_type == "Conv";
    if (lin.op_type == "Gemm" && lin.domain.empty() && dq_of(in(lin, 0)) && dq_of(in(lin, 1))) {
      notes.push_back(
          fmt::format("Gemm '{}': QDQ Gemm runs in fp32 after dequantization: only Conv and MatMul "
                      "become int8 linear primitives",
                      lin.name));
      continue;
    }
    if ((!conv && lin.op_type != "MatMul") || !lin.domain.empty()) continue;
    const Node* dx = dq_of(in(lin, 0));
    const Node* dw = dq_of(in(lin, 1));
    if (!dx || !dw || lin.outputs.size() != 1) continue;
    // The result's path to its QuantizeLinear: Conv -> [Relu] -> Q, each the only reader.
    std::size_t relu = nodes.size(), q = nodes.size();
    std::string y = lin.outputs[0];
    auto sole_reader = [&](const std::string& t, std::size_t& out) {
      auto it = readers.of.find(t);
      if (readers.outputs.count(t) || it == readers.of.end() || it->second.size() != 1)
        return false;
      out = it->second[0];
      return true;
    };
    std::size_t next = 0;
    if (!sole_reader(y, next)) continue;
    if (nodes[next].op_type == "Relu") {
      relu = next;
      if (!sole_reader(nodes[relu].outputs[0], next)) continue;
    }
    if (nodes[next].op_type != "QuantizeLinear" || !nodes[next].domain.empty()) continue;
    q = next;
    const Node& qn = nodes[q];
    // From here on the structure is the QDQ linear pattern: a refusal is worth a note.
    auto refuse = [&](const std::string& why) {
      notes.push_back(fmt::format("{} '{}': QDQ {} runs in fp32 after dequantization: {}",
                                  lin.op_type, lin.name, lin.op_type, why));
    };
    std::string bias = conv ? in(lin, 2) : std::string();
    // Exporters share equal initializers through Identity nodes (e.g. zero biases).
    while (!bias.empty() && producer.count(bias) && nodes[producer[bias]].op_type == "Identity") {
      bias = in(nodes[producer[bias]], 0);
    }
    const Node* db = bias.empty() ? nullptr : dq_of(bias);
    const Tensor* float_bias = bias.empty() || db ? nullptr : constant_of(bias);
    auto bias_in_accumulator_units = [&](const Node& b, const Node& x, const Tensor* w_scale) {
      const Tensor* bq = constant_of(in(b, 0));
      const Tensor* bs = constant_of(in(b, 1));
      const Tensor* xs = constant_of(in(x, 1));
      const Tensor* bz = constant_of(in(b, 2));
      bool ok =
          bq && bs && xs && w_scale && bq->dtype() == DType::I32 && (!bz || all_equal(*bz, 0.0));
      for (std::int64_t c = 0; ok && c < bs->numel(); ++c) {
        const double want =
            xs->get_as_double(0) * w_scale->get_as_double(w_scale->numel() == 1 ? 0 : c);
        ok = std::abs(bs->get_as_double(c) - want) <= 1e-6 * want;
      }
      return ok;
    };
    if (!bias.empty() && !db && (!float_bias || float_bias->dtype() != DType::F32)) {
      refuse("the bias is neither a DequantizeLinear of int32 nor a float constant");
      continue;
    }
    if (!constant_of(in(*dw, 0))) {
      refuse("the weights are computed at run time");
      continue;
    }
    if (!is_int8(model.tensor(in(*dx, 0)).dtype) || !is_int8(model.tensor(qn.outputs[0]).dtype)) {
      refuse("the activations are not int8/uint8");
      continue;
    }
    if (in(*dx, 2).empty() || in(*dw, 2).empty() || in(qn, 2).empty()) {
      refuse("a zero point is left out");
      continue;
    }
    // Per-axis weights must follow the output channels (Conv axis 0, MatMul axis 1).
    const Tensor* ws = constant_of(in(*dw, 1));
    if (ws && ws->numel() > 1) {
      const std::int64_t rank = static_cast<std::int64_t>(shape_of(in(*dw, 0)).size());
      std::int64_t axis = dw->attr_int("axis", 1);
      if (axis < 0) axis += rank;
      if (axis != (conv ? 0 : 1) || dw->attributes.count("block_size")) {
        refuse("the weight scales do not follow the output channels");
        continue;
      }
    }
    Node fused;
    fused.op_type = conv ? "QLinearConv" : "QLinearMatMul";
    fused.name = lin.name;
    fused.inputs = {in(*dx, 0), in(*dx, 1), in(*dx, 2), in(*dw, 0),
                    in(*dw, 1), in(*dw, 2), in(qn, 1),  in(qn, 2)};
    // A DequantizeLinear'd bias in other units (e.g. another conv's bias shared through an
    // Identity) is taken as its float value and quantized again below.
    Tensor dequantized_bias;
    if (db && !bias_in_accumulator_units(*db, *dx, ws)) {
      const Tensor* bq = constant_of(in(*db, 0));
      const Tensor* bs = constant_of(in(*db, 1));
      const Tensor* bz = constant_of(in(*db, 2));
      if (!bq || !bs || bq->shape().size() != 1 ||
          (bs->numel() != 1 && bs->numel() != bq->numel())) {
        refuse("the bias's DequantizeLinear parameters are not constants per channel");
        continue;
      }
      dequantized_bias = Tensor(DType::F32, bq->shape());
      for (std::int64_t c = 0; c < bq->numel(); ++c) {
        const std::int64_t k = bs->numel() == 1 ? 0 : c;
        const double zp = bz ? bz->get_as_double(bz->numel() == 1 ? 0 : c) : 0.0;
        dequantized_bias.data<float>()[c] =
            static_cast<float>((bq->get_as_double(c) - zp) * bs->get_as_double(k));
      }
      float_bias = &dequantized_bias;
      db = nullptr;
    }
    if (db) {
      const Tensor* bq = constant_of(in(*db, 0));
      const Tensor* bs = constant_of(in(*db, 1));
      const Tensor* xs = constant_of(in(*dx, 1));
      const Tensor* bz = constant_of(in(*db, 2));
      bool ok = bq && bs && xs && ws && bq->dtype() == DType::I32 && (!bz || all_equal(*bz, 0.0));
      // Its scale must be x_scale * w_scale, the accumulator's unit.
      for (std::int64_t c = 0; ok && c < bs->numel(); ++c) {
        const double want = xs->get_as_double(0) * ws->get_as_double(ws->numel() == 1 ? 0 : c);
        ok = std::abs(bs->get_as_double(c) - want) <= 1e-6 * want;
      }
      if (!ok) {
        refuse("the bias is not int32 in units of x_scale * w_scale");
        continue;
      }
      fused.inputs.push_back(in(*db, 0));
    } else if (float_bias && !all_equal(*float_bias, 0.0)) {
      const Tensor* xs = constant_of(in(*dx, 1));
      const std::int64_t channels = float_bias->numel();
      Tensor q(DType::I32, {channels});
      bool ok = xs && ws;
      for (std::int64_t c = 0; ok && c < channels; ++c) {
        const double unit = xs->get_as_double(0) * ws->get_as_double(ws->numel() == 1 ? 0 : c);
        const double v = std::nearbyint(float_bias->get_as_double(c) / unit);
        ok = unit > 0 && std::abs(v) < 2147483647.0;
        if (ok) q.data<std::int32_t>()[c] = static_cast<std::int32_t>(v);
      }
      if (!ok) {
        refuse("the float bias does not fit int32 in units of x_scale * w_scale");
        continue;
      }
      const std::string name = lin.name + "/int8_bias";
      new_constants[name] = std::move(q);
      fused.inputs.push_back(name);
    }
    fused.outputs = {qn.outputs[0]};
    fused.attributes = conv ? lin.attributes : std::map<std::string, Attribute>{};
    if (relu != nodes.size()) {
      // Relu then Quantize equals Quantize alone when the zero point is the type's least
      // value (saturation clamps what Relu zeroes); otherwise keep it in fp32.
      const Tensor* yz = constant_of(in(qn, 2));
      const double lowest = model.tensor(qn.outputs[0]).dtype == DType::I8 ? -128.0 : 0.0;
      if (!yz || yz->numel() != 1 || yz->get_as_double(0) != lowest) {
        refuse("a Relu the output's zero point does not absorb");
        continue;
      }
    }
    std::string why;
    if (!int8_linear_eligible(fused, constant_of, shape_of, why)) {
      new_constants.erase(lin.name + "/int8_bias");
      refuse(why);
      continue;
    }
    lin = std::move(fused);
    removed.insert(q);
    if (relu != nodes.size()) removed.insert(relu);
  }
  if (removed.empty()) return;
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!removed.count(i)) kept.push_back(std::move(nodes[i]));
  }
  // DequantizeLinear nodes nothing reads any more (the fused ops read their inputs).
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> read(readers.outputs);
    for (const Node& n : kept) read.insert(n.inputs.begin(), n.inputs.end());
    for (auto it = kept.begin(); it != kept.end(); ++it) {
      if (it->op_type == "DequantizeLinear" && !read.count(it->outputs[0])) {
        kept.erase(it);
        changed = true;
        break;
      }
    }
  }
  nodes = std::move(kept);
}

}  // namespace orchid::fission_detail
