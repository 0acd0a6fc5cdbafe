// GPU use over a run: the series the sampler writes (gpu.csv), and what to tell the user at
// the end (one line per GPU, warnings). Pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/nvml.hpp"

namespace xlaunch::gpu {

/// A process holding memory on a GPU: the worker rank whose process tree it belongs to,
/// or -1 when it is not one of this run's workers.
struct SampledProcess {
  long pid = 0;
  int rank = -1;
  std::uint64_t bytes = 0;
};

/// One reading of one GPU (one line of gpu.csv).
struct GpuSample {
  std::int64_t unix_ms = 0;
  unsigned gpu = 0;  // NVML index
  unsigned utilization = 0;
  std::uint64_t memory_used = 0;
  std::uint64_t memory_total = 0;
  std::vector<SampledProcess> processes;
};

/// gpu.csv's first line.
std::string gpu_csv_header();
/// One line of gpu.csv, '\n' included:
/// unix_ms,gpu,utilization,memory_used,memory_total,pid:rank:bytes;pid:rank:bytes...
std::string gpu_csv_line(const GpuSample& sample);
/// Every well-formed line; the header, blank lines and a partial last line (the run was
/// killed mid-write) are skipped.
std::vector<GpuSample> parse_gpu_csv(std::string_view text);

/// The NVML index of a CUDA_VISIBLE_DEVICES entry (an index or a GPU UUID); nullopt for a
/// MIG instance or an entry NVML does not list.
std::optional<unsigned> nvml_index_of(const std::string& entry, const NvmlReport& nvml);

/// The rank whose worker `pid` is or descends from, following `parent_of` (which returns
/// 0 when the parent is unknown) up to a bounded depth; -1 when none.
int rank_of_pid(long pid, const std::map<long, int>& worker_ranks,
                const std::function<long(long)>& parent_of);

struct GpuStats {
  unsigned gpu = 0;
  std::size_t samples = 0;
  double average_utilization = 0;
  unsigned peak_utilization = 0;
  double average_memory = 0;
  std::uint64_t peak_memory = 0;
  std::uint64_t memory_total = 0;
};

struct GpuUse {
  std::vector<GpuStats> gpus;  // one per selected GPU, in the order given
  std::vector<std::string> warnings;
};

/// Below this average utilization (percent) a GPU counts as idle.
inline constexpr double kIdleUtilization = 5.0;
/// A GPU whose average is below this fraction of the busiest one's is reported.
inline constexpr double kLaggingFraction = 0.5;
/// A rank seen on no GPU is reported once another was seen in this many readings.
inline constexpr std::size_t kRankReadingsBeforeIdle = 3;

/// Averages and peaks per selected GPU, and warnings: a selected GPU idle while another
/// worked; a GPU far below the busiest; a worker (by rank) holding memory on a GPU other
/// than its own (`gpu_of_rank`: rank -> NVML index of the GPU it was meant to use); a rank of
/// `gpu_of_rank` that held memory on no GPU while another rank did.
GpuUse summarize_gpu_use(const std::vector<GpuSample>& samples,
                         const std::vector<unsigned>& selected,
                         const std::map<int, unsigned>& gpu_of_rank);

/// "1.5 GiB", "512 MiB".
std::string format_bytes(std::uint64_t bytes);
/// The lines printed at the end of a run, each "xlaunch: ..." and '\n'-terminated.
std::string format_gpu_use(const GpuUse& use);

}  // namespace xlaunch::gpu
