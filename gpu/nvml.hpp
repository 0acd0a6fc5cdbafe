// GPU discovery and sampling through NVML, loaded with dlopen so xlaunch links no GPU
// library. XLAUNCH_NVML_LIBRARY names another library to load instead of
// libnvidia-ml.so.1 (a driver outside the loader's path, or the tests' fake NVML).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace xlaunch::gpu {

struct GpuInfo {
  unsigned index = 0;  // NVML index (PCI bus order)
  std::string uuid;    // "GPU-..."
  std::string name;    // "NVIDIA H200"
  std::uint64_t memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

struct NvmlReport {
  std::vector<GpuInfo> gpus;
  std::string driver_version;
};

/// Every GPU NVML sees, ignoring CUDA_VISIBLE_DEVICES. nullopt when the NVML library is
/// absent or fails to initialise (no driver): callers then fall back to the environment.
/// Opens and shuts down a session of its own (NvmlSession::report for one kept open).
std::optional<NvmlReport> query_nvml();

/// A process holding memory on a GPU, as NVML lists it.
struct GpuProcess {
  long pid = 0;
  std::uint64_t used_bytes = 0;  // 0 when NVML cannot tell (e.g. inside a container)
};

/// One reading of one GPU.
struct GpuReading {
  unsigned utilization = 0;  // percent of the last sample period a kernel ran
  std::uint64_t memory_used = 0;
  std::uint64_t memory_total = 0;
  std::vector<GpuProcess> processes;  // compute processes
};

/// NVML kept open: a launch's discovery, then the sampler's readings, on one initialisation
/// (on an H100 a second nvmlInit and the shutdown in between cost 6 ms before the first
/// worker). Not thread-safe: one thread at a time. nvmlInit starts a thread of NVML's own,
/// which inherits the caller's signal mask.
class NvmlSession {
 public:
  /// nullptr when the library is absent, lacks a function or fails to initialise.
  static std::unique_ptr<NvmlSession> open();
  /// Shuts NVML down and unloads it, unless keep_until_exit was called.
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  /// Every GPU NVML sees (as query_nvml) and the driver's version.
  NvmlReport report();
  /// nullopt when NVML has no such device or fails to read it.
  std::optional<GpuReading> read(unsigned index);
  /// Leaves NVML's shutdown to the process's exit, which frees the same: nvmlShutdown costs
  /// the end of a launch 9 ms on an H100.
  void keep_until_exit();

 private:
  struct Impl;
  explicit NvmlSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::gpu
