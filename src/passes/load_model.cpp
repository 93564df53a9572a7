#include "passes/load_model.hpp"

#include "util/error.hpp"

namespace orchid {

LoadedModel load_model(const std::string& path, const ImportOptions& options) {
  LoadedModel model;
  model.graph = read_onnx(path, options);
  try {
    model.stats = make_static(model.graph);
    model.affine = fold_affine_into_linear(model.graph);
    model.resize_commute = convolve_before_upsampling(model.graph);
    model.token_transposes = regroup_token_transposes(model.graph);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(fmt::format("{}: {}", path, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
  return model;
}

}  // namespace orchid
