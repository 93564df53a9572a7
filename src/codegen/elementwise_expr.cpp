#include "codegen/elementwise_expr.hpp"

#include <fmt/format.h>

#include <set>

#include "codegen/kernel_writer.hpp"
#include "util/error.hpp"

namespace orchid::codegen {

namespace {

const std::set<std::string>& supported() {
  static const std::set<std::string> ops = {"Abs",
                                            "Acos",
                                            "Acosh",
                                            "Add",
                                            "And",
                                            "Asin",
                                            "Asinh",
                                            "Atan",
                                            "Atanh",
                                            "Cast",
                                            "CastLike",
                                            "Ceil",
                                            "Celu",
                                            "Clip",
                                            "Cos",
                                            "Cosh",
                                            "Div",
                                            "Elu",
                                            "Equal",
                                            "Erf",
                                            "Exp",
                                            "Floor",
                                            "Greater",
                                            "GreaterOrEqual",
                                            "IsInf",
                                            "IsNaN",
                                            "LeakyRelu",
                                            "Less",
                                            "LessOrEqual",
                                            "Log",
                                            "Max",
                                            "Min",
                                            "Mod",
                                            "Mul",
                                            "Neg",
                                            "Not",
                                            "Or",
                                            "PRelu",
                                            "Pow",
                                            "Reciprocal",
                                            "Relu",
                                            "Round",
                                            "Selu",
                                            "Shrink",
                                            "Sigmoid",
                                            "Sign",
                                            "Sin",
                                            "Sinh",
                                            "Softplus",
                                            "Softsign",
                                            "Sqrt",
                                            "Sub",
                                            "Tan",
                                            "Tanh",
                                            "ThresholdedRelu",
                                            "Where",
                                            "Xor",
                                            "Identity"};
  return ops;
}

bool floating(DType t) {
  return t == DType::F32 || t == DType::F64;
}

std::string cast(const std::string& x, DType to) {
  return fmt::format("(({}){})", KernelWriter::c_type(to), x);
}

}  // namespace

bool has_elementwise_expr(const std::string& op_type) {
  return supported().count(op_type) != 0;
}

std::string elementwise_expr(const Node& node, const std::vector<std::string>& args,
                             const std::vector<DType>& types, DType out) {
  const std::string& op = node.op_type;
  if (!has_elementwise_expr(op)) {
    unsupported("{}: no device code for op type '{}'", node.describe(), op);
  }
  auto a = [&](std::size_t i) { return args.at(i); };
  const DType t0 = types.empty() ? out : types[0];
  const bool f = floating(t0);
  const std::string T = KernelWriter::c_type(out);
  auto lit = [&](double v) { return literal(v, floating(out) ? out : DType::F32); };
  // Unary float functions.
  static const std::map<std::string, std::string> unary = {
      {"Exp", "expf"},     {"Log", "logf"},     {"Sqrt", "sqrtf"}, {"Erf", "erff"},
      {"Tanh", "tanhf"},   {"Floor", "floorf"}, {"Ceil", "ceilf"}, {"Sin", "sinf"},
      {"Cos", "cosf"},     {"Tan", "tanf"},     {"Asin", "asinf"}, {"Acos", "acosf"},
      {"Atan", "atanf"},   {"Sinh", "sinhf"},   {"Cosh", "coshf"}, {"Asinh", "asinhf"},
      {"Acosh", "acoshf"}, {"Atanh", "atanhf"}, {"Round", "rintf"}};
  if (auto it = unary.find(op); it != unary.end()) {
    if (!f && (op == "Floor" || op == "Ceil" || op == "Round")) return a(0);
    return fmt::format("{}({})", it->second, a(0));
  }
  if (op == "Identity") return a(0);
  if (op == "Cast" || op == "CastLike") {
    if (out == DType::Bool) return fmt::format("((u8)({} != 0))", a(0));
    return cast(a(0), out);
  }
  if (op == "Sigmoid") return fmt::format("orchid_sigmoid({})", a(0));
  if (op == "Softplus") return fmt::format("orchid_softplus({})", a(0));
  if (op == "Softsign") return fmt::format("({0} / ({1} + fabsf({0})))", a(0), lit(1));
  if (op == "Relu")
    return f ? fmt::format("fmaxf({}, {})", a(0), lit(0))
             : fmt::format("({0} > 0 ? {0} : ({1})0)", a(0), T);
  if (op == "Neg") return fmt::format("(-{})", a(0));
  if (op == "Abs")
    return f ? fmt::format("fabsf({})", a(0))
             : fmt::format("({0} < 0 ? ({1})(-{0}) : {0})", a(0), T);
  if (op == "Reciprocal") return fmt::format("({} / {})", lit(1), a(0));
  if (op == "Sign") return fmt::format("(({0})(({1} > 0) - ({1} < 0)))", T, a(0));
  if (op == "Not") return fmt::format("((u8)!{})", a(0));
  if (op == "IsNaN") return fmt::format("((u8)({0} != {0}))", a(0));
  if (op == "IsInf") {
    const bool pos = node.attr_int("detect_positive", 1) != 0;
    const bool neg = node.attr_int("detect_negative", 1) != 0;
    return fmt::format("((u8)(({0} == ORCHID_INF && {1}) || ({0} == -ORCHID_INF && {2})))", a(0),
                       pos ? 1 : 0, neg ? 1 : 0);
  }
  if (op == "LeakyRelu") {
    return fmt::format("({0} >= 0 ? {0} : {1} * {0})", a(0), lit(node.attr_float("alpha", 0.01f)));
  }
  if (op == "Elu") {
    return fmt::format("({0} >= 0 ? {0} : {1} * (expf({0}) - 1.0f))", a(0),
                       lit(node.attr_float("alpha", 1.0f)));
  }
  if (op == "Selu") {
    return fmt::format("({2} * ({0} > 0 ? {0} : {1} * (expf({0}) - 1.0f)))", a(0),
                       lit(node.attr_float("alpha", 1.67326319217681884765625f)),
                       lit(node.attr_float("gamma", 1.05070102214813232421875f)));
  }
  if (op == "Celu") {
    const std::string alpha = lit(node.attr_float("alpha", 1.0f));
    return fmt::format("(fmaxf({0}, 0.0f) + fminf(0.0f, {1} * (expf({0} / {1}) - 1.0f)))", a(0),
                       alpha);
  }
  if (op == "ThresholdedRelu") {
    return fmt::format("({0} > {1} ? {0} : {2})", a(0), lit(node.attr_float("alpha", 1.0f)),
                       lit(0));
  }
  if (op == "Shrink") {
    const std::string l = lit(node.attr_float("lambd", 0.5f));
    const std::string b = lit(node.attr_float("bias", 0.0f));
    return fmt::format("({0} < -{1} ? {0} + {2} : ({0} > {1} ? {0} - {2} : {3}))", a(0), l, b,
                       lit(0));
  }
  if (op == "Clip") {
    std::string x = a(0);
    if (node.has_input(1)) x = fmt::format("({0} < {1} ? {1} : {0})", x, a(1));
    if (node.has_input(2)) x = fmt::format("({0} > {1} ? {1} : {0})", x, a(2));
    return x;
  }
  if (op == "Where") return fmt::format("({} ? {} : {})", a(0), a(1), a(2));
  // Binary.
  static const std::map<std::string, std::string> arith = {
      {"Add", "+"}, {"Sub", "-"}, {"Mul", "*"}, {"Div", "/"}};
  if (auto it = arith.find(op); it != arith.end()) {
    return fmt::format("(({}){} {} ({}){})", T, a(0), it->second, T, a(1));
  }
  static const std::map<std::string, std::string> compare = {{"Equal", "=="},
                                                             {"Less", "<"},
                                                             {"Greater", ">"},
                                                             {"LessOrEqual", "<="},
                                                             {"GreaterOrEqual", ">="}};
  if (auto it = compare.find(op); it != compare.end()) {
    return fmt::format("((u8)({} {} {}))", a(0), it->second, a(1));
  }
  if (op == "And") return fmt::format("((u8)({} && {}))", a(0), a(1));
  if (op == "Or") return fmt::format("((u8)({} || {}))", a(0), a(1));
  if (op == "Xor") return fmt::format("((u8)((!{}) != (!{})))", a(0), a(1));
  if (op == "Max" || op == "Min") {
    if (f) return fmt::format("{}({}, {})", op == "Max" ? "fmaxf" : "fminf", a(0), a(1));
    return fmt::format("({0} {2} {1} ? {0} : {1})", a(0), a(1), op == "Max" ? ">" : "<");
  }
  if (op == "PRelu") return fmt::format("({0} < 0 ? {1} * {0} : {0})", a(0), a(1));
  if (op == "Pow") {
    if (f) return fmt::format("(({})powf({}, (float){}))", T, a(0), a(1));
    return fmt::format("(({})powf((float){}, (float){}))", T, a(0), a(1));
  }
  if (op == "Mod") {
    if (f) return fmt::format("fmodf({}, {})", a(0), a(1));
    const std::string r = fmt::format("({} % {})", a(0), a(1));
    if (node.attr_int("fmod", 0) != 0) return r;
    // Python-style: the remainder takes the divisor's sign.
    return fmt::format("(({0} != 0 && (({0} < 0) != ({1} < 0))) ? ({0} + {1}) : {0})", r, a(1));
  }
  unsupported("{}: no device code for op type '{}'", node.describe(), op);
}

}  // namespace orchid::codegen
