// Primitives: the ops a fissioned graph may contain. A primitive graph is an ordinary
// orchid::Graph restricted to these ops, so it runs on the reference interpreter and
// can be written back to ONNX. Each primitive belongs to one of four classes, a trait of
// its op (OpTraits::primitive).
#pragma once

#include <cstddef>
#include <map>
#include <string_view>

#include "ir/graph.hpp"
#include "ir/node.hpp"
#include "ir/op_traits.hpp"  // PrimitiveClass

namespace orchid {

std::string_view primitive_class_name(PrimitiveClass c);

// True for ops allowed in a primitive graph.
bool is_primitive(const Node& node);
// The class of a primitive; an orchid::Error naming the node if it is not one.
PrimitiveClass primitive_class(const Node& node);

// How many nodes of each class a primitive graph has (classes with none are absent).
std::map<PrimitiveClass, std::size_t> primitive_class_histogram(const Graph& graph);

}  // namespace orchid
