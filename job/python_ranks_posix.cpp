#include <fcntl.h>
#include <unistd.h>

#include "job/python_ranks.hpp"

namespace xlaunch::job {

std::string read_head(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  char bytes[4];
  const ssize_t n = ::pread(fd, bytes, sizeof bytes, 0);
  ::close(fd);
  return n > 0 ? std::string(bytes, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace xlaunch::job
