// The interface between the orchestrator's search and kernel costs. The search (BLP,
// baselines) calls prepare() once with every kernel it will ask about, then
// latency_us(); how the number is obtained — an analytic device model, measurements
// from a profile database, or both — is the model's business.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cost/device_spec.hpp"
#include "fission/kernel_view.hpp"

namespace orchid {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Predicted (or measured) time of one launch of the kernel, in microseconds.
  virtual double latency_us(const KernelView& kernel) const = 0;
  virtual std::string describe() const = 0;
  // Announces every kernel the caller is about to ask latency_us() of (baselines and all
  // regions' candidates), so a model whose costs are expensive to obtain (measurements)
  // can obtain them in one batch with one progress report. latency_us() must still
  // answer any kernel, announced or not. The default does nothing.
  virtual void prepare(const std::vector<KernelView>& kernels) const { (void)kernels; }
};

std::unique_ptr<CostModel> make_analytic_cost_model(const DeviceSpec& device);

}  // namespace orchid
