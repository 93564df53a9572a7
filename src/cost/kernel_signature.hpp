// A canonical, stable hash of a candidate kernel's structure, so a measurement made for
// one kernel can be reused for every structurally identical kernel: in another place of
// the same model (BERT's twelve layers), in another model, in a later run.
//
// What the hash covers, per primitive: op type, domain, attributes, dtypes and shapes of
// its inputs and outputs, and the wiring between primitives by local position (tensor
// and node names never enter it). Per kernel input: dtype, shape, whether it is a
// runtime tensor or a constant, and for small constants (at most 16 elements, or integer
// constants of at most 64 elements: axes, shapes, pads, slice bounds, Clip bounds, Pow
// exponents) their values too; weights count by shape and dtype only. Which primitive
// outputs the kernel writes to memory. The device name, and a format version that
// changes whenever the canonical form does.
//
// Nodes are put in a canonical topological order (ties broken by a structural label of
// each node and its in-kernel ancestors), so independent branches listed in another
// order in another graph still hash equal.
#pragma once

#include <cstdint>
#include <string>

#include "fission/kernel_view.hpp"

namespace orchid {

// The canonical text the hash is taken of (readable; for tests and debugging).
std::string kernel_canonical_form(const KernelView& kernel, const std::string& device);
// fnv1a64 of kernel_canonical_form.
std::uint64_t kernel_signature(const KernelView& kernel, const std::string& device);
// 16 lower-case hex digits.
std::string signature_hex(std::uint64_t signature);
// A short human description: "MatMul+Add+Relu -> f32 1x128x3072" (for databases, reports).
std::string kernel_summary(const KernelView& kernel);

}  // namespace orchid
