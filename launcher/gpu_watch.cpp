#include "launcher/gpu_watch.hpp"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/regular_file.hpp"
#include "config/text.hpp"
#include "gpu/gpu_summary.hpp"
#include "launcher/console.hpp"
#include "launcher/process.hpp"

namespace xlaunch::launcher {

std::unique_ptr<GpuWatch> GpuWatch::start(const LaunchPlan& plan,
                                          const std::optional<gpu::NvmlReport>& nvml,
                                          std::unique_ptr<gpu::NvmlSession> session,
                                          RunFiles& files, const gpu::WorkerPids& pids) {
  if (plan.gpus.empty() || !nvml || !session) return nullptr;
  auto watch = std::make_unique<GpuWatch>();
  for (const std::string& entry : plan.gpus) {
    if (auto index = gpu::nvml_index_of(entry, *nvml)) watch->gpus_.push_back(*index);
  }
  if (watch->gpus_.empty()) {
    files.log("GPU sampling: none of the selected GPUs is an NVML device (MIG?); not sampling");
    return nullptr;
  }
  // Each rank is meant to use the GPU of its local rank (torch.cuda.set_device(LOCAL_RANK)).
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    const std::string& entry = plan.gpus[local_rank % plan.gpus.size()];
    if (auto index = gpu::nvml_index_of(entry, *nvml)) {
      watch->gpu_of_rank_[plan.rank_offset + local_rank] = *index;
    }
  }
  std::string csv_path = files.own_file("gpu.csv");
  watch->sampler_ =
      gpu::GpuSampler::open(std::move(session), watch->gpus_, pids, std::chrono::seconds(1));
  watch->csv_fd_ =
      ::open(csv_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (watch->csv_fd_ < 0) {
    files.log("GPU sampling: cannot create " + csv_path + ": " + std::strerror(errno));
    return nullptr;
  }
  watch->csv_path_ = std::move(csv_path);
  write_all(watch->csv_fd_, gpu::gpu_csv_header());
  // The thread keeps stop signals blocked, as the store's does: a Ctrl-C must reach the
  // supervisor's handlers, and must not end xlaunch by default action after they are gone.
  StopSignalsHeld held;
  watch->sampler_->start([fd = watch->csv_fd_](std::string_view lines) { write_all(fd, lines); });
  return watch;
}

GpuWatch::~GpuWatch() {
  sampler_.reset();
  close_fd(csv_fd_);
}

void GpuWatch::finish(RunFiles& files) {
  sampler_->stop();
  close_fd(csv_fd_);
  // The run folder is the workers' to write in: gpu.csv may have become a FIFO or a link to
  // /dev/zero, so it is read only as a regular file, and within a cap (a week of 8 GPUs).
  constexpr std::size_t kMaxCsvBytes = 256u << 20;
  config::RegularFile file = config::read_regular_file(csv_path_, kMaxCsvBytes);
  if (file.status != config::RegularFile::Status::Ok) {
    if (file.status != config::RegularFile::Status::Missing) {
      say("xlaunch: note: {} was not summarized: it is not a regular file of at most {} MiB\n",
          csv_path_, kMaxCsvBytes >> 20);
    }
    return;
  }
  const std::optional<std::string> text = std::move(file.text);
  const std::string report =
      gpu::format_gpu_use(gpu::summarize_gpu_use(gpu::parse_gpu_csv(*text), gpus_, gpu_of_rank_));
  say("{}", report);
  for (std::string_view line : config::split(report, '\n')) {
    if (!line.empty()) files.log(line.substr(line.find(' ') + 1));  // without "xlaunch: "
  }
}

}  // namespace xlaunch::launcher
