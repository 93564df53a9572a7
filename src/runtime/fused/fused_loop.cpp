#include "runtime/fused/fused_loop.hpp"
#include "runtime/fused/vector_math.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "eval/reference/elementwise_util.hpp"
#include "eval/reference/reference_kernels.hpp"
#include "ir/op_traits.hpp"
#include "ir/ops/reduction_util.hpp"
#include "runtime/aligned_buffer.hpp"
#include "util/error.hpp"
#include "util/refusable.hpp"

namespace orchid {

namespace {

// Inside the compiler: returns the refusal of `expr` from the enclosing function.
#define ORCHID_TRY(expr)         \
  do {                           \
    if (auto r_ = (expr); !r_) { \
      return r_.refusal();       \
    }                            \
  } while (0)
// Declares `name` as the value of `expr`, or returns its refusal.
#define ORCHID_TRY_LET(name, expr)                    \
  auto name##_result = (expr);                        \
  if (!name##_result) return name##_result.refusal(); \
  auto name = std::move(*name##_result)

using Unary = UnaryFn;
using Binary = BinaryFn;
using Reduce = ReduceFn;

// Element indices and offsets while compiling, and the tables kept for maps that are not
// separable: 32 bits, half the memory of 64-bit ones on tables of a tensor's size (runs
// over tensors of 2^31 elements and more are refused).
using Index = std::int32_t;
using Indices = std::vector<Index>;

// Ops that only move elements: their reference kernels, run on a tensor of offsets,
// say which source element each output element copies. Constant-mode Pad writes a fill
// value, not a source element, and linear Resize blends several, so those stay out.
bool is_data_move(const Node& n) {
  if (op_traits(n.op_type).fused.kind != FusedForm::Kind::DataMove) return false;
  if (n.op_type == "Pad") return n.attr_string("mode", "constant") != "constant";
  if (n.op_type == "Resize") return n.attr_string("mode", "nearest") == "nearest";
  return true;
}

inline float apply_unary(Unary u, float x, float a, float b) {
  switch (u) {
    case Unary::Relu:
      return x < 0.0f ? 0.0f : x;
    case Unary::Sigmoid:
      return x >= 0.0f ? 1.0f / (1.0f + std::exp(-x)) : std::exp(x) / (1.0f + std::exp(x));
    case Unary::Tanh:
      return std::tanh(x);
    case Unary::Exp:
      return std::exp(x);
    case Unary::Log:
      return std::log(x);
    case Unary::Sqrt:
      return std::sqrt(x);
    case Unary::Reciprocal:
      return 1.0f / x;
    case Unary::Neg:
      return -x;
    case Unary::Abs:
      return std::fabs(x);
    case Unary::Erf:
      return std::erf(x);
    case Unary::Softplus:
      return std::max(x, 0.0f) + std::log1p(std::exp(-std::fabs(x)));
    case Unary::Floor:
      return std::floor(x);
    case Unary::Ceil:
      return std::ceil(x);
    case Unary::Sin:
      return std::sin(x);
    case Unary::Cos:
      return std::cos(x);
    case Unary::LeakyRelu:
      return x < 0.0f ? a * x : x;
    case Unary::Elu:
      return x < 0.0f ? a * std::expm1(x) : x;
    case Unary::Clip:
      return x < a ? a : (x > b ? b : x);  // NaN passes through
  }
  return x;
}

inline float apply_binary(Binary op, float x, float y) {
  switch (op) {
    case Binary::Add:
      return x + y;
    case Binary::Sub:
      return x - y;
    case Binary::Mul:
      return x * y;
    case Binary::Div:
      return x / y;
    case Binary::Pow:
      // Small integer powers as products (GPT-2's GELU cubes): std::pow is a library call
      // per element.
      if (y == 2.0f) return x * x;
      if (y == 3.0f) return x * x * x;
      return y == 0.5f ? std::sqrt(x) : std::pow(x, y);
    case Binary::Max:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<float>::quiet_NaN()
                                            : std::max(x, y);
    case Binary::Min:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<float>::quiet_NaN()
                                            : std::min(x, y);
    case Binary::PRelu:
      return x < 0.0f ? y * x : x;
  }
  return x;
}

// Where a loaded or stored element lives relative to its tensor's start, for element
// (r, c) of the loop: row_off[r] + col_off[c] when the map is separable, else table[r*C+c].
struct OffsetMap {
  Indices row_off, col_off, table;
  bool contiguous_cols = false;  // col_off[c] == c: a row is one contiguous run
  bool constant_cols = false;    // col_off[c] == 0: one value per row
  // Separable, with col_off not increasing: the columns in increasing col_off. A row then
  // touches memory in address order, each cache line in one go; a layout change from NHWC
  // with 32 channels otherwise hits 32 planes 4 KiB-multiples apart per pixel, which share
  // one L1 set and evict each other (Candy's NHWC -> NCHW loops ran 5x slower than plain).
  std::vector<std::int32_t> by_address;
  // Separable, with col_off repeating every `period` columns (a per-channel operand
  // broadcast over NHWC pixels): a row is the first `period` values, copied again (from 16
  // columns on; shorter ones are loaded column by column). An SE
  // block's scale over EfficientNet-B0's [1, 96, 56, 56] took 0.10 ms gathered by address
  // (the loop's rows of 1344 columns wrote every 96th element 14 times over).
  std::int64_t period = 0;
  // Separable, with the same offset for every row (of two or more): every row loads the
  // same values (a per-channel bias over rows of NHWC pixels), gathered once per run.
  bool same_every_row = false;

  static OffsetMap build(Indices flat, std::int64_t rows, std::int64_t cols) {
    OffsetMap m;
    m.row_off.resize(static_cast<std::size_t>(rows));
    m.col_off.resize(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows; ++r) m.row_off[r] = flat[r * cols];
    for (std::int64_t c = 0; c < cols; ++c) m.col_off[c] = flat[c] - flat[0];
    bool separable = true;
    for (std::int64_t r = 0; r < rows && separable; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        if (flat[r * cols + c] != std::int64_t{m.row_off[r]} + m.col_off[c]) {
          separable = false;
          break;
        }
      }
    }
    if (!separable) {
      m.row_off.clear();
      m.col_off.clear();
      m.table = std::move(flat);
      return m;
    }
    m.contiguous_cols = m.constant_cols = true;
    m.same_every_row = rows > 1;
    for (std::int64_t r = 1; r < rows && m.same_every_row; ++r) {
      m.same_every_row = m.row_off[r] == m.row_off[0];
    }
    for (std::int64_t p = 1; p <= cols / 2 && m.period == 0; ++p) {
      if (cols % p != 0) continue;
      bool repeats = true;
      for (std::int64_t c = p; c < cols && repeats; ++c) repeats = m.col_off[c] == m.col_off[c - p];
      if (repeats) m.period = p;
    }
    bool ascending = true;
    for (std::int64_t c = 0; c < cols; ++c) {
      m.contiguous_cols = m.contiguous_cols && m.col_off[c] == c;
      m.constant_cols = m.constant_cols && m.col_off[c] == 0;
      ascending = ascending && (c == 0 || m.col_off[c] > m.col_off[c - 1]);
    }
    if (!ascending && !m.constant_cols && m.period == 0) {
      m.by_address.resize(static_cast<std::size_t>(cols));
      std::iota(m.by_address.begin(), m.by_address.end(), 0);
      std::stable_sort(m.by_address.begin(), m.by_address.end(),
                       [&](std::int32_t a, std::int32_t b) { return m.col_off[a] < m.col_off[b]; });
    }
    return m;
  }
  std::int64_t at(std::int64_t r, std::int64_t c, std::int64_t cols) const {
    return table.empty() ? std::int64_t{row_off[r]} + col_off[c] : table[r * cols + c];
  }
  // Elements from the tensor's address to the last one the map touches, inclusive.
  std::int64_t span() const {
    if (!table.empty()) return std::int64_t{*std::max_element(table.begin(), table.end())} + 1;
    if (row_off.empty() || col_off.empty()) return 0;
    return std::int64_t{*std::max_element(row_off.begin(), row_off.end())} +
           *std::max_element(col_off.begin(), col_off.end()) + 1;
  }
  std::int64_t bytes() const {
    return static_cast<std::int64_t>((row_off.size() + col_off.size() + table.size()) *
                                     sizeof(Index));
  }
};

// An operand of an instruction: a full row buffer, a per-row scalar, or a constant.
struct Operand {
  enum class Kind { Full, Row, Imm } kind = Kind::Imm;
  int id = 0;
  float imm = 0;
};

struct Instr {
  enum class Kind { Load, LoadRow, Unary, Binary, Where, Reduce, Store, StoreRow } kind;
  int read = -1;  // Load*: index into reads; Store*: index into writes
  int map = -1;   // Load*/Store*: index into maps
  bool bool_src = false;
  Unary unary{};
  Binary binary{};
  Reduce reduce{};
  float a = 0, b = 0;  // unary parameters
  Operand x, y, z;     // inputs
  Operand out;
  // Unary/Binary/Where whose result a later Store writes contiguously: the row goes
  // straight to that output (writes[direct_write] at maps[direct_map]'s row offset), and
  // the Store, marked `written_early`, has nothing left to copy. Only when no output
  // overlaps an input (FusedLoop::run checks each call).
  int direct_write = -1, direct_map = -1;
  bool written_early = false;
  // Load of a map with the same_every_row: its row in FusedLoop::Impl::invariant_rows.
  int invariant = -1;
};

// Numpy broadcast of an index table of shape `from` to shape `to`, flattened; `index`
// null: the identity (element i holds i).
Indices broadcast_flat(const Index* index, const Shape& from, const Shape& to) {
  Indices out(static_cast<std::size_t>(shape_numel(to)));
  elementwise_util::for_each_broadcast<1>(
      to, {&from}, [&](std::int64_t i, const std::array<std::int64_t, 1>& off) {
        out[static_cast<std::size_t>(i)] = index ? index[off[0]] : static_cast<Index>(off[0]);
      });
  return out;
}

Indices iota(std::int64_t n) {
  Indices v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), Index{0});
  return v;
}

// The identity index tensor of `shape` (element i holds i), for running a data move's
// reference kernel on offsets.
Tensor iota_tensor(const Shape& shape) {
  Tensor t(DType::I32, shape);
  std::iota(t.data<Index>(), t.data<Index>() + t.numel(), Index{0});
  return t;
}

// Columns per row for a run without reductions over `dims` (outermost first): at least
// `min_cols` (64: vector-wide inner loops), at most ~4096 where a dim can be split (row
// buffers stay in cache and rows remain to spread over threads).
std::int64_t pick_cols(const Shape& dims, std::int64_t min_cols = 64) {
  constexpr std::int64_t kMaxCols = 4096;
  std::int64_t c = 1;
  for (std::size_t d = dims.size(); d-- > 0 && c < min_cols;) {
    std::int64_t k = dims[d];
    if (c * k > kMaxCols) {
      for (std::int64_t f = 1; f <= dims[d]; ++f) {
        if (dims[d] % f == 0 && c * f >= min_cols) {
          k = f;
          break;
        }
      }
    }
    c *= k;
  }
  return std::max<std::int64_t>(c, 1);
}

}  // namespace

struct FusedLoop::Impl {
  std::vector<std::string> reads, writes;
  std::vector<std::int64_t> read_bytes, write_bytes;  // their spans, for the overlap check
  std::vector<OffsetMap> maps;
  std::vector<Instr> program;
  // The rows of Loads that read the same values in every row (Instr::invariant), cols
  // floats each, gathered at the start of each run.
  std::vector<float> invariant_rows;
  std::int64_t rows = 0, cols = 0;
  int full_buffers = 0, row_slots = 0;
  int threads = 1;
  bool storage_order = false;     // walks a stored layout's order (else the logical one)
  std::vector<float> buffers;     // threads x full_buffers x cols, unless use_buffers()
  std::vector<float> row_values;  // threads x row_slots, likewise
  float* buffer_base = nullptr;   // where they are
  float* row_value_base = nullptr;
  std::int64_t buffer_floats() const { return std::int64_t{threads} * full_buffers * cols; }
  std::int64_t row_value_floats() const { return std::int64_t{threads} * row_slots; }

  // `direct`: results may be written straight to their outputs (Instr::direct_write).
  void run_rows(std::int64_t begin, std::int64_t end, int thread,
                std::span<const std::byte* const> in, std::span<std::byte* const> out, bool direct);
};

namespace {

// What a tensor of the run is while compiling.
struct Value {
  enum class Kind { Leaf, Computed, Scattered } kind = Kind::Leaf;
  Shape shape;
  // Leaf: element offsets into `root` (an I32 tensor of shape `shape`), none where they
  // are its own flat indices (a tensor the run reads as it is: no table of its size held
  // while compiling). Scattered: flat indices of the computed full value each element
  // takes. Dropped once the run's last use of the value is compiled.
  std::string root;
  Tensor index;
  bool identity = false;

  // The index table, or null for the identity.
  const Index* index_data() const { return identity ? nullptr : index.data<Index>(); }
  // The index table as a tensor: its own, or the identity built in `scratch`.
  const Tensor* index_tensor(Tensor& scratch) const {
    if (!identity) return &index;
    scratch = iota_tensor(shape);
    return &scratch;
  }
  // Computed: the operand holding it.
  Operand operand;
};

class Compiler {
 public:
  // `storage_order`: walk the elements in the storage order of a non-plain tensor the run
  // writes or reads (when it has no reductions), in rows of at least `storage_min_cols`
  // elements; else in logical row-major order.
  // `element_tables` false: refuse (refused_for_a_table()) as soon as an access needs a
  // table of one offset per element, before more of them are built.
  Compiler(const Graph& g, const std::vector<std::size_t>& nodes,
           const std::set<std::string>& needed, const StoredLayouts& layouts, bool storage_order,
           std::int64_t storage_min_cols = 0, bool element_tables = true)
      : g_(g),
        nodes_(nodes),
        needed_(needed),
        layouts_(layouts),
        storage_order_(storage_order),
        storage_min_cols_(storage_min_cols),
        element_tables_(element_tables) {}

  bool refused_for_a_table() const { return refused_for_a_table_; }

  Refusable<std::unique_ptr<FusedLoop::Impl>> compile() {
    for (std::size_t idx : nodes_) {
      const Node& n = g_.nodes[idx];
      for (const auto& o : n.outputs) produced_.insert(o);
      for (const auto& t : n.inputs) {
        if (!t.empty()) ++uses_left_[t];
      }
      for (const auto* names : {&n.inputs, &n.outputs}) {
        for (const auto& t : *names) {
          if (!t.empty() && shape_numel(g_.tensor(t).shape) > std::numeric_limits<Index>::max()) {
            return refusal("{}: '{}' has 2^31 elements or more", n.describe(), t);
          }
        }
      }
    }
    for (const auto& t : needed_) ++uses_left_[t];
    ORCHID_TRY(plan_domain());
    for (std::size_t idx : nodes_) {
      const Node& n = g_.nodes[idx];
      ORCHID_TRY(emit(n));
      for (const auto& t : n.inputs) used(t);
    }
    for (const auto& t : needed_) {
      ORCHID_TRY(store(t));
      used(t);
    }
    if (full_ > 64) return refusal("more than 64 full values");
    write_results_directly();
    // The bytes each read and write spans from its address: up to the last element any of
    // its maps touches (a blocked layout's padding included).
    impl_->read_bytes.assign(impl_->reads.size(), 0);
    impl_->write_bytes.assign(impl_->writes.size(), 0);
    for (const Instr& ins : impl_->program) {
      if (ins.map < 0) continue;
      const bool is_read = ins.kind == Instr::Kind::Load || ins.kind == Instr::Kind::LoadRow;
      std::int64_t& bytes = (is_read ? impl_->read_bytes : impl_->write_bytes)[ins.read];
      const std::int64_t element = ins.bool_src ? 1 : 4;
      bytes = std::max(bytes, impl_->maps[static_cast<std::size_t>(ins.map)].span() * element);
    }
    impl_->rows = rows_;
    impl_->cols = cols_;
    impl_->storage_order = storage_order_;
    impl_->full_buffers = full_;
    impl_->row_slots = row_slots_;
    impl_->threads = std::max(1, omp_get_max_threads());
    impl_->buffers.assign(static_cast<std::size_t>(impl_->buffer_floats()), 0.0f);
    impl_->row_values.assign(static_cast<std::size_t>(impl_->row_value_floats()), 0.0f);
    impl_->invariant_rows.assign(static_cast<std::size_t>(invariant_loads_ * cols_), 0.0f);
    impl_->buffer_base = impl_->buffers.data();
    impl_->row_value_base = impl_->row_values.data();
    return std::move(impl_);
  }

 private:
  // Chooses rows x cols from the run's reductions (they must agree), or from the first
  // computed value's trailing dims when it has none.
  Refusable<void> plan_domain() {
    std::optional<std::int64_t> cols;
    std::int64_t full = 0;
    Shape anchor{0};  // numel 0 until a computed value is seen
    for (std::size_t idx : nodes_) {
      const Node& n = g_.nodes[idx];
      const TensorInfo& out = g_.tensor(n.outputs[0]);
      const FusedForm form = op_traits(n.op_type).fused;
      if (out.dtype != DType::F32 && form.kind != FusedForm::Kind::Select) {
        if (!is_data_move(n)) return refusal("{} produces {}", n.describe(), dtype_name(out.dtype));
      }
      if (form.kind != FusedForm::Kind::Reduce) {
        if (!is_data_move(n) && shape_numel(out.shape) > shape_numel(anchor)) {
          anchor = out.shape;
        }
        continue;
      }
      const Shape& in = g_.tensor(n.inputs[0]).shape;
      const Tensor* axes = nullptr;
      if (n.has_input(1)) {
        ORCHID_TRY_LET(c, constant(n.inputs[1], n));
        axes = c;
      }
      const auto ra =
          reduction_util::resolve_reduction_axes(n, axes, static_cast<std::int64_t>(in.size()));
      if (ra.noop) return refusal("{} reduces nothing", n.describe());
      std::int64_t c = 1;
      bool in_suffix = false;
      for (std::size_t d = 0; d < in.size(); ++d) {
        if (in[d] == 1) continue;
        if (ra.reduced[d]) {
          in_suffix = true;
          c *= in[d];
        } else if (in_suffix) {
          return refusal("{} reduces axes that are not trailing", n.describe());
        }
      }
      if (cols && *cols != c) {
        return refusal("{} reduces {} elements per row, another {}", n.describe(), c, *cols);
      }
      if (full && full != shape_numel(in)) {
        return refusal("{} reduces a tensor of another size", n.describe());
      }
      cols = c;
      full = shape_numel(in);
    }
    if (!cols) {
      const bool only_moves = shape_numel(anchor) == 0;
      if (only_moves) {
        // Only data movement: the domain is the first tensor the run hands out.
        for (const auto& t : needed_) {
          anchor = g_.tensor(t).shape;
          break;
        }
      }
      full = shape_numel(anchor);
      const StoredLayout* order = storage_order_ ? order_layout(full, anchor, only_moves) : nullptr;
      if (storage_order_ && !order) return refusal("no stored layout to walk in");
      if (order) {
        // Domain element d is the element stored at offset d of that tensor.
        domain_.assign(static_cast<std::size_t>(full), 0);
        for (std::int64_t i = 0; i < full; ++i) {
          domain_[static_cast<std::size_t>(order->offsets[static_cast<std::size_t>(i)])] =
              static_cast<Index>(i);
        }
        cols = pick_cols(order->storage_dims, storage_min_cols_);
      } else {
        cols = pick_cols(anchor);
      }
    } else if (storage_order_) {
      return refusal("the run reduces: it walks in logical order");
    }
    if (full == 0) return refusal("the run has no elements");
    cols_ = *cols;
    full_size_ = full;
    rows_ = full / cols_;
    return {};
  }

  // The stored layout the run walks in: a tensor it writes, else one it reads, of `full`
  // elements whose flat logical order is the domain's (the first in order, so the choice
  // is deterministic). A tensor that reaches the domain through a Transpose has another
  // order: walking in its storage order would scramble every other access.
  const StoredLayout* order_layout(std::int64_t full, const Shape& anchor, bool only_moves) const {
    const std::set<std::string> in_order = domain_ordered(full, anchor, only_moves);
    auto fits = [&](const std::string& t) -> const StoredLayout* {
      auto it = layouts_.find(t);
      if (it == layouts_.end() || !in_order.count(t)) return nullptr;
      return it->second.get();
    };
    for (const auto& t : needed_) {
      if (const StoredLayout* l = fits(t)) return l;
    }
    for (std::size_t idx : nodes_) {
      for (const auto& t : g_.nodes[idx].inputs) {
        if (t.empty() || produced_.count(t)) continue;
        if (const StoredLayout* l = fits(t)) return l;
      }
    }
    return nullptr;
  }

  // The tensors of the run whose elements, in flat logical order, are the domain's: what
  // the computing ops write and read element for element (of `full` elements), or, in a
  // run that only moves data, the tensor it hands out (of shape `anchor`); and what
  // reaches those through ops that keep the flat order (Reshape and its kin).
  std::set<std::string> domain_ordered(std::int64_t full, const Shape& anchor,
                                       bool only_moves) const {
    std::set<std::string> in_order;
    for (std::size_t idx : nodes_) {
      const Node& n = g_.nodes[idx];
      if (is_data_move(n)) continue;
      const Shape& out = g_.tensor(n.outputs[0]).shape;
      if (shape_numel(out) != full) continue;
      in_order.insert(n.outputs[0]);
      for (const auto& t : n.inputs) {
        if (!t.empty() && g_.tensor(t).shape == out) in_order.insert(t);
      }
    }
    if (only_moves) {
      for (const auto& t : needed_) {
        if (g_.tensor(t).shape == anchor) {
          in_order.insert(t);
          break;
        }
      }
    }
    for (bool grew = true; grew;) {
      grew = false;
      for (std::size_t idx : nodes_) {
        const Node& n = g_.nodes[idx];
        if (!keeps_flat_order(n.op_type) || !n.has_input(0)) continue;
        const std::string &x = n.inputs[0], &y = n.outputs[0];
        if (in_order.count(x) != in_order.count(y)) {
          in_order.insert(x);
          in_order.insert(y);
          grew = true;
        }
      }
    }
    return in_order;
  }

  // Per domain element, the value `by_logical` holds for its logical element. (Permuting in
  // place along the domain's cycles saves a table but took 3.8 s of Candy's executor build:
  // every step a cache miss.)
  Indices in_domain(Indices by_logical) const {
    if (domain_.empty()) return by_logical;
    Indices out(domain_.size());
    for (std::size_t d = 0; d < domain_.size(); ++d) {
      out[d] = by_logical[static_cast<std::size_t>(domain_[d])];
    }
    return out;
  }

  // Per domain element, the element of `index` (of shape `from`, null: the identity) that
  // its logical element takes under broadcasting to `to`. Without broadcasting, gathered
  // through the domain directly: no logical-order table of the domain's size first.
  Indices domain_indices(const Index* index, const Shape& from, const Shape& to) const {
    if (domain_.empty() || from != to) return in_domain(broadcast_flat(index, from, to));
    if (!index) return domain_;
    Indices out(domain_.size());
    for (std::size_t d = 0; d < domain_.size(); ++d) out[d] = index[domain_[d]];
    return out;
  }

  // Logical element offsets into `t` turned into memory offsets, per its stored layout.
  Indices stored(const std::string& t, Indices offsets) const {
    auto it = layouts_.find(t);
    if (it == layouts_.end()) return offsets;
    for (auto& o : offsets) o = it->second->offsets[static_cast<std::size_t>(o)];
    return offsets;
  }

  Refusable<const Tensor*> constant(const std::string& t, const Node& n) {
    if (!g_.is_constant(t)) return refusal("{}: input '{}' is not a constant", n.describe(), t);
    return g_.tensor(t).data.get();
  }

  Refusable<Value*> value(const std::string& t) {
    auto it = values_.find(t);
    if (it != values_.end()) return &it->second;
    if (produced_.count(t)) return refusal("tensor '{}' is used before the run computes it", t);
    // A tensor the run reads: a leaf whose element offsets are its own flat indices.
    const TensorInfo& info = g_.tensor(t);
    Value v;
    v.kind = Value::Kind::Leaf;
    v.shape = info.shape;
    v.root = t;
    v.identity = true;
    return &values_.emplace(t, std::move(v)).first->second;
  }

  // One use of `t` compiled: after its last, its index table goes (a chain of moves over a
  // large image held one table per step).
  void used(const std::string& t) {
    if (t.empty() || --uses_left_[t] > 0) return;
    if (auto it = values_.find(t); it != values_.end()) it->second.index = Tensor();
  }

  int read_slot(const std::string& t) {
    auto it = std::find(impl_->reads.begin(), impl_->reads.end(), t);
    if (it != impl_->reads.end()) return static_cast<int>(it - impl_->reads.begin());
    impl_->reads.push_back(t);
    return static_cast<int>(impl_->reads.size()) - 1;
  }

  Refusable<int> add_map(OffsetMap m) {
    if (!m.table.empty() && !element_tables_) {
      refused_for_a_table_ = true;
      return refusal("an access needs one offset per element");
    }
    impl_->maps.push_back(std::move(m));
    return static_cast<int>(impl_->maps.size()) - 1;
  }

  Operand new_full() { return Operand{Operand::Kind::Full, full_++, 0}; }
  Operand new_row() { return Operand{Operand::Kind::Row, row_slots_++, 0}; }

  // The operand for `t` seen as an input of an op whose output has shape `to`.
  Refusable<Operand> operand(const std::string& t, const Shape& to, const Node& n) {
    ORCHID_TRY_LET(vp, value(t));
    Value& v = *vp;
    const std::int64_t to_numel = shape_numel(to);
    const bool to_full = to_numel == full_size_;
    if (!to_full && to_numel != rows_) {
      return refusal("{}: output size fits neither rows nor elements", n.describe());
    }
    if (!to_full && !domain_.empty())
      return refusal("{}: a row value in storage order", n.describe());
    if (v.kind == Value::Kind::Scattered) {
      return refusal("{}: reads a transposed computed value", n.describe());
    }
    if (v.kind == Value::Kind::Computed) {
      // Its flat order must line up with the output's under broadcasting: a full value
      // element for element, a row value (possibly spread over full shape) row for row.
      const Indices flat = broadcast_flat(nullptr, v.shape, to);
      const bool src_full = v.operand.kind == Operand::Kind::Full;
      const bool spread = shape_numel(v.shape) == full_size_;
      if (src_full && !to_full) return refusal("{}: full input for a row output", n.describe());
      for (std::int64_t i = 0; i < to_numel; ++i) {
        const std::int64_t k = flat[static_cast<std::size_t>(i)];
        const bool ok = src_full ? k == i : (spread ? k / cols_ : k) == (to_full ? i / cols_ : i);
        if (!ok) return refusal("{}: input '{}' broadcasts across rows", n.describe(), t);
      }
      return v.operand;
    }
    const TensorInfo& root = g_.tensor(v.root);
    const bool select = op_traits(n.op_type).fused.kind == FusedForm::Kind::Select;
    if (root.dtype != DType::F32 && !(root.dtype == DType::Bool && select)) {
      return refusal("{}: reads {} tensor '{}'", n.describe(), dtype_name(root.dtype), v.root);
    }
    if (g_.is_constant(v.root) && root.dtype == DType::F32 && shape_numel(root.shape) == 1) {
      return Operand{Operand::Kind::Imm, 0, root.data->data<float>()[0]};
    }
    const std::string key =
        fmt::format("{}|{}|{}", t, shape_to_string(to), root.dtype == DType::Bool);
    if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;
    Instr ins;
    ins.read = read_slot(v.root);
    ins.bool_src = root.dtype == DType::Bool;
    if (to_full) {
      ins.kind = Instr::Kind::Load;
      ORCHID_TRY_LET(
          map, add_map(OffsetMap::build(stored(v.root, domain_indices(v.index_data(), v.shape, to)),
                                        rows_, cols_)));
      ins.map = map;
      // In storage order every value is full: a row there is no row of the logical shape.
      const bool per_row = impl_->maps[ins.map].constant_cols && domain_.empty();
      ins.out = per_row && !ins.bool_src ? new_row() : new_full();
      if (ins.out.kind == Operand::Kind::Row) ins.kind = Instr::Kind::LoadRow;
      const OffsetMap& m = impl_->maps[static_cast<std::size_t>(ins.map)];
      if (ins.kind == Instr::Kind::Load && m.same_every_row && !m.contiguous_cols) {
        ins.invariant = invariant_loads_++;
      }
    } else {
      ins.kind = Instr::Kind::LoadRow;
      ORCHID_TRY_LET(
          map, add_map(OffsetMap::build(stored(v.root, broadcast_flat(v.index_data(), v.shape, to)),
                                        rows_, 1)));
      ins.map = map;
      ins.out = new_row();
    }
    impl_->program.push_back(ins);
    loaded_[key] = ins.out;
    return ins.out;
  }

  void set_computed(const std::string& t, Operand op) {
    Value v;
    v.kind = Value::Kind::Computed;
    v.shape = g_.tensor(t).shape;
    v.operand = op;
    values_[t] = std::move(v);
  }

  Refusable<void> emit(const Node& n) {
    const std::string& y = n.outputs[0];
    const Shape& ys = g_.tensor(y).shape;
    if (is_data_move(n)) return emit_data_move(n);
    const FusedForm form = op_traits(n.op_type).fused;
    Instr ins;
    switch (form.kind) {
      case FusedForm::Kind::Unary: {
        ins.kind = Instr::Kind::Unary;
        ins.unary = form.unary;
        ORCHID_TRY_LET(x, operand(n.inputs[0], ys, n));
        ins.x = x;
        if (form.unary == Unary::LeakyRelu) ins.a = n.attr_float("alpha", 0.01f);
        if (form.unary == Unary::Elu) ins.a = n.attr_float("alpha", 1.0f);
        if (form.unary == Unary::Clip) {
          ins.a = -std::numeric_limits<float>::infinity();
          ins.b = std::numeric_limits<float>::infinity();
          if (n.has_input(1)) {
            ORCHID_TRY_LET(lo, constant(n.inputs[1], n));
            ins.a = static_cast<float>(lo->get_as_double(0));
          }
          if (n.has_input(2)) {
            ORCHID_TRY_LET(hi, constant(n.inputs[2], n));
            ins.b = static_cast<float>(hi->get_as_double(0));
          }
        }
        break;
      }
      case FusedForm::Kind::Binary: {
        ins.kind = Instr::Kind::Binary;
        ins.binary = form.binary;
        ORCHID_TRY_LET(x, operand(n.inputs[0], ys, n));
        ORCHID_TRY_LET(w, operand(n.inputs[1], ys, n));
        ins.x = x;
        ins.y = w;
        break;
      }
      case FusedForm::Kind::Select: {
        if (g_.tensor(y).dtype != DType::F32) return refusal("{}: non-float Where", n.describe());
        ins.kind = Instr::Kind::Where;
        ORCHID_TRY_LET(c, operand(n.inputs[0], ys, n));
        ORCHID_TRY_LET(a, operand(n.inputs[1], ys, n));
        ORCHID_TRY_LET(b, operand(n.inputs[2], ys, n));
        ins.x = c;
        ins.y = a;
        ins.z = b;
        break;
      }
      case FusedForm::Kind::Reduce: {
        ins.kind = Instr::Kind::Reduce;
        ins.reduce = form.reduce;
        const Shape& xs = g_.tensor(n.inputs[0]).shape;
        ORCHID_TRY_LET(x, operand(n.inputs[0], xs, n));
        ins.x = x;
        if (ins.x.kind != Operand::Kind::Full) {
          return refusal("{}: reduces a broadcast value", n.describe());
        }
        ins.out = new_row();
        impl_->program.push_back(ins);
        set_computed(y, ins.out);
        return {};
      }
      case FusedForm::Kind::None:
      case FusedForm::Kind::DataMove:
        return refusal("{}: op {} has no fused form", n.describe(), n.op_type);
    }
    const bool full = shape_numel(ys) == full_size_;
    auto is_full = [](const Operand& o) { return o.kind == Operand::Kind::Full; };
    const bool any_full = is_full(ins.x) || is_full(ins.y) || is_full(ins.z);
    if (full && !any_full && shape_numel(ys) != rows_) {
      return refusal("{}: broadcasts to a full value from row values only", n.describe());
    }
    // Row-valued inputs broadcast into a full output still give one value per row when
    // no input is full; the result is then a row value.
    if (!any_full && !domain_.empty())
      return refusal("{}: a row value in storage order", n.describe());
    ins.out = any_full ? new_full() : new_row();
    impl_->program.push_back(ins);
    set_computed(y, ins.out);
    return {};
  }

  Refusable<void> emit_data_move(const Node& n) {
    const std::string& y = n.outputs[0];
    // The index tables below have the source's size: a move picking a small part of a
    // large source (a Gather from an embedding table) is left to its own kernel rather
    // than building hundreds of MB of indices for it.
    const std::int64_t source_numel = shape_numel(g_.tensor(n.inputs[0]).shape);
    const std::int64_t result_numel = shape_numel(g_.tensor(y).shape);
    if (source_numel > (std::int64_t{1} << 20) && source_numel > 4 * result_numel) {
      return refusal("{}: reads {} of its source's {} elements", n.describe(), result_numel,
                     source_numel);
    }
    if (n.op_type == "Concat") return emit_concat(n);
    ORCHID_TRY_LET(srcp, value(n.inputs[0]));
    const Value& src = *srcp;
    // Reshape and Identity keep the flat order: nothing to do for a computed value.
    const bool keeps_order = n.op_type == "Reshape" || n.op_type == "Identity";
    if (src.kind == Value::Kind::Computed && keeps_order) {
      set_computed(y, src.operand);
      return {};
    }
    // Run the op's reference kernel on the index tensor: the result says, per output
    // element, which element of the source it copies.
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    // A computed value is read as it is computed: the identity.
    Tensor identity;
    if (src.kind == Value::Kind::Computed) identity = iota_tensor(src.shape);
    ins[0] = src.kind == Value::Kind::Computed ? &identity : src.index_tensor(identity);
    for (std::size_t i = 1; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      ORCHID_TRY_LET(c, constant(n.inputs[i], n));
      ins[i] = c;
    }
    Value v;
    v.shape = g_.tensor(y).shape;
    ORCHID_TRY_LET(index_moved, moved_offsets(n, ins));
    v.index = std::move(index_moved);
    identity = Tensor();
    if (src.kind == Value::Kind::Leaf) {
      v.kind = Value::Kind::Leaf;
      v.root = src.root;
    } else {
      if (src.kind == Value::Kind::Computed && src.operand.kind != Operand::Kind::Full) {
        return refusal("{}: moves a row value", n.describe());
      }
      v.kind = Value::Kind::Scattered;
      v.operand = src.operand;
      scatter_source_[y] =
          src.kind == Value::Kind::Computed ? src.operand : scatter_source_.at(n.inputs[0]);
    }
    values_[y] = std::move(v);
    return {};
  }

  // The data move `n` run by its reference kernel on offset tensors `ins` (its other inputs,
  // constants, as they are): per element of its result, the offset it copies.
  Refusable<Tensor> moved_offsets(const Node& n, const std::vector<const Tensor*>& ins) {
    std::vector<Tensor> outs;
    outs.emplace_back(DType::I32, g_.tensor(n.outputs[0]).shape);
    ReferenceKernel kernel = find_reference_kernel(n.op_type);
    if (!kernel) return refusal("{}: no kernel", n.describe());
    kernel(n, ins, outs);
    return std::move(outs[0]);
  }

  // A Concat of parts of one tensor the run reads (YOLO's Focus: four strided Slices of the
  // image side by side) is an index map of that tensor: the reference Concat of the parts'
  // offset tensors. Joining the parts in the loop saves writing and reading them, and a
  // concatenation into a channels-last result that moves 3 floats at a time (0.53 ms of
  // YOLOX-nano's 8 on oneDNN). Parts of different tensors, or computed ones, stay with
  // oneDNN's concatenation.
  Refusable<void> emit_concat(const Node& n) {
    std::string root;
    std::vector<const Tensor*> ins;
    std::deque<Tensor> identities;  // parts read as they are (stable addresses)
    for (const auto& t : n.inputs) {
      ORCHID_TRY_LET(vp, value(t));
      if (vp->kind != Value::Kind::Leaf) {
        return refusal("{}: concatenates a computed value '{}'", n.describe(), t);
      }
      if (!root.empty() && vp->root != root) {
        return refusal("{}: concatenates parts of '{}' and '{}'", n.describe(), root, vp->root);
      }
      root = vp->root;
      ins.push_back(vp->index_tensor(identities.emplace_back()));
    }
    Value v;
    v.kind = Value::Kind::Leaf;
    v.shape = g_.tensor(n.outputs[0]).shape;
    v.root = root;
    ORCHID_TRY_LET(index, moved_offsets(n, ins));
    v.index = std::move(index);
    values_[n.outputs[0]] = std::move(v);
    return {};
  }

  // A result computed into a row buffer and then copied out whole (a contiguous Store)
  // is computed into the output row instead: an elementwise loop then reads its inputs and
  // writes its output once, with no copy through a buffer (a SiLU over 208-float rows spent
  // a quarter of its time in that copy).
  void write_results_directly() {
    std::vector<Instr>& program = impl_->program;
    for (std::size_t s = 0; s < program.size(); ++s) {
      Instr& store = program[s];
      if (store.kind != Instr::Kind::Store || store.x.kind != Operand::Kind::Full) continue;
      const OffsetMap& m = impl_->maps[static_cast<std::size_t>(store.map)];
      if (!m.contiguous_cols || !m.table.empty()) continue;
      // The instruction that last wrote the stored buffer: a computation, not yet sent to
      // another output (a value stored twice is written early once, copied the second time).
      for (std::size_t p = s; p-- > 0;) {
        Instr& producer = program[p];
        const bool computes = producer.kind == Instr::Kind::Unary ||
                              producer.kind == Instr::Kind::Binary ||
                              producer.kind == Instr::Kind::Where;
        if (producer.out.kind != Operand::Kind::Full || producer.out.id != store.x.id ||
            (!computes && producer.kind != Instr::Kind::Load)) {
          continue;
        }
        if (computes && producer.direct_write < 0) {
          producer.direct_write = store.read;
          producer.direct_map = store.map;
          store.written_early = true;
        }
        break;
      }
    }
  }

  Refusable<void> store(const std::string& t) {
    ORCHID_TRY_LET(vp, value(t));
    const Value& v = *vp;  // values_ keeps references stable when operand() adds more
    const std::int64_t numel = shape_numel(v.shape);
    Instr ins;
    impl_->writes.push_back(t);
    ins.read = static_cast<int>(impl_->writes.size()) - 1;
    if (v.kind == Value::Kind::Leaf) {
      // Data movement handed out as is: load it in its own shape, store it contiguously.
      ORCHID_TRY_LET(x, operand(t, v.shape, g_.nodes[nodes_.back()]));
      ins.x = x;
      if (ins.x.kind == Operand::Kind::Imm) return refusal("'{}' is a constant", t);
      const bool full = numel == full_size_;
      ins.kind = full ? Instr::Kind::Store : Instr::Kind::StoreRow;
      ORCHID_TRY_LET(
          map, add_map(OffsetMap::build(
                   stored(t, full ? domain_indices(nullptr, v.shape, v.shape) : iota(numel)), rows_,
                   full ? cols_ : 1)));
      ins.map = map;
    } else if (v.kind == Value::Kind::Computed) {
      ins.x = v.operand;
      if (v.operand.kind == Operand::Kind::Imm) return refusal("'{}' is a constant", t);
      const bool full = numel == full_size_;  // a row value may be spread over full shape
      if (!full && !domain_.empty()) return refusal("'{}': a row value in storage order", t);
      ins.kind = full ? Instr::Kind::Store : Instr::Kind::StoreRow;
      ORCHID_TRY_LET(
          map, add_map(OffsetMap::build(
                   stored(t, full ? domain_indices(nullptr, v.shape, v.shape) : iota(numel)), rows_,
                   full ? cols_ : 1)));
      ins.map = map;
    } else {
      // Scattered: invert "output element j takes computed element index[j]".
      if (numel != full_size_) return refusal("'{}' is a partial copy of a computed value", t);
      Indices where(static_cast<std::size_t>(numel), -1);
      const Index* index = v.index.data<Index>();
      for (std::int64_t j = 0; j < numel; ++j) {
        Index& w = where[static_cast<std::size_t>(index[j])];
        if (w != -1) return refusal("'{}' repeats elements of a computed value", t);
        w = static_cast<Index>(j);
      }
      ins.x = scatter_source_.at(t);
      ins.kind = Instr::Kind::Store;
      ORCHID_TRY_LET(
          map, add_map(OffsetMap::build(stored(t, in_domain(std::move(where))), rows_, cols_)));
      ins.map = map;
    }
    if (g_.tensor(t).dtype != DType::F32) return refusal("'{}' is not f32", t);
    impl_->program.push_back(ins);
    return {};
  }

  const Graph& g_;
  const std::vector<std::size_t>& nodes_;
  const std::set<std::string>& needed_;
  const StoredLayouts& layouts_;
  const bool storage_order_;
  const std::int64_t storage_min_cols_;
  const bool element_tables_;
  bool refused_for_a_table_ = false;
  Indices domain_;  // domain element -> logical element; empty: identity
  std::set<std::string> produced_;
  // Per tensor, the uses (node inputs and hand-outs) not compiled yet.
  std::unordered_map<std::string, int> uses_left_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, Operand> scatter_source_;
  std::unordered_map<std::string, Operand> loaded_;
  std::unique_ptr<FusedLoop::Impl> impl_ = std::make_unique<FusedLoop::Impl>();
  std::int64_t rows_ = 0, cols_ = 0, full_size_ = 0;
  int full_ = 0, row_slots_ = 0, invariant_loads_ = 0;
};

}  // namespace

// Compiled for AVX-512 and AVX2 (x86-64-v3, which has FMA: every AVX2 CPU does) as well as
// the baseline (x86-64's SSE2), the widest the CPU has chosen at load time: the elementwise
// loops below vectorise at that width.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#endif
void FusedLoop::Impl::run_rows(std::int64_t begin, std::int64_t end, int thread,
                               std::span<const std::byte* const> in,
                               std::span<std::byte* const> out, bool direct) {
  const std::int64_t C = cols;
  float* own = buffer_base + static_cast<std::size_t>(thread) * full_buffers * C;
  float* rowv = row_value_base + static_cast<std::size_t>(thread) * row_slots;
  // Per full operand: where its row currently is (its own buffer, or the source row).
  const float* full_ptr[64];
  for (std::int64_t r = begin; r < end; ++r) {
    for (const Instr& ins : program) {
      auto buf = [&](const Operand& o) { return own + static_cast<std::size_t>(o.id) * C; };
      // Where a computation puts its row: its buffer, or straight in its output.
      auto result = [&]() {
        if (!direct || ins.direct_write < 0) return buf(ins.out);
        return reinterpret_cast<float*>(out[static_cast<std::size_t>(ins.direct_write)]) +
               maps[static_cast<std::size_t>(ins.direct_map)].row_off[r];
      };
      switch (ins.kind) {
        case Instr::Kind::Load: {
          if (ins.invariant >= 0) {  // gathered by run()
            full_ptr[ins.out.id] =
                invariant_rows.data() + static_cast<std::size_t>(ins.invariant) * C;
            break;
          }
          const OffsetMap& m = maps[ins.map];
          float* dst = buf(ins.out);
          if (ins.bool_src) {
            const auto* src = reinterpret_cast<const bool*>(in[ins.read]);
            for (std::int64_t c = 0; c < C; ++c) dst[c] = src[m.at(r, c, C)] ? 1.0f : 0.0f;
            full_ptr[ins.out.id] = dst;
            break;
          }
          const auto* src = reinterpret_cast<const float*>(in[ins.read]);
          if (m.contiguous_cols) {
            full_ptr[ins.out.id] = src + m.row_off[r];
          } else if (m.table.empty()) {
            const float* base = src + m.row_off[r];
            const Index* co = m.col_off.data();
            if (m.period >= 16) {  // shorter periods (a constant column) copy too little
              for (std::int64_t c = 0; c < m.period; ++c) dst[c] = base[co[c]];
              for (std::int64_t c = m.period; c < C; c += m.period) {
                std::memcpy(dst + c, dst, static_cast<std::size_t>(m.period) * sizeof(float));
              }
            } else if (!m.by_address.empty()) {
              for (const std::int32_t c : m.by_address) dst[c] = base[co[c]];
            } else {
              for (std::int64_t c = 0; c < C; ++c) dst[c] = base[co[c]];
            }
            full_ptr[ins.out.id] = dst;
          } else {
            const Index* t = m.table.data() + r * C;
            for (std::int64_t c = 0; c < C; ++c) dst[c] = src[t[c]];
            full_ptr[ins.out.id] = dst;
          }
          break;
        }
        case Instr::Kind::LoadRow: {
          const OffsetMap& m = maps[ins.map];
          const std::int64_t off = m.table.empty() ? m.row_off[r] : m.table[r];
          if (ins.bool_src) {
            rowv[ins.out.id] = reinterpret_cast<const bool*>(in[ins.read])[off] ? 1.0f : 0.0f;
          } else {
            rowv[ins.out.id] = reinterpret_cast<const float*>(in[ins.read])[off];
          }
          break;
        }
        case Instr::Kind::Unary: {
          if (ins.out.kind == Operand::Kind::Row) {
            const float x = ins.x.kind == Operand::Kind::Row ? rowv[ins.x.id] : ins.x.imm;
            rowv[ins.out.id] = apply_unary(ins.unary, x, ins.a, ins.b);
            break;
          }
          const float* x = full_ptr[ins.x.id];
          float* y = result();
          const Unary u = ins.unary;
          const float a = ins.a, b = ins.b;
          switch (u) {  // the common ones as plain loops the compiler vectorises
            case Unary::Relu:
              for (std::int64_t c = 0; c < C; ++c) y[c] = x[c] < 0.0f ? 0.0f : x[c];
              break;
            case Unary::Clip:
              for (std::int64_t c = 0; c < C; ++c) y[c] = x[c] < a ? a : (x[c] > b ? b : x[c]);
              break;
            case Unary::Exp:
              vector_math::exp(x, y, C);
              break;
            case Unary::Erf:
              vector_math::erf(x, y, C);
              break;
            case Unary::Sigmoid:
              vector_math::sigmoid(x, y, C);
              break;
            case Unary::Tanh:
              vector_math::tanh(x, y, C);
              break;
            default:
              for (std::int64_t c = 0; c < C; ++c) y[c] = apply_unary(u, x[c], a, b);
          }
          full_ptr[ins.out.id] = y;
          break;
        }
        case Instr::Kind::Binary: {
          auto scalar = [&](const Operand& o) {
            return o.kind == Operand::Kind::Row ? rowv[o.id] : o.imm;
          };
          if (ins.out.kind == Operand::Kind::Row) {
            rowv[ins.out.id] = apply_binary(ins.binary, scalar(ins.x), scalar(ins.y));
            break;
          }
          float* y = result();
          const bool fx = ins.x.kind == Operand::Kind::Full;
          const bool fy = ins.y.kind == Operand::Kind::Full;
          const float* xp = fx ? full_ptr[ins.x.id] : nullptr;
          const float* yp = fy ? full_ptr[ins.y.id] : nullptr;
          const float xs = fx ? 0.0f : scalar(ins.x);
          const float ys = fy ? 0.0f : scalar(ins.y);
          auto loop = [&](auto f) {
            if (fx && fy) {
              for (std::int64_t c = 0; c < C; ++c) y[c] = f(xp[c], yp[c]);
            } else if (fx) {
              for (std::int64_t c = 0; c < C; ++c) y[c] = f(xp[c], ys);
            } else {
              for (std::int64_t c = 0; c < C; ++c) y[c] = f(xs, yp[c]);
            }
          };
          switch (ins.binary) {
            case Binary::Add:
              loop([](float p, float q) { return p + q; });
              break;
            case Binary::Sub:
              loop([](float p, float q) { return p - q; });
              break;
            case Binary::Mul:
              loop([](float p, float q) { return p * q; });
              break;
            case Binary::Div:
              loop([](float p, float q) { return p / q; });
              break;
            case Binary::Pow:
              if (fx && !fy && ys == 2.0f) {
                loop([](float p, float) { return p * p; });
              } else if (fx && !fy && ys == 3.0f) {
                loop([](float p, float) { return p * p * p; });
              } else {
                loop([](float p, float q) { return apply_binary(Binary::Pow, p, q); });
              }
              break;
            default: {
              const Binary op = ins.binary;
              loop([op](float p, float q) { return apply_binary(op, p, q); });
            }
          }
          full_ptr[ins.out.id] = y;
          break;
        }
        case Instr::Kind::Where: {
          auto at = [&](const Operand& o, std::int64_t c) {
            if (o.kind == Operand::Kind::Full) return full_ptr[o.id][c];
            return o.kind == Operand::Kind::Row ? rowv[o.id] : o.imm;
          };
          if (ins.out.kind == Operand::Kind::Row) {
            rowv[ins.out.id] = at(ins.x, 0) != 0.0f ? at(ins.y, 0) : at(ins.z, 0);
            break;
          }
          float* y = result();
          for (std::int64_t c = 0; c < C; ++c)
            y[c] = at(ins.x, c) != 0.0f ? at(ins.y, c) : at(ins.z, c);
          full_ptr[ins.out.id] = y;
          break;
        }
        case Instr::Kind::Reduce: {
          const float* x = full_ptr[ins.x.id];
          float v = 0;
          if (ins.reduce == Reduce::Sum || ins.reduce == Reduce::Mean) {
            v = vector_math::sum(x, C);
            if (ins.reduce == Reduce::Mean) v = static_cast<float>(static_cast<double>(v) / C);
          } else {
            v = ins.reduce == Reduce::Max ? vector_math::max(x, C) : vector_math::min(x, C);
          }
          rowv[ins.out.id] = v;
          break;
        }
        case Instr::Kind::Store: {
          if (direct && ins.written_early) break;
          const OffsetMap& m = maps[ins.map];
          auto* dst = reinterpret_cast<float*>(out[ins.read]);
          if (ins.x.kind == Operand::Kind::Row) {  // a row value spread over its row
            for (std::int64_t c = 0; c < C; ++c) dst[m.at(r, c, C)] = rowv[ins.x.id];
            break;
          }
          const float* x = full_ptr[ins.x.id];
          if (m.contiguous_cols) {
            std::memcpy(dst + m.row_off[r], x, static_cast<std::size_t>(C) * sizeof(float));
          } else {
            if (!m.by_address.empty()) {
              float* base = dst + m.row_off[r];
              const Index* co = m.col_off.data();
              for (const std::int32_t c : m.by_address) base[co[c]] = x[c];
            } else {
              for (std::int64_t c = 0; c < C; ++c) dst[m.at(r, c, C)] = x[c];
            }
          }
          break;
        }
        case Instr::Kind::StoreRow: {
          const OffsetMap& m = maps[ins.map];
          const float x = ins.x.kind == Operand::Kind::Row ? rowv[ins.x.id] : ins.x.imm;
          reinterpret_cast<float*>(out[ins.read])[m.table.empty() ? m.row_off[r] : m.table[r]] = x;
          break;
        }
      }
    }
  }
}

Refusable<std::unique_ptr<FusedLoop>> FusedLoop::compile(const Graph& graph,
                                                         const std::vector<std::size_t>& nodes,
                                                         const std::set<std::string>& needed,
                                                         const StoredLayouts& layouts) {
  // In storage order, rows of whole cache lines of the plain tensors it converts from or
  // to (1024 elements span 16 pixels and more of NHWC with up to 64 channels), unless
  // such rows need larger offset tables (a row crossing an image row of a Pad is not
  // separable): then rows of 64, or of the innermost stored dim (a pixel's channels; a
  // reflecting Pad maps neighbouring pixels backwards at the image's edges, so only rows
  // of one pixel are separable: Candy's held two tables of 13 MB).
  // Each try's loop is dropped before the next compiles (the winner compiled again):
  // two at once held two sets of element-sized tables.
  auto table_bytes = [](const FusedLoop::Impl& i) {  // of maps that are not separable
    std::size_t b = 0;
    for (const auto& m : i.maps) b += m.table.size() * sizeof(Index);
    return b;
  };
  const std::int64_t tries[] = {1024, 64, 2};
  auto in_storage_order = [&]() -> Refusable<std::unique_ptr<FusedLoop::Impl>> {
    // Each width first without element tables: the first that needs none is kept, and the
    // widths that need one stop at the first (Candy's Resize -> Pad loop built two 13 MB
    // tables at 1024 before rows of 64 channels needed none).
    for (const std::int64_t min_cols : tries) {
      Compiler probe(graph, nodes, needed, layouts, true, min_cols, false);
      auto compiled = probe.compile();
      if (compiled || !probe.refused_for_a_table()) return compiled;
    }
    // Every width needs tables: the one needing the fewest bytes, each try's freed before
    // the next compiles (the winner compiled again).
    std::size_t best = 0, best_bytes = std::numeric_limits<std::size_t>::max();
    for (std::size_t t = 0; t < std::size(tries); ++t) {
      auto compiled = Compiler(graph, nodes, needed, layouts, true, tries[t]).compile();
      if (compiled && table_bytes(**compiled) < best_bytes) {
        best_bytes = table_bytes(**compiled);
        best = t;
      }
    }
    return Compiler(graph, nodes, needed, layouts, true, tries[best]).compile();
  };
  auto impl = layouts.empty() ? Compiler(graph, nodes, needed, layouts, false).compile()
                              : in_storage_order();
  if (!impl && !layouts.empty()) impl = Compiler(graph, nodes, needed, layouts, false).compile();
  if (!impl) return impl.refusal();
  return std::unique_ptr<FusedLoop>(new FusedLoop(std::move(*impl)));
}

FusedLoop::FusedLoop(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FusedLoop::~FusedLoop() = default;

const std::vector<std::string>& FusedLoop::reads() const {
  return impl_->reads;
}
const std::vector<std::string>& FusedLoop::writes() const {
  return impl_->writes;
}
bool FusedLoop::walks_storage_order() const {
  return impl_->storage_order;
}
std::int64_t FusedLoop::rows() const {
  return impl_->rows;
}
std::int64_t FusedLoop::cols() const {
  return impl_->cols;
}

std::int64_t FusedLoop::scratch_bytes() const {
  std::int64_t bytes = static_cast<std::int64_t>(
      (impl_->buffers.size() + impl_->row_values.size() + impl_->invariant_rows.size()) * 4);
  for (const auto& m : impl_->maps) bytes += m.bytes();
  return bytes;
}

std::int64_t FusedLoop::buffer_bytes() const {
  return AlignedBuffer::round_up(impl_->buffer_floats() * 4) +
         AlignedBuffer::round_up(impl_->row_value_floats() * 4);
}

void FusedLoop::use_buffers(std::byte* base) {
  Impl& impl = *impl_;
  impl.buffer_base = reinterpret_cast<float*>(base);
  impl.row_value_base =
      reinterpret_cast<float*>(base + AlignedBuffer::round_up(impl.buffer_floats() * 4));
  std::vector<float>().swap(impl.buffers);
  std::vector<float>().swap(impl.row_values);
}

void FusedLoop::run(std::span<const std::byte* const> reads, std::span<std::byte* const> writes) {
  Impl& impl = *impl_;
  // Results go straight to their outputs unless an output overlaps something the loop
  // reads (then a row's inputs must all be read before any of its results is written).
  bool direct = true;
  for (std::size_t w = 0; w < writes.size() && direct; ++w) {
    const std::byte* wb = writes[w];
    const std::byte* we = wb + impl.write_bytes[w];
    for (std::size_t i = 0; i < reads.size(); ++i) {
      if (reads[i] < we && wb < reads[i] + impl.read_bytes[i]) {
        direct = false;
        break;
      }
    }
  }
  for (const Instr& ins : impl.program) {
    if (ins.invariant < 0) continue;
    const OffsetMap& m = impl.maps[static_cast<std::size_t>(ins.map)];
    float* row = impl.invariant_rows.data() + static_cast<std::size_t>(ins.invariant) * impl.cols;
    for (std::int64_t c = 0; c < impl.cols; ++c) {
      const std::int64_t at = std::int64_t{m.row_off[0]} + m.col_off[static_cast<std::size_t>(c)];
      if (ins.bool_src) {
        row[c] = reinterpret_cast<const bool*>(reads[static_cast<std::size_t>(ins.read)])[at]
                     ? 1.0f
                     : 0.0f;
      } else {
        row[c] = reinterpret_cast<const float*>(reads[static_cast<std::size_t>(ins.read)])[at];
      }
    }
  }
  const std::int64_t rows = impl.rows;
  const int threads = static_cast<int>(std::min<std::int64_t>(impl.threads, rows));
  if (threads <= 1 || rows * impl.cols < 4096) {
    impl.run_rows(0, rows, 0, reads, writes, direct);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int n = omp_get_num_threads();
    const std::int64_t begin = rows * t / n, end = rows * (t + 1) / n;
    impl.run_rows(begin, end, t, reads, writes, direct);
  }
}

}  // namespace orchid

#undef ORCHID_TRY
#undef ORCHID_TRY_LET
