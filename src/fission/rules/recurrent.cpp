// LSTM, GRU and RNN unrolled into linear and elementwise primitives, so the orchestrator
// plans each step: one MatMul of all steps' inputs by W (plus the biases) per direction,
// then per step a MatMul of the hidden state by R, slices of the gates, the activations
// and the cell update; Y, Y_h and Y_c are concatenations of the steps' states. The step
// count is the sequence length, so the primitive graph grows with it (about 15
// primitives per step and direction). Refused by name: sequence_lens shorter than the
// sequence (per-entry masking) and activations that are not primitives (Sigmoid, Tanh,
// Relu are).
#include <fmt/format.h>

#include "fission/rule.hpp"
#include "ir/ops/recurrent_params.hpp"

namespace orchid::fission_detail {

namespace {

using Cell = RecurrentParams::Cell;

std::string activation(RuleContext& ctx, const RecurrentActivation& a, const std::string& x,
                       const std::string& what) {
  if (a.name == "Sigmoid" || a.name == "Tanh" || a.name == "Relu") {
    return ctx.emit(a.name, {x}, {}, what);
  }
  ctx.unsupported(
      fmt::format("recurrent activation {} (only Sigmoid, Tanh and Relu unroll)", a.name));
}

// Rows [begin, end) of direction d of a [D, rows, cols] (or [D, rows]) constant.
std::string direction_rows(RuleContext& ctx, std::size_t input, std::int64_t d, std::int64_t begin,
                           std::int64_t end, const std::string& what) {
  const std::string x = ctx.input(input);
  std::string v = ctx.slice(x, {d, begin}, {d + 1, end}, {0, 1}, what + "_slice");
  Shape s = ctx.shape(v);
  s.erase(s.begin());
  return ctx.reshape(v, s, what);
}

void recurrent(RuleContext& ctx) {
  const Node& node = ctx.node();
  const RecurrentParams p =
      recurrent_params(node, ctx.shape(ctx.input(0)), ctx.shape(ctx.input(1)));
  const std::int64_t H = p.hidden, B = p.batch, T = p.seq, G = p.gates;
  if (node.has_input(4)) {
    const Tensor* lens = ctx.constant_value(ctx.input(4));
    bool full = lens != nullptr;
    for (std::int64_t i = 0; full && i < lens->numel(); ++i) full = lens->get_as_int64(i) == T;
    if (!full) ctx.unsupported("sequence_lens that may be shorter than the sequence");
  }
  for (std::size_t i : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}}) {
    if (node.has_input(i) && !ctx.constant_value(ctx.input(i))) {
      ctx.unsupported(fmt::format("weight input {} computed at run time", i));
    }
  }
  // X as [T, B, I].
  std::string x = ctx.input(0);
  if (p.batch_first) x = ctx.transpose(x, {1, 0, 2}, "x_seq_first");
  const bool lstm = p.cell == Cell::LSTM, gru = p.cell == Cell::GRU;
  const std::string one = ctx.scalar("one", 1.0, DType::F32);
  auto clip = [&](const std::string& v, const std::string& what) {
    if (p.clip <= 0.0f) return v;
    return ctx.emit("Clip",
                    {v, ctx.scalar(what + "_lo", -p.clip, DType::F32),
                     ctx.scalar(what + "_hi", p.clip, DType::F32)},
                    {}, what);
  };
  auto cols = [&](const std::string& v, std::int64_t gate, const std::string& what) {
    return ctx.slice(v, {gate * H}, {(gate + 1) * H}, {1}, what);
  };
  std::vector<std::string> ys, hs, cs;
  for (std::int64_t d = 0; d < p.directions; ++d) {
    const std::string dn = fmt::format("d{}", d);
    const auto& act = p.activations[static_cast<std::size_t>(d)];
    // All steps' input products at once: [T, B, I] x [I, G*H] (+ the biases R does not gate).
    const std::string wt =
        ctx.transpose(direction_rows(ctx, 1, d, 0, G * H, dn + "_W"), {1, 0}, dn + "_Wt");
    std::string xw = ctx.emit("MatMul", {x, wt}, {}, dn + "_xw");
    std::string rbh;  // GRU's recurrent candidate bias, inside the reset gate's reach
    if (node.has_input(3)) {
      std::string bias = direction_rows(ctx, 3, d, 0, G * H, dn + "_Wb");
      const std::string rb = direction_rows(ctx, 3, d, G * H, 2 * G * H, dn + "_Rb");
      if (gru) {
        rbh = ctx.slice(rb, {2 * H}, {3 * H}, {0}, dn + "_Rbh");
        const std::string rbzr = ctx.slice(rb, {0}, {2 * H}, {0}, dn + "_Rbzr");
        const std::string zeros = ctx.constant(dn + "_zeros", Tensor(DType::F32, {H}));
        bias = ctx.emit(
            "Add",
            {bias, ctx.emit("Concat", {rbzr, zeros}, {{"axis", std::int64_t{0}}}, dn + "_Rb_zr0")},
            {}, dn + "_bias");
      } else {
        bias = ctx.emit("Add", {bias, rb}, {}, dn + "_bias");
      }
      xw = ctx.emit("Add", {xw, bias}, {}, dn + "_xwb");
    }
    const std::string rt =
        ctx.transpose(direction_rows(ctx, 2, d, 0, G * H, dn + "_R"), {1, 0}, dn + "_Rt");
    std::string rt_zr, rt_h;
    if (gru) {
      rt_zr = ctx.slice(rt, {0}, {2 * H}, {1}, dn + "_Rt_zr");
      rt_h = ctx.slice(rt, {2 * H}, {3 * H}, {1}, dn + "_Rt_h");
    }
    std::string peep[3];
    if (lstm && node.has_input(7)) {
      for (std::int64_t k = 0; k < 3; ++k) {
        peep[k] = direction_rows(ctx, 7, d, k * H, (k + 1) * H, fmt::format("{}_P{}", dn, k));
      }
    }
    auto initial = [&](std::size_t input, const char* what) {
      if (!node.has_input(input)) return ctx.constant(dn + what, Tensor(DType::F32, {B, H}));
      std::string v = ctx.input(input);
      if (p.batch_first) v = ctx.transpose(v, {1, 0, 2}, dn + what + "_dir_first");
      return ctx.reshape(ctx.slice(v, {d}, {d + 1}, {0}, dn + what + "_slice"), {B, H}, dn + what);
    };
    std::string h = initial(5, "_h0");
    std::string c = lstm ? initial(6, "_c0") : "";
    std::vector<std::string> steps(static_cast<std::size_t>(T));
    for (std::int64_t s = 0; s < T; ++s) {
      const std::int64_t t = (p.reverse || d == 1) ? T - 1 - s : s;
      const std::string sn = fmt::format("{}_t{}", dn, t);
      const std::string xt =
          ctx.reshape(ctx.slice(xw, {t}, {t + 1}, {0}, sn + "_x"), {B, G * H}, sn + "_xt");
      if (p.cell == Cell::RNN) {
        const std::string z =
            ctx.emit("Add", {xt, ctx.emit("MatMul", {h, rt}, {}, sn + "_hr")}, {}, sn + "_z");
        h = activation(ctx, act[0], clip(z, sn + "_clip"), sn + "_h");
      } else if (lstm) {
        const std::string z =
            ctx.emit("Add", {xt, ctx.emit("MatMul", {h, rt}, {}, sn + "_hr")}, {}, sn + "_z");
        auto gate = [&](std::int64_t k, const std::string& pk, const std::string& state,
                        const std::string& what) {
          std::string v = cols(z, k, sn + "_" + what + "_pre");
          if (!pk.empty()) {
            v = ctx.emit("Add", {v, ctx.emit("Mul", {pk, state}, {}, sn + "_" + what + "_peep")},
                         {}, sn + "_" + what + "_peeped");
          }
          return activation(ctx, act[0], clip(v, sn + "_" + what + "_clip"), sn + "_" + what);
        };
        const std::string ig = gate(0, peep[0], c, "i");
        const std::string fg =
            p.input_forget ? ctx.emit("Sub", {one, ig}, {}, sn + "_f") : gate(2, peep[2], c, "f");
        const std::string cand =
            activation(ctx, act[1], clip(cols(z, 3, sn + "_c_pre"), sn + "_c_clip"), sn + "_cand");
        c = ctx.emit(
            "Add",
            {ctx.emit("Mul", {fg, c}, {}, sn + "_fc"), ctx.emit("Mul", {ig, cand}, {}, sn + "_ic")},
            {}, sn + "_c");
        const std::string og = gate(1, peep[1], c, "o");
        h = ctx.emit("Mul", {og, activation(ctx, act[2], c, sn + "_hc")}, {}, sn + "_h");
      } else {
        const std::string zr_x = ctx.slice(xt, {0}, {2 * H}, {1}, sn + "_xzr");
        const std::string zr = ctx.emit(
            "Add", {zr_x, ctx.emit("MatMul", {h, rt_zr}, {}, sn + "_hzr")}, {}, sn + "_zr_pre");
        const std::string z =
            activation(ctx, act[0], clip(cols(zr, 0, sn + "_z_pre"), sn + "_zc"), sn + "_z");
        const std::string r =
            activation(ctx, act[0], clip(cols(zr, 1, sn + "_r_pre"), sn + "_rc"), sn + "_r");
        std::string hh;
        if (p.linear_before_reset) {
          hh = ctx.emit("MatMul", {h, rt_h}, {}, sn + "_hh");
          if (!rbh.empty()) hh = ctx.emit("Add", {hh, rbh}, {}, sn + "_hhb");
          hh = ctx.emit("Mul", {r, hh}, {}, sn + "_rhh");
        } else {
          hh = ctx.emit("MatMul", {ctx.emit("Mul", {r, h}, {}, sn + "_rh"), rt_h}, {}, sn + "_hh");
          if (!rbh.empty()) hh = ctx.emit("Add", {hh, rbh}, {}, sn + "_hhb");
        }
        const std::string cand = activation(
            ctx, act[1],
            clip(ctx.emit("Add", {cols(xt, 2, sn + "_xh"), hh}, {}, sn + "_cand_pre"), sn + "_cc"),
            sn + "_cand");
        // h' = cand + z * (h - cand) = (1 - z) * cand + z * h
        h = ctx.emit("Add",
                     {cand, ctx.emit("Mul", {z, ctx.emit("Sub", {h, cand}, {}, sn + "_dh")}, {},
                                     sn + "_zdh")},
                     {}, sn + "_h");
      }
      if (!ctx.output(0).empty()) {
        steps[static_cast<std::size_t>(t)] = ctx.reshape(h, {1, 1, B, H}, sn + "_y");
      }
    }
    if (!ctx.output(0).empty()) {
      ys.push_back(T == 1 ? steps[0]
                          : ctx.emit("Concat", steps, {{"axis", std::int64_t{0}}}, dn + "_Y"));
    }
    if (!ctx.output(1).empty()) hs.push_back(ctx.reshape(h, {1, B, H}, dn + "_Yh"));
    if (lstm && !ctx.output(2).empty()) cs.push_back(ctx.reshape(c, {1, B, H}, dn + "_Yc"));
  }
  auto join = [&](const std::vector<std::string>& parts, std::int64_t axis,
                  const std::string& what) {
    return parts.size() == 1 ? parts[0] : ctx.emit("Concat", parts, {{"axis", axis}}, what);
  };
  // Only the outputs the model reads are assembled (no dead primitives).
  auto finish = [&](const std::vector<std::string>& parts, std::int64_t axis, const char* what,
                    const std::vector<std::int64_t>& perm, std::size_t out) {
    if (ctx.output(out).empty()) return;
    const std::string v = join(parts, axis, what);
    if (p.batch_first) {
      ctx.transpose(v, perm, "", ctx.output(out));
    } else {
      ctx.alias(ctx.output(out), v);
    }
  };
  finish(ys, 1, "Y", {2, 0, 1, 3}, 0);
  finish(hs, 0, "Y_h", {1, 0, 2}, 1);
  if (lstm) finish(cs, 0, "Y_c", {1, 0, 2}, 2);
}

}  // namespace

void register_recurrent_rules(RuleTable& table) {
  table["GRU"] = recurrent;
  table["LSTM"] = recurrent;
  table["RNN"] = recurrent;
}

}  // namespace orchid::fission_detail
