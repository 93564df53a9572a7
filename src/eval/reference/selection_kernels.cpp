// Reference kernels whose output sizes depend on the data: NonZero and
// NonMaxSuppression. Both follow ONNX Runtime's conventions where the spec leaves room
// (NMS: candidates strictly above score_threshold, ties in score broken by the lower box
// index, a box suppressed when IoU > iou_threshold, output grouped by batch then class).
#include <algorithm>
#include <numeric>

#include "eval/reference/reference_kernels.hpp"
#include "util/error.hpp"

namespace orchid {

namespace {

std::vector<Tensor> non_zero(const Node&, std::span<const Tensor* const> inputs) {
  const Tensor& x = *inputs[0];
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();  // a scalar acts as [1]
  std::vector<std::int64_t> hits;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (x.get_as_double(i) != 0.0) hits.push_back(i);
  }
  const auto rank = static_cast<std::int64_t>(shape.size());
  const auto count = static_cast<std::int64_t>(hits.size());
  Tensor out(DType::I64, {rank, count});
  auto values = out.values<std::int64_t>();
  for (std::int64_t k = 0; k < count; ++k) {
    std::int64_t flat = hits[static_cast<std::size_t>(k)];
    for (std::int64_t d = rank - 1; d >= 0; --d) {
      const std::int64_t extent = shape[static_cast<std::size_t>(d)];
      values[static_cast<std::size_t>(d * count + k)] = flat % extent;
      flat /= extent;
    }
  }
  return {std::move(out)};
}

struct Corners {
  float y1, x1, y2, x2;
};

// Corners with y1 <= y2, x1 <= x2 whatever order the box gives them in.
Corners corners_of(const float* b, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    const float hw = b[2] / 2, hh = b[3] / 2;
    return {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

float iou(const Corners& a, const Corners& b) {
  const float area_a = (a.y2 - a.y1) * (a.x2 - a.x1);
  const float area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
  if (area_a <= 0 || area_b <= 0) return 0;
  const float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return 0;
  const float inter = h * w;
  return inter / (area_a + area_b - inter);
}

std::vector<Tensor> non_max_suppression(const Node& node, std::span<const Tensor* const> inputs) {
  const Tensor& boxes = *inputs[0];
  const Tensor& scores = *inputs[1];
  auto scalar = [&](std::size_t i, double fallback) {
    return i < inputs.size() && inputs[i] ? inputs[i]->get_as_double(0) : fallback;
  };
  // Exporters pass INT64_MAX for "no limit": read it as an integer, not via double.
  const std::int64_t max_per_class =
      inputs.size() > 2 && inputs[2] ? inputs[2]->get_as_int64(0) : 0;
  const auto iou_threshold = static_cast<float>(scalar(3, 0));
  const bool has_score_threshold = inputs.size() > 4 && inputs[4];
  const auto score_threshold = static_cast<float>(scalar(4, 0));
  if (iou_threshold < 0 || iou_threshold > 1) {
    fail("{}: iou_threshold must be in [0, 1], got {}", node.describe(), iou_threshold);
  }
  const bool center_point = node.attr_int("center_point_box", 0) == 1;
  const std::int64_t batches = boxes.shape()[0], n = boxes.shape()[1];
  const std::int64_t classes = scores.shape()[1];
  const float* box_data = boxes.data<float>();
  const float* score_data = scores.data<float>();

  std::vector<std::int64_t> selected;  // flattened (batch, class, box) triples
  std::vector<std::int64_t> candidates;
  std::vector<Corners> kept;
  for (std::int64_t b = 0; b < batches && max_per_class > 0; ++b) {
    const float* batch_boxes = box_data + b * n * 4;
    for (std::int64_t c = 0; c < classes; ++c) {
      const float* s = score_data + (b * classes + c) * n;
      candidates.clear();
      for (std::int64_t i = 0; i < n; ++i) {
        if (!has_score_threshold || s[i] > score_threshold) candidates.push_back(i);
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](std::int64_t l, std::int64_t r) { return s[l] > s[r]; });
      kept.clear();
      std::int64_t taken = 0;
      for (std::int64_t i : candidates) {
        if (taken == max_per_class) break;
        const Corners box = corners_of(batch_boxes + i * 4, center_point);
        const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Corners& k) {
          return iou(k, box) > iou_threshold;
        });
        if (suppressed) continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
        ++taken;
      }
    }
  }
  Tensor out(DType::I64, {static_cast<std::int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.values<std::int64_t>().begin());
  return {std::move(out)};
}

}  // namespace

void register_selection_kernels(ShapingKernelTable& table) {
  table["NonZero"] = non_zero;
  table["NonMaxSuppression"] = non_max_suppression;
}

}  // namespace orchid
