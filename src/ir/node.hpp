// An operator instance: ONNX op type, attributes, named input and output tensors.
// The IR follows ONNX opset-17 semantics; the importer rewrites older forms into it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.hpp"

namespace orchid {

class Graph;

using Attribute = std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

std::string attribute_to_string(const Attribute& attribute);

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  std::map<std::string, Attribute> attributes;
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  // Control flow: If's then_branch/else_branch. A subgraph's inputs are the outer
  // tensors it reads (the importer appends them to this node's inputs after the
  // condition), so every subgraph is self-contained.
  std::map<std::string, std::shared_ptr<Graph>> subgraphs = {};

  // "Conv 'conv1'": how errors refer to a node.
  std::string describe() const;

  bool has_attribute(const std::string& key) const { return attributes.count(key) != 0; }
  // Typed attribute access; a wrong kind is an orchid::Error naming node and key.
  std::int64_t attr_int(const std::string& key, std::int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& key,
                                      const std::vector<std::int64_t>& fallback) const;
  std::vector<float> attr_floats(const std::string& key, const std::vector<float>& fallback) const;
  std::int64_t required_int(const std::string& key) const;
  std::vector<std::int64_t> required_ints(const std::string& key) const;
  const Tensor& required_tensor(const std::string& key) const;

  // Input i if present and non-empty.
  bool has_input(std::size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

}  // namespace orchid
