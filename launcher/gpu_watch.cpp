#include "launcher/gpu_watch.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/text.hpp"
#include "launcher/console.hpp"
#include "launcher/gpu_summary.hpp"

namespace xlaunch::launcher {

std::unique_ptr<GpuWatch> GpuWatch::start(const LaunchPlan& plan,
                                          const std::optional<NvmlReport>& nvml, RunFiles& files,
                                          const WorkerPids& pids) {
  if (plan.gpus.empty() || !nvml) return nullptr;
  auto watch = std::make_unique<GpuWatch>();
  for (const std::string& entry : plan.gpus) {
    if (auto index = nvml_index_of(entry, *nvml)) watch->gpus_.push_back(*index);
  }
  if (watch->gpus_.empty()) {
    files.log("GPU sampling: none of the selected GPUs is an NVML device (MIG?); not sampling");
    return nullptr;
  }
  // Each rank is meant to use the GPU of its local rank (torch.cuda.set_device(LOCAL_RANK)).
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    const std::string& entry = plan.gpus[local_rank % plan.gpus.size()];
    if (auto index = nvml_index_of(entry, *nvml)) {
      watch->gpu_of_rank_[plan.rank_offset + local_rank] = *index;
    }
  }
  std::string why;
  watch->sampler_ = GpuSampler::start(watch->gpus_, files.own_file("gpu.csv"), pids,
                                      std::chrono::seconds(1), why);
  if (!watch->sampler_) {
    files.log("GPU sampling: " + why);
    return nullptr;
  }
  return watch;
}

void GpuWatch::finish(RunFiles& files) {
  sampler_->stop();
  const auto text = read_file(sampler_->path());
  if (!text) return;
  const std::string report =
      format_gpu_use(summarize_gpu_use(parse_gpu_csv(*text), gpus_, gpu_of_rank_));
  say("{}", report);
  for (std::string_view line : config::split(report, '\n')) {
    if (!line.empty()) files.log(line.substr(line.find(' ') + 1));  // without "xlaunch: "
  }
}

}  // namespace xlaunch::launcher
