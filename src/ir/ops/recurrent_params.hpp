// The attributes and operand sizes of one LSTM, GRU or RNN node, read once and checked
// once, for the shape function, the reference kernel, fission and the mapper alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/node.hpp"
#include "ir/shape.hpp"

namespace orchid {

struct RecurrentActivation {
  std::string name;  // ONNX name: Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu, ...
  float alpha = 0.0f;
  float beta = 0.0f;
  float apply(float x) const;
};

struct RecurrentParams {
  enum class Cell { LSTM, GRU, RNN } cell = Cell::LSTM;
  int gates = 4;                // weight rows per hidden unit: LSTM 4, GRU 3, RNN 1
  std::int64_t directions = 1;  // 2 when bidirectional
  bool reverse = false;         // direction == "reverse"
  std::int64_t hidden = 0;      // hidden_size
  std::int64_t input_size = 0;  // from W
  std::int64_t seq = 0;         // time steps
  std::int64_t batch = 0;
  bool batch_first = false;          // layout = 1
  float clip = 0.0f;                 // 0: no clipping
  bool input_forget = false;         // LSTM: couple input and forget gates
  bool linear_before_reset = false;  // GRU
  // Per direction: f, g (and h for LSTM) — the ONNX `activations` list split per direction.
  std::vector<std::vector<RecurrentActivation>> activations;

  Shape y_shape() const;  // Y: [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden])
  Shape state_shape() const;  // Y_h, Y_c: [dirs, batch, hidden] (layout 1: [batch, dirs, hidden])
};

// Reads and checks the node against its X and W shapes; an orchid::Error (or an
// UnsupportedError for an activation orchid lacks) naming the node.
RecurrentParams recurrent_params(const Node& node, const Shape& x, const Shape& w);

}  // namespace orchid
