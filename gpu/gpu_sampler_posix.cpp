#include <cstdio>
#include <fstream>

#include "gpu/gpu_sampler.hpp"
#include "gpu/gpu_summary.hpp"
#include "gpu/nvml.hpp"

namespace xlaunch::gpu {

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
  Sink sink;
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
    // One call per round (one write to gpu.csv): readers see whole lines except, at worst,
    // the last.
    if (!lines.empty()) sink(lines);
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

GpuSampler::GpuSampler(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<GpuSampler> GpuSampler::open(std::unique_ptr<NvmlSession> nvml,
                                             std::vector<unsigned> gpus, const WorkerPids& pids,
                                             std::chrono::milliseconds interval) {
  if (!nvml) return nullptr;
  auto state = std::make_unique<State>();
  state->nvml = std::move(nvml);
  state->gpus = std::move(gpus);
  state->pids = &pids;
  state->interval = interval;
  return std::unique_ptr<GpuSampler>(new GpuSampler(std::move(state)));
}

void GpuSampler::start(Sink sink) {
  state_->sink = std::move(sink);
  thread_ = std::thread([s = state_.get()] { s->run(); });
}

void GpuSampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  thread_.join();
}

GpuSampler::~GpuSampler() { stop(); }

}  // namespace xlaunch::gpu
