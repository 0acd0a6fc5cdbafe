// Which GPUs the launcher sees and which the workers get. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/nvml.hpp"

namespace xlaunch::gpu {

/// Splits CUDA_VISIBLE_DEVICES with CUDA's rules: comma-separated entries, each a
/// non-negative index, a "GPU-<uuid>" or a "MIG-<id>"; the list ends at the first invalid
/// entry. An empty value means no GPU, and so does a list that names a device twice before
/// that point ("0,0", "1,01"): CUDA then shows no device at all. Returns the entries kept.
std::vector<std::string> parse_cuda_visible_devices(std::string_view value);

/// The first entry CUDA_VISIBLE_DEVICES repeats (before any invalid entry), as written the
/// second time; nullopt when none is.
std::optional<std::string> repeated_cuda_device(std::string_view value);

/// What to tell the user about the launcher's CUDA_VISIBLE_DEVICES (nullopt = unset), or
/// nullopt when there is nothing to say. Today: a repeated device, which hides every GPU.
std::optional<std::string> cuda_visible_devices_warning(const std::optional<std::string>& value);

/// The GPUs the launcher can see, as CUDA would number them: element i is what names
/// device i in the workers' CUDA_VISIBLE_DEVICES. `cuda_visible_devices` is the launcher's
/// own variable (nullopt = unset). With NVML, unset means every GPU it reports and indices
/// past its count end the list; without NVML, the variable's entries are taken as the GPUs.
std::vector<std::string> visible_gpus(const std::optional<std::string>& cuda_visible_devices,
                                      const std::optional<NvmlReport>& nvml);

/// Applies --gpu_ids ("all" or comma-separated indices into `visible`). Throws UsageError
/// naming the flag and what was found for an index out of range, a duplicate or a bad number.
std::vector<std::string> select_gpus(std::string_view gpu_ids,
                                     const std::vector<std::string>& visible);

}  // namespace xlaunch::gpu
