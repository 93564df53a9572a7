// Reference kernels of LSTM, GRU and RNN: the ONNX equations step by step, per direction
// and batch entry, in float. Steps past an entry's sequence length write zeros to Y and
// leave its state alone, so Y_h/Y_c hold the state after the entry's last real step.
#include <algorithm>
#include <cmath>

#include "eval/reference/reference_kernels.hpp"
#include "ir/ops/recurrent_params.hpp"

namespace orchid {

namespace {

using Cell = RecurrentParams::Cell;

// y[r] = sum_k m[r, k] * v[k] for rows [0, rows) of a row-major matrix.
void mat_vec(const float* m, const float* v, std::int64_t rows, std::int64_t cols, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = m + r * cols;
    float s = 0.0f;
    for (std::int64_t k = 0; k < cols; ++k) s += row[k] * v[k];
    y[r] = s;
  }
}

void recurrent(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[1];
  const Tensor& rw = *inputs[2];
  auto input = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  const RecurrentParams p = recurrent_params(node, x.shape(), w.shape());
  const std::int64_t H = p.hidden, I = p.input_size, G = p.gates, B = p.batch, T = p.seq,
                     D = p.directions;
  const std::int64_t rows = G * H;
  const float* xd = x.data<float>();
  const Tensor* bias = input(3);
  const Tensor* lens = input(4);
  const Tensor* h0 = input(5);
  const Tensor* c0 = p.cell == Cell::LSTM ? input(6) : nullptr;
  const Tensor* peep = p.cell == Cell::LSTM ? input(7) : nullptr;
  auto out = [&](std::size_t i) -> float* {
    return i < outputs.size() && outputs[i].nbytes() > 0 ? outputs[i].data<float>() : nullptr;
  };
  float* y = out(0);
  float* yh = out(1);
  float* yc = p.cell == Cell::LSTM ? out(2) : nullptr;
  auto x_at = [&](std::int64_t t, std::int64_t b) {
    return xd + (p.batch_first ? b * T + t : t * B + b) * I;
  };
  auto y_at = [&](std::int64_t t, std::int64_t d, std::int64_t b) {
    return y + (p.batch_first ? (b * T + t) * D + d : (t * D + d) * B + b) * H;
  };
  auto state_index = [&](std::int64_t d, std::int64_t b) {
    return (p.batch_first ? b * D + d : d * B + b) * H;
  };
  auto clip = [&](float v) { return p.clip > 0.0f ? std::clamp(v, -p.clip, p.clip) : v; };
  if (y) std::fill(y, y + outputs[0].numel(), 0.0f);

  std::vector<float> xg(static_cast<std::size_t>(rows)), hg(static_cast<std::size_t>(rows)),
      h(static_cast<std::size_t>(H)), c(static_cast<std::size_t>(H)),
      rh(static_cast<std::size_t>(H));
  for (std::int64_t d = 0; d < D; ++d) {
    const bool backward = p.reverse || d == 1;
    const float* wd = w.data<float>() + d * rows * I;
    const float* rd = rw.data<float>() + d * rows * H;
    const float* wb = bias ? bias->data<float>() + d * 2 * rows : nullptr;
    const float* rb = wb ? wb + rows : nullptr;
    const float* pd = peep ? peep->data<float>() + d * 3 * H : nullptr;
    const auto& act = p.activations[static_cast<std::size_t>(d)];
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t len = lens ? std::clamp<std::int64_t>(lens->get_as_int64(b), 0, T) : T;
      const std::int64_t s = state_index(d, b);
      for (std::int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0->data<float>()[s + j] : 0.0f;
        c[j] = c0 ? c0->data<float>()[s + j] : 0.0f;
      }
      for (std::int64_t step = 0; step < len; ++step) {
        const std::int64_t t = backward ? len - 1 - step : step;
        mat_vec(wd, x_at(t, b), rows, I, xg.data());
        if (wb) {
          for (std::int64_t r = 0; r < rows; ++r) xg[r] += wb[r];
        }
        if (p.cell == Cell::GRU) {
          // z and r gates see R*h; the candidate sees R*(r.h) or r.(R*h + Rb).
          mat_vec(rd, h.data(), 2 * H, H, hg.data());
          std::vector<float> z(static_cast<std::size_t>(H)), rgate(static_cast<std::size_t>(H));
          for (std::int64_t j = 0; j < H; ++j) {
            z[j] = act[0].apply(clip(xg[j] + hg[j] + (rb ? rb[j] : 0.0f)));
            rgate[j] = act[0].apply(clip(xg[H + j] + hg[H + j] + (rb ? rb[H + j] : 0.0f)));
          }
          const float* rh_rows = rd + 2 * H * H;
          const float* rbh = rb ? rb + 2 * H : nullptr;
          if (p.linear_before_reset) {
            mat_vec(rh_rows, h.data(), H, H, hg.data());
            for (std::int64_t j = 0; j < H; ++j) {
              hg[j] = rgate[j] * (hg[j] + (rbh ? rbh[j] : 0.0f));
            }
          } else {
            for (std::int64_t j = 0; j < H; ++j) rh[j] = rgate[j] * h[j];
            mat_vec(rh_rows, rh.data(), H, H, hg.data());
            for (std::int64_t j = 0; j < H; ++j) hg[j] += rbh ? rbh[j] : 0.0f;
          }
          for (std::int64_t j = 0; j < H; ++j) {
            const float cand = act[1].apply(clip(xg[2 * H + j] + hg[j]));
            h[j] = (1.0f - z[j]) * cand + z[j] * h[j];
          }
        } else {
          mat_vec(rd, h.data(), rows, H, hg.data());
          for (std::int64_t r = 0; r < rows; ++r) xg[r] += hg[r] + (rb ? rb[r] : 0.0f);
          if (p.cell == Cell::RNN) {
            for (std::int64_t j = 0; j < H; ++j) h[j] = act[0].apply(clip(xg[j]));
          } else {
            // Gate rows: input, output, forget, cell; peepholes: input, output, forget.
            for (std::int64_t j = 0; j < H; ++j) {
              const float ig = act[0].apply(clip(xg[j] + (pd ? pd[j] * c[j] : 0.0f)));
              const float fg =
                  p.input_forget
                      ? 1.0f - ig
                      : act[0].apply(clip(xg[2 * H + j] + (pd ? pd[2 * H + j] * c[j] : 0.0f)));
              const float cand = act[1].apply(clip(xg[3 * H + j]));
              c[j] = fg * c[j] + ig * cand;
              const float og = act[0].apply(clip(xg[H + j] + (pd ? pd[H + j] * c[j] : 0.0f)));
              h[j] = og * act[2].apply(c[j]);
            }
          }
        }
        if (y) std::copy(h.begin(), h.end(), y_at(t, d, b));
      }
      if (yh) std::copy(h.begin(), h.end(), yh + s);
      if (yc) std::copy(c.begin(), c.end(), yc + s);
    }
  }
}

}  // namespace

void register_recurrent_kernels(ReferenceKernelTable& table) {
  table["GRU"] = recurrent;
  table["LSTM"] = recurrent;
  table["RNN"] = recurrent;
}

}  // namespace orchid
