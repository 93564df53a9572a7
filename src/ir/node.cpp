#include "ir/node.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.hpp"

namespace orchid {

std::string attribute_to_string(const Attribute& attribute) {
  struct Visitor {
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(float v) const { return fmt::format("{}", v); }
    std::string operator()(const std::string& v) const { return fmt::format("\"{}\"", v); }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
    std::string operator()(const std::vector<float>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
    std::string operator()(const Tensor& t) const {
      return fmt::format("tensor<{},{}>", dtype_name(t.dtype()), shape_to_string(t.shape()));
    }
  };
  return std::visit(Visitor{}, attribute);
}

std::string Node::describe() const {
  return fmt::format("{} node '{}'", op_type, name);
}

namespace {

template <typename T>
const T* get(const Node& node, const std::string& key, const char* kind) {
  auto it = node.attributes.find(key);
  if (it == node.attributes.end()) return nullptr;
  if (const T* v = std::get_if<T>(&it->second)) return v;
  fail("{}: attribute '{}' should be {} but is {}", node.describe(), key, kind,
       attribute_to_string(it->second));
}

}  // namespace

std::int64_t Node::attr_int(const std::string& key, std::int64_t fallback) const {
  const auto* v = get<std::int64_t>(*this, key, "an int");
  return v ? *v : fallback;
}

float Node::attr_float(const std::string& key, float fallback) const {
  auto it = attributes.find(key);
  if (it != attributes.end()) {
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<float>(*i);
  }
  const auto* v = get<float>(*this, key, "a float");
  return v ? *v : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const auto* v = get<std::string>(*this, key, "a string");
  return v ? *v : fallback;
}

std::vector<std::int64_t> Node::attr_ints(const std::string& key,
                                          const std::vector<std::int64_t>& fallback) const {
  const auto* v = get<std::vector<std::int64_t>>(*this, key, "a list of ints");
  return v ? *v : fallback;
}

std::vector<float> Node::attr_floats(const std::string& key,
                                     const std::vector<float>& fallback) const {
  const auto* v = get<std::vector<float>>(*this, key, "a list of floats");
  return v ? *v : fallback;
}

std::int64_t Node::required_int(const std::string& key) const {
  const auto* v = get<std::int64_t>(*this, key, "an int");
  if (!v) fail("{}: required attribute '{}' is missing", describe(), key);
  return *v;
}

std::vector<std::int64_t> Node::required_ints(const std::string& key) const {
  const auto* v = get<std::vector<std::int64_t>>(*this, key, "a list of ints");
  if (!v) fail("{}: required attribute '{}' is missing", describe(), key);
  return *v;
}

const Tensor& Node::required_tensor(const std::string& key) const {
  const auto* v = get<Tensor>(*this, key, "a tensor");
  if (!v) fail("{}: required attribute '{}' is missing", describe(), key);
  return *v;
}

}  // namespace orchid
