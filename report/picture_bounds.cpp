#include "report/picture_bounds.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace xlaunch::report {
namespace {

// The bin length that puts [lo, hi] into at most `max_bins` bins.
std::int64_t bin_length(std::int64_t lo, std::int64_t hi, std::size_t max_bins) {
  const auto bins = static_cast<std::int64_t>(std::max<std::size_t>(1, max_bins));
  const std::int64_t span = hi - lo + 1;
  return std::max<std::int64_t>(1, span / bins + (span % bins != 0));
}

}  // namespace

std::vector<ActivityPoint> bin_activity(const std::vector<ActivityPoint>& points,
                                        std::size_t max_bins) {
  if (points.empty()) return points;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
  for (const ActivityPoint& a : points) {
    lo = std::min(lo, a.unix_second);
    hi = std::max(hi, a.unix_second + std::max<std::int64_t>(1, a.seconds) - 1);
  }
  const std::int64_t width = bin_length(lo, hi, max_bins);
  if (width == 1) return points;
  struct Bin {
    std::uint64_t lines = 0;
    std::int64_t seconds = 0;  // a merged row of the launcher's may be wider than a bin
  };
  std::map<std::tuple<int, int, std::int64_t>, Bin> bins;  // attempt, rank, bin
  for (const ActivityPoint& a : points) {
    Bin& bin = bins[{a.attempt, a.rank, (a.unix_second - lo) / width}];
    bin.lines += a.lines;
    bin.seconds = std::max({bin.seconds, width, a.seconds});
  }
  std::vector<ActivityPoint> out;
  out.reserve(bins.size());
  for (const auto& [key, bin] : bins) {
    const auto& [attempt, rank, index] = key;
    out.push_back(ActivityPoint{attempt, rank, lo + index * width,
                                static_cast<unsigned>(std::min<std::uint64_t>(
                                    bin.lines, std::numeric_limits<unsigned>::max())),
                                bin.seconds});
  }
  return out;
}

std::vector<gpu::GpuSample> bin_gpu(const std::vector<gpu::GpuSample>& samples,
                                    std::size_t max_points) {
  std::map<unsigned, std::size_t> per_gpu;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
  for (const gpu::GpuSample& s : samples) {
    ++per_gpu[s.gpu];
    lo = std::min(lo, s.unix_ms);
    hi = std::max(hi, s.unix_ms);
  }
  const bool fits = std::all_of(per_gpu.begin(), per_gpu.end(),
                                [&](const auto& n) { return n.second <= max_points; });
  if (fits) return samples;
  const std::int64_t width = bin_length(lo, hi, max_points);
  struct Bin {
    std::int64_t first_ms = 0;
    std::uint64_t utilization = 0, count = 0, memory_used = 0, memory_total = 0;
  };
  std::map<std::pair<unsigned, std::int64_t>, Bin> bins;  // gpu, bin
  for (const gpu::GpuSample& s : samples) {
    auto [at, fresh] = bins.try_emplace({s.gpu, (s.unix_ms - lo) / width});
    Bin& b = at->second;
    if (fresh) b.first_ms = s.unix_ms;
    b.first_ms = std::min(b.first_ms, s.unix_ms);
    b.utilization += s.utilization;
    ++b.count;
    b.memory_used = std::max(b.memory_used, s.memory_used);
    b.memory_total = std::max(b.memory_total, s.memory_total);
  }
  std::vector<gpu::GpuSample> out;
  out.reserve(bins.size());
  for (const auto& [key, b] : bins) {
    gpu::GpuSample s;
    s.gpu = key.first;
    s.unix_ms = b.first_ms;
    s.utilization = static_cast<unsigned>(b.utilization / b.count);
    s.memory_used = b.memory_used;
    s.memory_total = b.memory_total;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace xlaunch::report
