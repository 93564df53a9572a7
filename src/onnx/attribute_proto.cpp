#include "onnx/attribute_proto.hpp"

#include "onnx/tensor_proto.hpp"
#include "util/error.hpp"

namespace orchid {

using onnx::AttributeProto;

namespace {

// IR version 1 files may leave `type` unset; the populated field then says the kind.
AttributeProto::AttributeType deduce_type(const AttributeProto& a) {
  if (a.type() != AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return AttributeProto::FLOAT;
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  if (a.has_sparse_tensor()) return AttributeProto::SPARSE_TENSOR;
  if (a.floats_size()) return AttributeProto::FLOATS;
  if (a.ints_size()) return AttributeProto::INTS;
  if (a.strings_size()) return AttributeProto::STRINGS;
  if (a.graphs_size()) return AttributeProto::GRAPHS;
  return AttributeProto::UNDEFINED;
}

}  // namespace

Attribute attribute_from_proto(const AttributeProto& proto, const std::string& base_dir,
                               const std::string& context) {
  const std::string where = context + ": attribute '" + proto.name() + "'";
  if (!proto.ref_attr_name().empty()) {
    unsupported("{} refers to a function attribute ('{}')", where, proto.ref_attr_name());
  }
  switch (deduce_type(proto)) {
    case AttributeProto::INT:
      return proto.i();
    case AttributeProto::FLOAT:
      return proto.f();
    case AttributeProto::STRING:
      return proto.s();
    case AttributeProto::INTS:
      return std::vector<std::int64_t>(proto.ints().begin(), proto.ints().end());
    case AttributeProto::FLOATS:
      return std::vector<float>(proto.floats().begin(), proto.floats().end());
    case AttributeProto::STRINGS:
      return std::vector<std::string>(proto.strings().begin(), proto.strings().end());
    case AttributeProto::TENSOR:
      return tensor_from_proto(proto.t(), base_dir, where);
    case AttributeProto::GRAPH:
    case AttributeProto::GRAPHS:
      unsupported("{} is a subgraph; only If and Loop subgraphs are supported", where);
    case AttributeProto::SPARSE_TENSOR:
    case AttributeProto::SPARSE_TENSORS:
      unsupported("{} is a sparse tensor", where);
    case AttributeProto::TENSORS:
      unsupported("{} is a list of tensors", where);
    case AttributeProto::TYPE_PROTO:
    case AttributeProto::TYPE_PROTOS:
      unsupported("{} is a type proto", where);
    default:
      break;
  }
  fail("{} has no valid type (type {}) and no value", where, static_cast<int>(proto.type()));
}

void attribute_to_proto(const std::string& name, const Attribute& value, AttributeProto& proto) {
  proto.set_name(name);
  struct Visitor {
    AttributeProto& p;
    void operator()(std::int64_t v) const {
      p.set_type(AttributeProto::INT);
      p.set_i(v);
    }
    void operator()(float v) const {
      p.set_type(AttributeProto::FLOAT);
      p.set_f(v);
    }
    void operator()(const std::string& v) const {
      p.set_type(AttributeProto::STRING);
      p.set_s(v);
    }
    void operator()(const std::vector<std::int64_t>& v) const {
      p.set_type(AttributeProto::INTS);
      for (auto x : v) p.add_ints(x);
    }
    void operator()(const std::vector<float>& v) const {
      p.set_type(AttributeProto::FLOATS);
      for (auto x : v) p.add_floats(x);
    }
    void operator()(const std::vector<std::string>& v) const {
      p.set_type(AttributeProto::STRINGS);
      for (const auto& x : v) p.add_strings(x);
    }
    void operator()(const Tensor& v) const {
      p.set_type(AttributeProto::TENSOR);
      tensor_to_proto(v, *p.mutable_t());
    }
  };
  std::visit(Visitor{proto}, value);
}

}  // namespace orchid
