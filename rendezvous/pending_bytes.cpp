#include "rendezvous/pending_bytes.hpp"

namespace xlaunch::rendezvous {

std::span<const std::uint8_t> PendingBytes::with(std::span<const std::uint8_t> fresh) {
  if (bytes_.empty()) return fresh;
  bytes_.insert(bytes_.end(), fresh.begin(), fresh.end());
  return bytes_;
}

void PendingBytes::keep_rest(std::span<const std::uint8_t> data, std::size_t used) {
  if (data.data() == bytes_.data()) {
    // `data` is our own buffer: assigning from it would read what it overwrites.
    bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(used));
  } else {
    bytes_.assign(data.begin() + static_cast<std::ptrdiff_t>(used), data.end());
  }
  // An idle connection holds no buffer: the store's budget counts kept bytes, not capacity,
  // and thousands of idle clients must not each keep their last split request's room.
  if (bytes_.empty()) std::vector<std::uint8_t>().swap(bytes_);
}

}  // namespace xlaunch::rendezvous
