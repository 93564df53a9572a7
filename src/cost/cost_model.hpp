// The interface between the orchestrator's search and kernel costs. The search (BLP,
// baselines) only ever calls latency_us(); how the number is obtained — an analytic
// device model, measurements from a profile database, or both — is the model's business.
#pragma once

#include <memory>
#include <string>

#include "cost/device_spec.hpp"
#include "orchestrate/kernel_view.hpp"

namespace orchid {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Predicted (or measured) time of one launch of the kernel, in microseconds.
  virtual double latency_us(const KernelView& kernel) const = 0;
  virtual std::string describe() const = 0;
};

std::unique_ptr<CostModel> make_analytic_cost_model(const DeviceSpec& device);

}  // namespace orchid
