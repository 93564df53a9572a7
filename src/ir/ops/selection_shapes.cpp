// Shape functions of ops whose output sizes depend on input values: NonZero,
// NonMaxSuppression, If (whose branches may differ) and Loop (whose trip count may). They only
// check dtypes and attributes; make_static marks their outputs dynamic (or folds them when every
// input is a constant), and the reference interpreter sizes them per run.
#include "ir/ops/op_families.hpp"

namespace orchid {

namespace {

std::vector<TensorType> infer_non_zero(const ShapeContext& ctx) {
  (void)ctx.input(0);
  return {{DType::I64, {}}};
}

// boxes [B, N, 4], scores [B, C, N], then optional scalars max_output_boxes_per_class
// (int64), iou_threshold and score_threshold (f32). Output: [selected, 3] int64 rows
// (batch, class, box).
std::vector<TensorType> infer_non_max_suppression(const ShapeContext& ctx) {
  const Shape& boxes = ctx.input_shape(0);
  const Shape& scores = ctx.input_shape(1);
  ctx.require_dtype(0, {DType::F32});
  ctx.require_dtype(1, {DType::F32});
  if (boxes.size() != 3 || boxes[2] != 4) {
    ctx.fail("boxes must be [batch, boxes, 4], got {}", shape_to_string(boxes));
  }
  if (scores.size() != 3 || scores[0] != boxes[0] || scores[2] != boxes[1]) {
    ctx.fail("scores must be [batch, classes, boxes] = [{}, C, {}], got {}", boxes[0], boxes[1],
             shape_to_string(scores));
  }
  const char* names[] = {"", "", "max_output_boxes_per_class", "iou_threshold", "score_threshold"};
  for (std::size_t i = 2; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    if (shape_numel(ctx.input_shape(i)) != 1) {
      ctx.fail("{} must hold one value, got shape {}", names[i],
               shape_to_string(ctx.input_shape(i)));
    }
    if (i == 2) {
      ctx.require_dtype(i, {DType::I64});
    } else {
      ctx.require_dtype(i, {DType::F32});
    }
  }
  const std::int64_t center = ctx.node().attr_int("center_point_box", 0);
  if (center != 0 && center != 1) ctx.fail("center_point_box must be 0 or 1, got {}", center);
  return {{DType::I64, {}}};
}

// The branches are typed by make_static (it needs the outer scope); here only the
// node's own contract is checked.
std::vector<TensorType> infer_if(const ShapeContext& ctx) {
  const Node& node = ctx.node();
  ctx.require_dtype(0, {DType::Bool});
  if (shape_numel(ctx.input_shape(0)) != 1) {
    ctx.fail("cond must hold one value, got shape {}", shape_to_string(ctx.input_shape(0)));
  }
  for (const char* key : {"then_branch", "else_branch"}) {
    auto it = node.subgraphs.find(key);
    if (it == node.subgraphs.end()) ctx.fail("attribute '{}' (a subgraph) is missing", key);
    if (it->second->outputs.size() != node.outputs.size()) {
      ctx.fail("{} has {} outputs, the node has {}", key, it->second->outputs.size(),
               node.outputs.size());
    }
  }
  return std::vector<TensorType>(node.outputs.size());
}

std::vector<TensorType> infer_loop(const ShapeContext& ctx) {
  const Node& node = ctx.node();
  auto it = node.subgraphs.find("body");
  if (it == node.subgraphs.end()) ctx.fail("attribute 'body' (a subgraph) is missing");
  if (it->second->outputs.size() != node.outputs.size() + 1) {
    ctx.fail("body has {} outputs, expected {} (condition + the node's outputs)",
             it->second->outputs.size(), node.outputs.size() + 1);
  }
  return std::vector<TensorType>(node.outputs.size());
}

}  // namespace

void register_selection_ops(OpSchemaTable& table) {
  table["NonZero"] = {"NonZero", 1, 1, 1, 1, infer_non_zero, true};
  table["NonMaxSuppression"] = {"NonMaxSuppression", 2, 5, 1, 1, infer_non_max_suppression, true};
  table["If"] = {"If", 1, 1 << 20, 1, 1 << 20, infer_if, true};
  table["Loop"] = {"Loop", 2, 1 << 20, 1, 1 << 20, infer_loop, true};
}

}  // namespace orchid
