// The bytes of a request that has not arrived whole yet, kept by a connection between
// reads. Pure; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace xlaunch::rendezvous {

class PendingBytes {
 public:
  /// The bytes to decode now: `fresh` itself when nothing is kept (no copy), else the kept
  /// bytes with `fresh` appended. Valid until the next call.
  std::span<const std::uint8_t> with(std::span<const std::uint8_t> fresh);
  /// Keeps `data[used..]`, where `data` is what with() returned; the rest was handled.
  void keep_rest(std::span<const std::uint8_t> data, std::size_t used);

  bool empty() const { return bytes_.empty(); }
  /// Bytes kept of the incomplete request.
  std::size_t size() const { return bytes_.size(); }
  /// Memory held for them (none when nothing is kept).
  std::size_t capacity() const { return bytes_.capacity(); }

 private:
  std::vector<std::uint8_t> bytes_;
};

}  // namespace xlaunch::rendezvous
