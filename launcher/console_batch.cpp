#include "launcher/console_batch.hpp"

#include <algorithm>

namespace xlaunch::launcher {

void ConsoleBatch::grow(std::size_t need) {
  const std::size_t capacity = std::max(need, capacity_ * 2);
  auto data = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

}  // namespace xlaunch::launcher
