// Element and operation counts of a layer, from its dimensions (see workload.hpp).
#include "mapping/workload.hpp"

namespace orchid::mapping {

double Layer::weight_elements() const {
  switch (kind) {
    case LayerKind::Conv:
      return static_cast<double>(m) * n * k * k;
    case LayerKind::Fc:
      return static_cast<double>(m) * n;
    case LayerKind::Lstm:
      return static_cast<double>(gates) * hidden * (hidden + dimen);
    default:
      return 0;
  }
}

double Layer::input_elements() const {
  double per = static_cast<double>(in_elems);
  if (per == 0) {
    switch (kind) {
      case LayerKind::Conv:
        per = static_cast<double>(n) * ((r - 1) * s + k) * ((c - 1) * s + k);
        break;
      case LayerKind::Fc:
        per = static_cast<double>(n) * k;
        break;
      case LayerKind::MatMul:
        per = static_cast<double>(g) * n * (m + k);
        break;
      case LayerKind::Lstm:
        per = static_cast<double>(iter) * dimen;
        break;
      case LayerKind::Cheap:
        per = static_cast<double>(elems);
        break;
    }
  }
  return per * batch;
}

double Layer::output_elements() const {
  double per = static_cast<double>(out_elems);
  if (per == 0) {
    switch (kind) {
      case LayerKind::Conv:
        per = static_cast<double>(m) * r * c;
        break;
      case LayerKind::Fc:
        per = static_cast<double>(m) * k;
        break;
      case LayerKind::MatMul:
        per = static_cast<double>(g) * m * k;
        break;
      case LayerKind::Lstm:
        per = static_cast<double>(iter) * hidden;
        break;
      case LayerKind::Cheap:
        per = static_cast<double>(elems);
        break;
    }
  }
  return per * batch;
}

double Layer::ops() const {
  double per = 0;
  switch (kind) {
    case LayerKind::Conv:
      per = 2.0 * m * n * k * k * r * c;
      break;
    case LayerKind::Fc:
      per = 2.0 * m * n * k;
      break;
    case LayerKind::MatMul:
      per = 2.0 * g * m * n * k;
      break;
    case LayerKind::Lstm:
      per = static_cast<double>(iter) * 2.0 * static_cast<double>(gates) *
            (static_cast<double>(hidden) * dimen + static_cast<double>(hidden) * hidden);
      break;
    case LayerKind::Cheap:
      break;
  }
  return (per + static_cast<double>(elems)) * batch;
}

}  // namespace orchid::mapping
