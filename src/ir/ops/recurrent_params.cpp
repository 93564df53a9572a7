#include "ir/ops/recurrent_params.hpp"

#include <algorithm>
#include <cmath>

#include "util/error.hpp"

namespace orchid {

namespace {

// The activations ONNX defines for recurrent cells, with their default alpha/beta.
struct KnownActivation {
  const char* name;
  int params;  // how many of alpha, beta it takes from the attribute lists
  float alpha;
  float beta;
};
constexpr KnownActivation kKnown[] = {
    {"Affine", 2, 1.0f, 0.0f},
    {"Elu", 1, 1.0f, 0.0f},
    {"HardSigmoid", 2, 0.2f, 0.5f},
    {"LeakyRelu", 1, 0.01f, 0.0f},
    {"Relu", 0, 0.0f, 0.0f},
    {"ScaledTanh", 2, 1.0f, 1.0f},
    {"Sigmoid", 0, 0.0f, 0.0f},
    {"Softplus", 0, 0.0f, 0.0f},
    {"Softsign", 0, 0.0f, 0.0f},
    {"Tanh", 0, 0.0f, 0.0f},
    {"ThresholdedRelu", 1, 1.0f, 0.0f},
};

std::string canonical(const std::string& name) {
  // Exporters spell these in different cases ("sigmoid", "Tanh").
  for (const auto& k : kKnown) {
    std::string a = k.name, b = name;
    std::transform(a.begin(), a.end(), a.begin(), ::tolower);
    std::transform(b.begin(), b.end(), b.begin(), ::tolower);
    if (a == b) return k.name;
  }
  return {};
}

}  // namespace

float RecurrentActivation::apply(float x) const {
  // Names are canonical (checked in recurrent_params); the first letters decide.
  switch (name[0]) {
    case 'A':
      return alpha * x + beta;
    case 'E':
      return x >= 0.0f ? x : alpha * (std::exp(x) - 1.0f);
    case 'H':
      return std::clamp(alpha * x + beta, 0.0f, 1.0f);
    case 'L':
      return x >= 0.0f ? x : alpha * x;
    case 'R':
      return std::max(x, 0.0f);
    case 'T':
      if (name == "Tanh") return std::tanh(x);
      return x > alpha ? x : 0.0f;  // ThresholdedRelu
    default:
      break;
  }
  if (name == "Sigmoid") return 1.0f / (1.0f + std::exp(-x));
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  if (name == "Softplus") return std::log1p(std::exp(x));
  return x / (1.0f + std::abs(x));  // Softsign
}

Shape RecurrentParams::y_shape() const {
  return batch_first ? Shape{batch, seq, directions, hidden}
                     : Shape{seq, directions, batch, hidden};
}

Shape RecurrentParams::state_shape() const {
  return batch_first ? Shape{batch, directions, hidden} : Shape{directions, batch, hidden};
}

RecurrentParams recurrent_params(const Node& node, const Shape& x, const Shape& w) {
  RecurrentParams p;
  if (node.op_type == "GRU") {
    p.cell = RecurrentParams::Cell::GRU;
    p.gates = 3;
  } else if (node.op_type == "RNN") {
    p.cell = RecurrentParams::Cell::RNN;
    p.gates = 1;
  }
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "bidirectional") {
    p.directions = 2;
  } else if (direction == "reverse") {
    p.reverse = true;
  } else if (direction != "forward") {
    fail("{}: direction must be forward, reverse or bidirectional, got '{}'", node.describe(),
         direction);
  }
  p.batch_first = node.attr_int("layout", 0) != 0;
  if (x.size() != 3) fail("{}: X must have rank 3, got {}", node.describe(), shape_to_string(x));
  p.seq = p.batch_first ? x[1] : x[0];
  p.batch = p.batch_first ? x[0] : x[1];
  if (w.size() != 3 || w[0] != p.directions || w[1] % p.gates != 0 || w[2] != x[2]) {
    fail("{}: W has shape {}; expected [{}, {}*hidden_size, {}]", node.describe(),
         shape_to_string(w), p.directions, p.gates, x[2]);
  }
  p.input_size = x[2];
  p.hidden = node.attr_int("hidden_size", w[1] / p.gates);
  if (p.hidden * p.gates != w[1]) {
    fail("{}: hidden_size {} disagrees with W's {} rows ({} gates)", node.describe(), p.hidden,
         w[1], p.gates);
  }
  p.clip = node.attr_float("clip", 0.0f);
  if (p.clip < 0.0f) fail("{}: clip must be positive, got {}", node.describe(), p.clip);
  p.input_forget = node.attr_int("input_forget", 0) != 0;
  p.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;

  const std::size_t per_dir = p.cell == RecurrentParams::Cell::LSTM  ? 3
                              : p.cell == RecurrentParams::Cell::GRU ? 2
                                                                     : 1;
  std::vector<std::string> names;
  if (node.has_attribute("activations")) {
    const auto& attr = node.attributes.at("activations");
    if (const auto* list = std::get_if<std::vector<std::string>>(&attr))
      names = *list;
    else if (const auto* one = std::get_if<std::string>(&attr))
      names = {*one};
    else
      fail("{}: attribute 'activations' must be a list of strings", node.describe());
  }
  if (names.empty()) {
    for (std::int64_t d = 0; d < p.directions; ++d) {
      if (p.cell == RecurrentParams::Cell::LSTM)
        names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
      if (p.cell == RecurrentParams::Cell::GRU) names.insert(names.end(), {"Sigmoid", "Tanh"});
      if (p.cell == RecurrentParams::Cell::RNN) names.insert(names.end(), {"Tanh"});
    }
  }
  if (names.size() != per_dir * static_cast<std::size_t>(p.directions)) {
    fail("{}: 'activations' lists {} functions; {} per direction expected", node.describe(),
         names.size(), per_dir);
  }
  const auto alphas = node.attr_floats("activation_alpha", {});
  const auto betas = node.attr_floats("activation_beta", {});
  std::size_t next_alpha = 0, next_beta = 0;
  p.activations.assign(static_cast<std::size_t>(p.directions), {});
  for (std::size_t i = 0; i < names.size(); ++i) {
    RecurrentActivation a;
    a.name = canonical(names[i]);
    if (a.name.empty()) {
      throw UnsupportedError(
          fmt::format("{}: unsupported: recurrent activation '{}'", node.describe(), names[i]));
    }
    const auto known = *std::find_if(std::begin(kKnown), std::end(kKnown),
                                     [&](const KnownActivation& k) { return a.name == k.name; });
    a.alpha = known.alpha;
    a.beta = known.beta;
    // Alpha and beta lists hold values only for the functions that take them, in order.
    if (known.params >= 1 && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (known.params >= 2 && next_beta < betas.size()) a.beta = betas[next_beta++];
    p.activations[i / per_dir].push_back(a);
  }
  return p;
}

}  // namespace orchid
