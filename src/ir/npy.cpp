#include "ir/npy.hpp"

#include <climits>
#include <cstring>
#include <string_view>

#include "util/atomic_file.hpp"
#include "util/checked_math.hpp"
#include "util/error.hpp"
#include "util/memory_budget.hpp"
#include "util/safe_file.hpp"

namespace orchid {

namespace {

const char kMagic[] = "\x93NUMPY";

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "<f4";
    case DType::F16:
      return "<f2";
    case DType::F64:
      return "<f8";
    case DType::I64:
      return "<i8";
    case DType::I32:
      return "<i4";
    case DType::I8:
      return "|i1";
    case DType::U8:
      return "|u1";
    case DType::Bool:
      return "|b1";
    case DType::BF16:
      break;  // numpy has no bfloat16
  }
  return "";
}

DType dtype_of_descr(const std::string& descr, const std::string& path) {
  for (DType d : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8,
                  DType::Bool}) {
    const std::string ours = descr_of(d);
    if (descr == ours) return d;
    // numpy writes single-byte types with '|' but accepts '<' and '='
    if (descr.size() == 3 && ours.size() == 3 && descr.substr(1) == ours.substr(1) &&
        (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
      return d;
    }
  }
  unsupported(
      "'{}': unsupported .npy dtype '{}' (supported: f4 f2 f8 i8 i4 i1 u1 b1, "
      "little-endian)",
      path, descr);
}

// The header is a Python dict literal; numpy writes exactly three keys:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }. Parsed as such (not by
// searching for substrings), so 'fortran_order': Maybe or a shape of (4.5, 16) fail.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (true) {
      skip_blanks();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr" && !has_descr) {
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order" && !has_order) {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape" && !has_shape) {
        h.shape = tuple();
        has_shape = true;
      } else {
        bad(fmt::format("unexpected or repeated key '{}'", key));
      }
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') bad("expected ',' or '}'");
    }
    ++pos_;
    skip_blanks();
    if (pos_ != text_.size()) bad("text after the closing '}'");
    if (!has_descr || !has_order || !has_shape) {
      bad("it needs the keys 'descr', 'fortran_order' and 'shape'");
    }
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail("'{}': malformed .npy header at byte {}: {}", path_, pos_, what);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_blanks() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t'))
      ++pos_;
  }
  void expect(char c) {
    skip_blanks();
    if (peek() != c) bad(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string string_literal() {
    skip_blanks();
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a quoted string");
    const auto end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_blanks();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("fortran_order must be True or False");
  }
  std::int64_t integer() {
    skip_blanks();
    const std::size_t start = pos_;
    // The whole token up to ',' or ')': "4.5" or "-1" is one bad dimension.
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != ')' && text_[pos_] != ' ')
      ++pos_;
    const auto v = parse_int64(std::string(text_.substr(start, pos_ - start)), 0, INT64_MAX);
    if (!v) {
      pos_ = start;
      bad("a dimension must be a non-negative integer");
    }
    return *v;
  }
  Shape tuple() {
    expect('(');
    Shape out;
    skip_blanks();
    if (peek() == ')') {
      ++pos_;
      return out;
    }
    while (true) {
      out.push_back(integer());
      skip_blanks();
      if (peek() == ')') {
        // Python's (n) is a number, not a tuple: numpy writes (n,).
        if (out.size() == 1) bad("a one-dimensional shape is written (n,)");
        ++pos_;
        return out;
      }
      expect(',');
      skip_blanks();
      if (peek() == ')') {
        ++pos_;
        return out;
      }
    }
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

}  // namespace

Tensor parse_npy(std::string_view content, const std::string& path) {
  if (content.size() < 10 || content.compare(0, 6, std::string_view(kMagic, 6)) != 0) {
    fail("'{}' is not a .npy file (bad magic)", path);
  }
  const int major = static_cast<unsigned char>(content[6]);
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(content[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(content[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (content.size() < 12) fail("'{}': truncated .npy header", path);
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(content[8 + i])) << (8 * i);
    }
    offset = 12;
  } else {
    fail("'{}': unsupported .npy format version {}", path, major);
  }
  if (header_len > content.size() - offset) fail("'{}': truncated .npy header", path);
  const NpyHeader header = HeaderParser(content.substr(offset, header_len), path).parse();
  const DType dtype = dtype_of_descr(header.descr, path);
  if (header.fortran_order) {
    unsupported("'{}': Fortran-order .npy arrays are not supported", path);
  }
  const std::string what =
      fmt::format("'{}': {} {} array", path, dtype_name(dtype), shape_to_string(header.shape));
  const std::int64_t nbytes = checked_nbytes(header.shape, dtype_size(dtype), what);
  const std::size_t data_offset = offset + header_len;
  // Compared before allocating: a header cannot ask for more than the file holds.
  if (content.size() - data_offset < static_cast<std::uint64_t>(nbytes)) {
    fail("'{}': data is truncated ({} bytes, {} expected for {} {})", path,
         content.size() - data_offset, nbytes, dtype_name(dtype), shape_to_string(header.shape));
  }
  Tensor tensor(dtype, header.shape);
  if (nbytes > 0) std::memcpy(tensor.raw(), content.data() + data_offset, tensor.nbytes());
  return tensor;
}

Tensor read_npy(const std::string& path) {
  // Header (at most 4 GiB by format) plus data within the memory budget.
  const std::int64_t limit =
      add_no_overflow(memory_budget(), std::int64_t{1} << 32).value_or(INT64_MAX);
  const std::string content = read_regular_file(path, limit, ".npy file");
  return parse_npy(content, path);
}

std::string encode_npy(const Tensor& tensor) {
  // numpy has no bfloat16: such tensors are written widened to float32 (exact).
  if (tensor.dtype() == DType::BF16) return encode_npy(tensor.cast(DType::F32));
  std::string shape = "(";
  for (std::size_t i = 0; i < tensor.shape().size(); ++i) {
    shape += std::to_string(tensor.shape()[i]);
    shape += (tensor.shape().size() == 1 || i + 1 < tensor.shape().size()) ? "," : "";
    if (i + 1 < tensor.shape().size()) shape += " ";
  }
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(tensor.dtype()), shape);
  // Pad so the data starts on a 64-byte boundary, header ends with '\n'.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.raw()), tensor.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  write_file_atomically(path, encode_npy(tensor));
}

}  // namespace orchid
