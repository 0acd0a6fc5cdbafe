#include "gpu/gpu_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>

#include "config/text.hpp"

namespace xlaunch::gpu {
namespace {

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

std::optional<SampledProcess> parse_process(std::string_view text) {
  const std::vector<std::string_view> parts = config::split(text, ':');
  SampledProcess p;
  if (parts.size() != 3 || !parse_number(parts[0], p.pid) || !parse_number(parts[1], p.rank) ||
      !parse_number(parts[2], p.bytes)) {
    return std::nullopt;
  }
  return p;
}

std::optional<GpuSample> parse_line(std::string_view line) {
  const std::vector<std::string_view> fields = config::split(line, ',');
  GpuSample s;
  if (fields.size() != 6 || !parse_number(fields[0], s.unix_ms) ||
      !parse_number(fields[1], s.gpu) || !parse_number(fields[2], s.utilization) ||
      !parse_number(fields[3], s.memory_used) || !parse_number(fields[4], s.memory_total)) {
    return std::nullopt;
  }
  if (!fields[5].empty()) {
    for (std::string_view item : config::split(fields[5], ';')) {
      auto p = parse_process(item);
      if (!p) return std::nullopt;
      s.processes.push_back(*p);
    }
  }
  return s;
}

}  // namespace

std::string gpu_csv_header() {
  return "unix_ms,gpu,utilization,memory_used,memory_total,processes\n";
}

std::string gpu_csv_line(const GpuSample& s) {
  std::string processes;
  for (const SampledProcess& p : s.processes) {
    processes += fmt::format("{}{}:{}:{}", processes.empty() ? "" : ";", p.pid, p.rank, p.bytes);
  }
  return fmt::format("{},{},{},{},{},{}\n", s.unix_ms, s.gpu, s.utilization, s.memory_used,
                     s.memory_total, processes);
}

std::vector<GpuSample> parse_gpu_csv(std::string_view text) {
  std::vector<GpuSample> samples;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) break;  // a line cut off by the end of the run
    if (auto s = parse_line(text.substr(0, end))) samples.push_back(std::move(*s));
    text.remove_prefix(end + 1);
  }
  return samples;
}

std::optional<unsigned> nvml_index_of(const std::string& entry, const NvmlReport& nvml) {
  unsigned index = 0;
  if (parse_number(std::string_view(entry), index)) {
    if (index < nvml.gpus.size()) return nvml.gpus[index].index;
    return std::nullopt;
  }
  for (const GpuInfo& gpu : nvml.gpus) {
    if (!gpu.uuid.empty() && gpu.uuid == entry) return gpu.index;
  }
  return std::nullopt;
}

int rank_of_pid(long pid, const std::map<long, int>& worker_ranks,
                const std::function<long(long)>& parent_of) {
  // Bounded: a pid reused while we walk must not loop forever.
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    auto it = worker_ranks.find(pid);
    if (it != worker_ranks.end()) return it->second;
    pid = parent_of(pid);
  }
  return -1;
}

GpuUse summarize_gpu_use(const std::vector<GpuSample>& samples,
                         const std::vector<unsigned>& selected,
                         const std::map<int, unsigned>& gpu_of_rank) {
  GpuUse use;
  // One pass over the samples (a report's gpu.csv may hold millions), each into its GPU's sums.
  struct Sums {
    GpuStats stats;
    double utilization = 0;
    double memory = 0;
  };
  std::map<unsigned, Sums> by_gpu;
  for (unsigned gpu : selected) by_gpu[gpu].stats.gpu = gpu;
  for (const GpuSample& s : samples) {
    const auto it = by_gpu.find(s.gpu);
    if (it == by_gpu.end()) continue;
    Sums& sums = it->second;
    ++sums.stats.samples;
    sums.utilization += s.utilization;
    sums.memory += static_cast<double>(s.memory_used);
    sums.stats.peak_utilization = std::max(sums.stats.peak_utilization, s.utilization);
    sums.stats.peak_memory = std::max(sums.stats.peak_memory, s.memory_used);
    sums.stats.memory_total = std::max(sums.stats.memory_total, s.memory_total);
  }
  for (unsigned gpu : selected) {
    const Sums& sums = by_gpu.at(gpu);
    GpuStats stats = sums.stats;
    if (stats.samples > 0) {
      stats.average_utilization = sums.utilization / static_cast<double>(stats.samples);
      stats.average_memory = sums.memory / static_cast<double>(stats.samples);
    }
    use.gpus.push_back(stats);
  }

  const GpuStats* busiest = nullptr;
  for (const GpuStats& s : use.gpus) {
    if (s.samples > 0 && (!busiest || s.average_utilization > busiest->average_utilization)) {
      busiest = &s;
    }
  }
  // Only a comparison with a GPU that did work says something: all idle is a CPU-bound job
  // or one that ended before it started computing.
  if (busiest && busiest->average_utilization >= kIdleUtilization) {
    for (const GpuStats& s : use.gpus) {
      if (&s == busiest || s.samples == 0) continue;
      if (s.average_utilization < kIdleUtilization) {
        use.warnings.push_back(fmt::format(
            "GPU {} stayed idle (average utilization {:.0f}%) while GPU {} averaged {:.0f}%: "
            "is a rank using the wrong device (torch.cuda.set_device(LOCAL_RANK)), or is the "
            "work split unevenly?",
            s.gpu, s.average_utilization, busiest->gpu, busiest->average_utilization));
      } else if (s.average_utilization < kLaggingFraction * busiest->average_utilization) {
        use.warnings.push_back(fmt::format(
            "GPU {} averaged {:.0f}% utilization, far below GPU {} ({:.0f}%): its rank waits "
            "for the others (an uneven split of the data, or a slower input pipeline?)",
            s.gpu, s.average_utilization, busiest->gpu, busiest->average_utilization));
      }
    }
  }

  // rank, pid, GPU: each misplaced holder once, with the most memory it was seen holding.
  std::map<std::tuple<int, long, unsigned>, std::uint64_t> misplaced;
  std::map<int, std::set<std::int64_t>> rounds_of_rank;  // rank -> readings it held memory in
  for (const GpuSample& s : samples) {
    for (const SampledProcess& p : s.processes) {
      if (p.rank < 0) continue;
      rounds_of_rank[p.rank].insert(s.unix_ms);
      auto own = gpu_of_rank.find(p.rank);
      if (own == gpu_of_rank.end() || own->second == s.gpu) continue;
      auto& most = misplaced[{p.rank, p.pid, s.gpu}];
      most = std::max(most, p.bytes);
    }
  }
  for (const auto& [key, bytes] : misplaced) {
    const auto& [rank, pid, gpu] = key;
    use.warnings.push_back(fmt::format(
        "rank {} (pid {}) holds {}memory on GPU {}, which is not its own (GPU {}): a tensor or "
        "CUDA context on the wrong device (e.g. 'cuda' or 'cuda:0' instead of "
        "f'cuda:{{LOCAL_RANK}}')",
        rank, pid, bytes > 0 ? format_bytes(bytes) + " of " : "", gpu, gpu_of_rank.at(rank)));
  }

  // A rank seen on no GPU while another worked: with GPUs shared by several ranks no GPU's
  // average shows it. Only after a few readings of the other, so a short job says nothing.
  const auto busiest_rank = std::max_element(
      rounds_of_rank.begin(), rounds_of_rank.end(),
      [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  if (busiest_rank != rounds_of_rank.end() &&
      busiest_rank->second.size() >= kRankReadingsBeforeIdle) {
    for (const auto& [rank, gpu] : gpu_of_rank) {
      if (rounds_of_rank.contains(rank)) continue;
      use.warnings.push_back(fmt::format(
          "rank {} did no GPU work: it held memory on no GPU in any reading, while rank {} did "
          "in {}: does it compute on the CPU (a model or tensor never moved to "
          "f'cuda:{{LOCAL_RANK}}'), or only wait for the others?",
          rank, busiest_rank->first, busiest_rank->second.size()));
    }
  }
  return use;
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const double mib = static_cast<double>(bytes) / kMiB;
  if (mib >= 1024) return fmt::format("{:.1f} GiB", mib / 1024);
  return fmt::format("{:.0f} MiB", mib);
}

std::string format_gpu_use(const GpuUse& use) {
  std::string out;
  for (const GpuStats& s : use.gpus) {
    if (s.samples == 0) {
      out += fmt::format("xlaunch: GPU {}: no readings\n", s.gpu);
      continue;
    }
    out += fmt::format(
        "xlaunch: GPU {}: utilization average {:.0f}%, peak {}%; memory average {}, peak {} of "
        "{} ({} readings)\n",
        s.gpu, s.average_utilization, s.peak_utilization,
        format_bytes(static_cast<std::uint64_t>(s.average_memory)), format_bytes(s.peak_memory),
        format_bytes(s.memory_total), s.samples);
  }
  for (const std::string& w : use.warnings) out += fmt::format("xlaunch: warning: {}\n", w);
  return out;
}

}  // namespace xlaunch::gpu
