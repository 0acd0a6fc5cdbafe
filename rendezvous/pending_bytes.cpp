#include "rendezvous/pending_bytes.hpp"

namespace xlaunch::rendezvous {
namespace {
// Give back a big request's buffer once it has been handled.
constexpr std::size_t kKeepCapacity = 256 * 1024;
}  // namespace

std::span<const std::uint8_t> PendingBytes::with(std::span<const std::uint8_t> fresh) {
  if (bytes_.empty()) return fresh;
  bytes_.insert(bytes_.end(), fresh.begin(), fresh.end());
  return bytes_;
}

void PendingBytes::keep_rest(std::span<const std::uint8_t> data, std::size_t used) {
  if (data.data() == bytes_.data()) {
    // `data` is our own buffer: assigning from it would read what it overwrites.
    bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(used));
    if (bytes_.empty() && bytes_.capacity() > kKeepCapacity)
      std::vector<std::uint8_t>().swap(bytes_);
  } else {
    bytes_.assign(data.begin() + static_cast<std::ptrdiff_t>(used), data.end());
  }
}

}  // namespace xlaunch::rendezvous
