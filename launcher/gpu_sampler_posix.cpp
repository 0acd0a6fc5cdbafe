#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "launcher/gpu_sampler.hpp"
#include "launcher/gpu_summary.hpp"
#include "launcher/nvml.hpp"
#include "launcher/process.hpp"

namespace xlaunch::launcher {

void WorkerPids::add(long pid, int rank) {
  std::lock_guard lock(mutex_);
  ranks_[pid] = rank;
}

std::map<long, int> WorkerPids::snapshot() const {
  std::lock_guard lock(mutex_);
  return ranks_;
}

long parent_pid(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so cut at the last ')'.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  char state = 0;
  long ppid = 0;
  if (std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) return 0;
  return ppid;
}

struct GpuSampler::State {
  std::unique_ptr<NvmlSession> nvml;
  std::vector<unsigned> gpus;
  const WorkerPids* pids = nullptr;
  std::chrono::milliseconds interval{1000};
  int fd = -1;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;

  void sample_once() {
    const std::map<long, int> workers = pids->snapshot();
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    std::string lines;
    for (unsigned gpu : gpus) {
      auto reading = nvml->read(gpu);
      if (!reading) continue;
      GpuSample s;
      s.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
      s.gpu = gpu;
      s.utilization = reading->utilization;
      s.memory_used = reading->memory_used;
      s.memory_total = reading->memory_total;
      for (const GpuProcess& p : reading->processes) {
        s.processes.push_back(
            SampledProcess{p.pid, rank_of_pid(p.pid, workers, parent_pid), p.used_bytes});
      }
      lines += gpu_csv_line(s);
    }
    // One write per round: readers see whole lines except, at worst, the last.
    if (!lines.empty()) write_all(fd, lines);
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      lock.unlock();
      sample_once();
      lock.lock();
      wake.wait_for(lock, interval, [this] { return stopping; });
    }
    lock.unlock();
    sample_once();  // the last moments of a short job count too
  }
};

GpuSampler::GpuSampler(std::unique_ptr<State> state, std::string path)
    : state_(std::move(state)), path_(std::move(path)) {
  // The thread keeps stop signals blocked, as the store's does: a Ctrl-C must reach the
  // supervisor's handlers, and must not end xlaunch by default action after they are gone.
  StopSignalsHeld held;
  thread_ = std::thread([s = state_.get()] { s->run(); });
}

std::unique_ptr<GpuSampler> GpuSampler::start(std::vector<unsigned> gpus, std::string csv_path,
                                              const WorkerPids& pids,
                                              std::chrono::milliseconds interval,
                                              std::string& why) {
  auto state = std::make_unique<State>();
  state->nvml = NvmlSession::open();
  if (!state->nvml) {
    why = "NVML could not be opened for sampling";
    return nullptr;
  }
  state->gpus = std::move(gpus);
  state->pids = &pids;
  state->interval = interval;
  state->fd = ::open(csv_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (state->fd < 0) {
    why = "cannot create " + csv_path + ": " + std::strerror(errno);
    return nullptr;
  }
  write_all(state->fd, gpu_csv_header());
  return std::unique_ptr<GpuSampler>(new GpuSampler(std::move(state), std::move(csv_path)));
}

void GpuSampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  thread_.join();
  close_fd(state_->fd);
}

GpuSampler::~GpuSampler() { stop(); }

}  // namespace xlaunch::launcher
