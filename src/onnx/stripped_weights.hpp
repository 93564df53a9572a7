// The "stripped weights" convention of orchid's model zoo.
//
// A stripped model is an ordinary, valid ONNX file whose large float initializers are
// stored with data_location = EXTERNAL pointing at a side file that is not shipped, and
// whose model metadata has  orchid.weights = "stripped". When the side file is absent,
// orchid regenerates those tensors deterministically (seeded by the tensor's name, with
// a distribution chosen by the tensor's role: conv/matmul weight, bias, norm scale,
// running mean/variance, embedding table). When the side file is present it is read.
#pragma once

#include <string>

namespace orchid {

inline constexpr const char* kStrippedWeightsKey = "orchid.weights";
inline constexpr const char* kStrippedWeightsValue = "stripped";

// Reads IN, fills every stripped tensor with its regenerated values (stored inline), and
// writes a self-contained model to OUT (atomically). Used to hand the same weights
// orchid uses to other tools such as ONNX Runtime.
void materialize_stripped_weights(const std::string& in_path, const std::string& out_path);

}  // namespace orchid
