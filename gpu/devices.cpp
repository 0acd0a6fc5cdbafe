#include "gpu/devices.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

#include "config/text.hpp"
#include "config/usage_error.hpp"
#include "config/validate.hpp"

namespace xlaunch::gpu {
namespace {

bool is_index(std::string_view entry) {
  return !entry.empty() &&
         std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_valid_entry(std::string_view entry) {
  return is_index(entry) ||
         (entry.size() > 4 && (entry.starts_with("GPU-") || entry.starts_with("MIG-")));
}

/// The entries CUDA reads: up to the first invalid one.
std::vector<std::string> valid_prefix(std::string_view value) {
  std::vector<std::string> kept;
  if (config::trim(value).empty()) return kept;
  for (std::string_view entry : config::split(value, ',')) {
    entry = config::trim(entry);
    if (!is_valid_entry(entry)) break;  // CUDA ignores the rest of the list
    kept.emplace_back(entry);
  }
  return kept;
}

/// "007" and "7" name the same device, as CUDA reads indices as numbers.
std::string device_key(const std::string& entry) {
  if (!is_index(entry)) return entry;
  const std::size_t first = entry.find_first_not_of('0');
  return first == std::string::npos ? "0" : entry.substr(first);
}

/// The valid entries with repeats dropped: what the user most likely meant.
std::vector<std::string> valid_prefix_unique(std::string_view value) {
  std::vector<std::string> out;
  std::vector<std::string> keys;
  for (const std::string& entry : valid_prefix(value)) {
    if (std::find(keys.begin(), keys.end(), device_key(entry)) != keys.end()) continue;
    keys.push_back(device_key(entry));
    out.push_back(entry);
  }
  return out;
}

}  // namespace

std::optional<std::string> repeated_cuda_device(std::string_view value) {
  std::vector<std::string> seen;
  for (const std::string& entry : valid_prefix(value)) {
    const std::string key = device_key(entry);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return entry;
    seen.push_back(key);
  }
  return std::nullopt;
}

std::vector<std::string> parse_cuda_visible_devices(std::string_view value) {
  // CUDA (and PyTorch's device count, which mirrors it) shows no device at all when one is
  // named twice, rather than stopping the list there as it does at an invalid entry.
  if (repeated_cuda_device(value)) return {};
  return valid_prefix(value);
}

std::optional<std::string> cuda_visible_devices_warning(const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  const auto repeated = repeated_cuda_device(*value);
  if (!repeated) return std::nullopt;
  return fmt::format(
      "CUDA_VISIBLE_DEVICES={} names device {} twice; CUDA then shows no GPU at all, so xlaunch "
      "uses none (list each GPU once, e.g. CUDA_VISIBLE_DEVICES={})",
      config::printable(*value), *repeated, fmt::join(valid_prefix_unique(*value), ","));
}

std::vector<std::string> visible_gpus(const std::optional<std::string>& cuda_visible_devices,
                                      const std::optional<NvmlReport>& nvml) {
  std::vector<std::string> visible;
  if (!cuda_visible_devices) {
    if (nvml) {
      for (std::size_t i = 0; i < nvml->gpus.size(); ++i) visible.push_back(std::to_string(i));
    }
    return visible;
  }
  for (const std::string& entry : parse_cuda_visible_devices(*cuda_visible_devices)) {
    if (nvml && is_index(entry)) {
      unsigned long index = std::stoul(entry);
      if (index >= nvml->gpus.size()) break;  // CUDA stops at an index it does not have
    }
    visible.push_back(entry);
  }
  return visible;
}

std::vector<std::string> select_gpus(std::string_view gpu_ids,
                                     const std::vector<std::string>& visible) {
  std::string_view spec = config::trim(gpu_ids);
  if (spec == "all" || spec.empty()) return visible;
  std::vector<std::string> chosen;
  std::vector<int> seen;
  for (std::string_view item : config::split(spec, ',')) {
    item = config::trim(item);
    int index = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec != std::errc{} || ptr != item.data() + item.size() || index < 0) {
      throw UsageError(fmt::format("--gpu_ids: '{}' is not a GPU index", item),
                       "give comma-separated indices such as --gpu_ids 0,1, or --gpu_ids all");
    }
    if (static_cast<std::size_t>(index) >= visible.size()) {
      throw UsageError(
          fmt::format("--gpu_ids: GPU index {} is out of range: the launcher sees {} GPU(s){}",
                      index, visible.size(),
                      visible.empty() ? "" : fmt::format(" ({})", fmt::join(visible, ","))),
          "indices count from 0 within CUDA_VISIBLE_DEVICES; see 'nvidia-smi -L'");
    }
    if (std::find(seen.begin(), seen.end(), index) != seen.end()) {
      throw UsageError(fmt::format("--gpu_ids: GPU index {} is listed twice", index));
    }
    seen.push_back(index);
    chosen.push_back(visible[index]);
  }
  return chosen;
}

}  // namespace xlaunch::gpu
