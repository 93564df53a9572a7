// One registration function per op family; op_registry.cpp calls them all, so every
// supported op is listed in one place.
#pragma once

#include "ir/op_registry.hpp"

namespace orchid {

void register_elementwise_ops(OpSchemaTable& table);    // unary, binary, logical, Where, Clip, Cast
void register_reduction_ops(OpSchemaTable& table);      // Reduce*, Softmax
void register_normalization_ops(OpSchemaTable& table);  // BatchNorm, InstanceNorm, LayerNorm
void register_linear_ops(OpSchemaTable& table);         // Conv, ConvTranspose, Gemm, MatMul
void register_pooling_ops(OpSchemaTable& table);        // MaxPool, AveragePool, GlobalAveragePool
void register_layout_ops(OpSchemaTable& table);         // Transpose, Reshape, ..., Resize, Gather
void register_constant_ops(OpSchemaTable& table);      // Shape, ConstantOfShape, Range, Identity...
void register_selection_ops(OpSchemaTable& table);     // NonZero, NonMaxSuppression, If, Loop
void register_quantization_ops(OpSchemaTable& table);  // Q/DQ, QLinear*, *Integer
void register_recurrent_ops(OpSchemaTable& table);     // LSTM, GRU, RNN
void register_attention_ops(OpSchemaTable& table);     // Attention, RotaryEmbedding
// Sets every registered op's traits (op_traits_table.cpp); called after the families.
void apply_op_traits(OpSchemaTable& table);

}  // namespace orchid
