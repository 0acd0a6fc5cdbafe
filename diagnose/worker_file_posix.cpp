#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "diagnose/worker_file.hpp"

namespace xlaunch::diagnose {

std::optional<std::string> read_worker_file(const std::string& path, std::uintmax_t offset,
                                            std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const auto size = static_cast<std::uintmax_t>(st.st_size);
    // A file that grows meanwhile is read up to its size at fstat: bounded either way.
    text.emplace(static_cast<std::size_t>(
                     std::min<std::uintmax_t>(size > offset ? size - offset : 0, max_bytes)),
                 '\0');
    std::size_t got = 0;
    while (got < text->size()) {
      const ssize_t n =
          ::pread(fd, text->data() + got, text->size() - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text->resize(got);
  }
  ::close(fd);
  return text;
}

}  // namespace xlaunch::diagnose
