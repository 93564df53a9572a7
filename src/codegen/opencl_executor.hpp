// Runs a DeviceProgram generated for Target::OpenCL on the first OpenCL device (PoCL
// on a CPU, or any OpenCL GPU): the source is compiled once, constants are uploaded
// once, and each run copies the inputs in, enqueues every launch in order on one
// in-order queue and waits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/device_program.hpp"
#include "eval/reference_interpreter.hpp"

namespace orchid::codegen {

class OpenCLExecutor {
 public:
  // An orchid::Error when no OpenCL device is present or the source does not compile
  // (with the compiler's log).
  explicit OpenCLExecutor(const DeviceProgram& program);
  ~OpenCLExecutor();
  OpenCLExecutor(const OpenCLExecutor&) = delete;
  OpenCLExecutor& operator=(const OpenCLExecutor&) = delete;

  void execute(const TensorMap& inputs);
  TensorMap outputs() const;
  TensorMap run(const TensorMap& inputs) {
    execute(inputs);
    return outputs();
  }
  // execute(), waiting after each plan kernel: microseconds per plan kernel.
  std::vector<double> execute_timed(const TensorMap& inputs);
  std::string device_name() const;

  // Whether an OpenCL device is present; `why` says what is missing otherwise.
  static bool available(std::string* why);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orchid::codegen
