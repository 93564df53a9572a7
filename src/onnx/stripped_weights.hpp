// The "stripped weights" convention of orchid's model zoo.
//
// A stripped model is an ordinary, valid ONNX file whose large float initializers are
// stored with data_location = EXTERNAL pointing at a side file that is not shipped, and
// whose model metadata has  orchid.weights = "stripped". When the side file is absent,
// orchid regenerates those tensors deterministically (seeded by the tensor's name, with
// a distribution chosen by the tensor's role: conv/matmul weight, bias, norm scale,
// running mean/variance, embedding table). When the side file is present it is read.
//
// Generator (bit-identical on every platform): seed = FNV-1a 64-bit hash of the tensor
// name; element i is the i-th output of splitmix64 from that seed, whose top 24 bits give
// u in [0,1); the value is  center + half_width * (2u - 1)  evaluated with one fma in
// double, then rounded to the tensor's float type (F32, F16 or F64).
//
// The role is read from the first node consuming the tensor (following Identity/Cast):
//   Conv / ConvTranspose / Gemm / MatMul weight  uniform(+-sqrt(3 / fan_in))  (unit gain)
//       Conv: fan_in = prod(dims[1:]) = C_in/groups * kernel
//       ConvTranspose: fan_in = dims[0]/groups * kernel / prod(strides)
//       Gemm B: dims[0], or dims[1] with transB (A as weight: the K axis likewise)
//       MatMul B [.., K, N]: K;  MatMul A [M, K]: K
//   bias: Conv/ConvTranspose/Gemm input 2, Add operand      uniform(-0.1, 0.1)
//   BatchNormalization scale / bias / mean / var             (0.8,1.2) (-0.1,0.1)
//                                                            (-0.1,0.1) (0.5,1.5)
//   LayerNormalization / InstanceNormalization scale / bias  (0.8,1.2) (-0.1,0.1)
//   Mul operand (decomposed norms, layer scales)             uniform(0.8, 1.2)
//   PRelu slope                                              uniform(0.1, 0.3)
//   Gather data (embedding tables)                           uniform(-0.1, 0.1)
//   anything else                                            uniform(-0.05, 0.05)
#pragma once

#include <string>

namespace onnx {
class ModelProto;
}

namespace orchid {

inline constexpr const char* kStrippedWeightsKey = "orchid.weights";
inline constexpr const char* kStrippedWeightsValue = "stripped";

// If `model` carries the stripped key, replaces every float tensor (initializer or
// Constant value) whose external side file does not exist under `base_dir` by its
// regenerated values, stored inline as raw_data. Returns how many were regenerated.
// Without the key nothing changes (a missing side file is then an error when read).
int regenerate_stripped_weights(onnx::ModelProto& model, const std::string& base_dir);

// Reads IN, fills every stripped tensor with its regenerated values (stored inline), and
// writes a self-contained model to OUT (atomically): all external data is inlined and the
// stripped key is removed. Used to hand the same weights orchid uses to other tools such
// as ONNX Runtime.
void materialize_stripped_weights(const std::string& in_path, const std::string& out_path);

}  // namespace orchid
