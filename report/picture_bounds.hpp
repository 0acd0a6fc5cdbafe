// The report's size and time do not grow with the run's length or its number of ranks: what
// is drawn is binned to a fixed number of points per lane (docs/diagnose.md, "The report's
// bounds"). Pure.
#pragma once

#include <cstddef>
#include <vector>

#include "gpu/gpu_summary.hpp"
#include "report/run_picture.hpp"

namespace xlaunch::report {

/// Bars per rank lane and points per GPU lane, whatever the run's length.
inline constexpr std::size_t kMaxLanePoints = 1500;
/// Lanes drawn: a run of more ranks (or GPUs) is drawn up to this many, and says so.
inline constexpr std::size_t kMaxLanes = 512;

/// Activity merged into bins of equal length (`seconds` each), at most `max_bins` over the
/// run's time, lines summed (saturating). Unchanged when it already fits.
std::vector<ActivityPoint> bin_activity(const std::vector<ActivityPoint>& points,
                                        std::size_t max_bins);

/// GPU samples merged per GPU into at most `max_points` time bins: the mean utilization and
/// the highest memory use of each. Unchanged when they already fit.
std::vector<gpu::GpuSample> bin_gpu(const std::vector<gpu::GpuSample>& samples,
                                    std::size_t max_points);

}  // namespace xlaunch::report
