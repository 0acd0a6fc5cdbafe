// Samples the selected GPUs through NVML about once a second on a thread of its own and
// hands each round of readings, as lines of the series file (gpu.csv, see gpu_summary.hpp),
// to its sink: the launcher appends them to the run's gpu.csv, so that a run killed midway
// still leaves what was seen until then.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu/nvml.hpp"

namespace xlaunch::gpu {

/// Worker pids of every attempt and their ranks; written by the supervisor's loop, read by
/// the sampler's thread.
class WorkerPids {
 public:
  void add(long pid, int rank);
  std::map<long, int> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<long, int> ranks_;
};

class GpuSampler {
 public:
  /// Receives each round's gpu.csv lines ('\n'-terminated), on the sampler's thread.
  using Sink = std::function<void(std::string_view lines)>;

  /// Samples `gpus` (NVML indices) through `nvml` about every `interval`; nullptr without
  /// an NVML session.
  static std::unique_ptr<GpuSampler> open(std::unique_ptr<NvmlSession> nvml,
                                          std::vector<unsigned> gpus, const WorkerPids& pids,
                                          std::chrono::milliseconds interval);
  /// Starts the sampling thread, which hands every round to `sink`. The thread inherits the
  /// caller's signal mask.
  void start(Sink sink);
  /// Stops and joins the thread (after one last reading).
  ~GpuSampler();
  void stop();

 private:
  struct State;
  explicit GpuSampler(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  std::thread thread_;
};

/// The parent pid of `pid` from /proc; 0 when it has gone or cannot be read.
long parent_pid(long pid);

}  // namespace xlaunch::gpu
