#include "launcher/pipe_size.hpp"

#include <initializer_list>

namespace xlaunch::launcher {

std::size_t rank_pipe_size(std::size_t pipes, std::uint64_t soft_pages, std::size_t page_size) {
  if (pipes == 0 || page_size == 0) return 0;
  for (std::size_t size : {std::size_t{256} << 10, std::size_t{128} << 10}) {
    if (soft_pages == 0) return size;
    const std::uint64_t pages = static_cast<std::uint64_t>(pipes) * (size / page_size);
    if (pages <= soft_pages / 16) return size;
  }
  return 0;
}

}  // namespace xlaunch::launcher
