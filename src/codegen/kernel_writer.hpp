// Writes the body of one device kernel in the portable dialect. Values are produced on
// demand: value(t, coords) emits the statements that compute tensor `t` at one
// coordinate and returns the variable holding it. A tensor produced by a node that the
// kernel computes inline (elementwise ops, and layout ops as index arithmetic) is
// computed from its inputs at the mapped coordinates; any other tensor is loaded from
// device memory. Results are reused within a scope (common subexpressions), so a chain
// such as softmax's exp(x - max) is computed once per element.
//
// A kernel family may bind a tensor to a register (a GEMM accumulator, a row's
// reduction): reading it at the coordinates it was computed for yields the register;
// reading it anywhere else throws FusionRefused, and the planner then stores that
// tensor to memory instead.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/device_program.hpp"
#include "ir/graph.hpp"

namespace orchid::codegen {

using Coords = std::vector<std::string>;

// Thrown while writing a kernel when `tensor` cannot be computed where it is needed.
struct FusionRefused {
  std::string tensor;
};

struct WriterEnvironment {
  const Graph* graph = nullptr;
  // Tensors this kernel computes from their producer (instead of loading them).
  std::unordered_map<std::string, const Node*> inline_producers;
  // Where a tensor read from (or written to) memory lives.
  std::function<DeviceTensor(const std::string&)> locate;
  // Adds a constant table (an index map derived from a node's attributes) to the
  // weights buffer under `key`; returns its offset there.
  std::function<std::int64_t(const std::string& key, std::shared_ptr<const Tensor>)> add_table;
  bool wide_index = false;  // 64-bit index arithmetic (some tensor has >= 2^31 elements)
  bool vectorize = true;    // float4 loads/stores where shapes and offsets allow
};

class KernelWriter {
 public:
  explicit KernelWriter(const WriterEnvironment& env);

  // Index type of this kernel: "i32" or "i64".
  const std::string& index_type() const { return index_type_; }
  void line(const std::string& text);
  // Opens a block ("for (...) {"), with its own scope of reusable values.
  void open(const std::string& header);
  void close();
  std::string fresh(const std::string& prefix);

  // `t` at `coords` (one index expression per axis of `t`, or of any shape `t`
  // broadcasts to: leading coordinates are dropped, size-1 axes read index 0).
  std::string value(const std::string& t, const Coords& coords);
  void bind(const std::string& t, const std::string& reg, const Coords& coords);
  void unbind(const std::string& t);
  // Records that `t` at `coords` is already held in variable `v` in the current scope
  // (a node computing several outputs at once, such as TopK's values and indices).
  void remember(const std::string& t, const Coords& coords, const std::string& v);

  // Writes `v` to tensor `t` at `coords` (a coordinate of `t`'s own shape).
  void store(const std::string& t, const Coords& coords, const std::string& v);
  // The pointer variable for `t` (declared once at the kernel's top).
  std::string pointer(const std::string& t, bool writable);

  // Emits index variables for the coordinates of `linear` in `shape`.
  Coords delinearize(const std::string& linear, const Shape& shape);
  std::string linearize(const Shape& shape, const Coords& coords) const;

  // The kernel: signature, pointer declarations, `shared` declarations and the body.
  std::string finish(const std::string& name, const std::string& shared_decls) const;

  // Vector lanes: the families that process four consecutive elements of the innermost
  // axis per thread name the four index variables of that coordinate (lane 0 a multiple
  // of 4). While set, a float32 tensor read or stored at a lane coordinate whose
  // address is 16-byte aligned is accessed as one float4, shared by the four lanes.
  // Callers set lanes only where vector_friendly() holds.
  void set_vector_lanes(const Coords& lanes);
  void clear_vector_lanes() { lanes_.clear(); }
  // 4 when some stage of this kernel used vector lanes, else 1.
  int vector_width() const { return vector_width_; }
  // True when `tensors`, computed inline, reach memory only through elementwise ops
  // (and Expand), so every load's innermost coordinate is the stage's own innermost
  // coordinate or a broadcast 0, and vectorisation is enabled.
  bool vector_friendly(const std::vector<std::string>& tensors) const;
  // Stores one value per lane: `coords` of lane 0 with the lane variable innermost.
  void store_lanes(const std::string& t, const std::vector<Coords>& lane_coords,
                   const std::vector<std::string>& values);

  static std::string c_type(DType dtype);
  const Graph& graph() const { return *env_.graph; }

 private:
  Coords normalized(const std::string& t, const Coords& coords) const;
  std::string compute(const Node& node, const std::string& t, const Coords& coords);
  std::string layout_value(const Node& node, const Coords& coords);
  std::string resize_value(const Node& node, const Coords& coords);
  std::string col2im_value(const Node& node, const Coords& coords);
  std::string pad_value(const Node& node, const Coords& coords);
  std::string table_pointer(const std::string& key, std::shared_ptr<const Tensor> table);
  std::string temp(DType dtype, const std::string& expr);
  // The lane (0..3) whose index variable ends `c`, when `t` can be read as a float4 there.
  int vector_lane(const std::string& t, const Coords& c) const;
  std::string index_temp(const std::string& expr);

  const WriterEnvironment& env_;
  std::string index_type_;
  std::ostringstream decls_, body_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<std::map<std::string, std::string>> scopes_;  // (tensor@coords) -> variable
  std::map<std::string, std::string> pointers_;
  struct Binding {
    std::string reg;
    Coords coords;
  };
  std::map<std::string, Binding> bindings_;
  Coords lanes_;
  int vector_width_ = 1;
};

// A literal of `dtype` in the dialect.
std::string literal(double value, DType dtype);

}  // namespace orchid::codegen
