// GPU use of one run: starts the sampler on the GPUs the plan selected and, at the end,
// prints one line per GPU and the warnings (gpu/gpu_summary.hpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_sampler.hpp"
#include "gpu/nvml.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::launcher {

class GpuWatch {
 public:
  /// nullptr for a CPU job, without NVML, or when no selected GPU maps to an NVML device
  /// (MIG instances); the reason is logged. Samples into the run folder's gpu.csv through
  /// `session`, the one `nvml` was read from.
  static std::unique_ptr<GpuWatch> start(const LaunchPlan& plan,
                                         const std::optional<gpu::NvmlReport>& nvml,
                                         std::unique_ptr<gpu::NvmlSession> session, RunFiles& files,
                                         const gpu::WorkerPids& pids);
  /// Stops sampling; prints and logs the per-GPU lines and warnings.
  void finish(RunFiles& files);
  /// Stops sampling (when finish did not).
  ~GpuWatch();

 private:
  std::vector<unsigned> gpus_;
  std::map<int, unsigned> gpu_of_rank_;
  std::string csv_path_;  // the run's gpu.csv, which the sampler's rounds are appended to
  int csv_fd_ = -1;
  std::unique_ptr<gpu::GpuSampler> sampler_;
};

}  // namespace xlaunch::launcher
