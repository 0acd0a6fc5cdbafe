// Samples the selected GPUs through NVML about once a second on a thread of its own and
// appends each reading to a series file (gpu.csv, see gpu_summary.hpp), so that a run
// killed midway still leaves what was seen until then.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xlaunch::launcher {

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
  /// Starts sampling `gpus` (NVML indices) into `csv_path`; nullptr when NVML cannot be
  /// opened or the file cannot be created (the reason goes to `why`).
  static std::unique_ptr<GpuSampler> start(std::vector<unsigned> gpus, std::string csv_path,
                                           const WorkerPids& pids,
                                           std::chrono::milliseconds interval, std::string& why);
  /// Stops and joins the thread (after one last reading).
  ~GpuSampler();
  void stop();

  const std::string& path() const { return path_; }

 private:
  struct State;
  GpuSampler(std::unique_ptr<State> state, std::string path);
  std::unique_ptr<State> state_;
  std::string path_;
  std::thread thread_;
};

/// The parent pid of `pid` from /proc; 0 when it has gone or cannot be read.
long parent_pid(long pid);

}  // namespace xlaunch::launcher
