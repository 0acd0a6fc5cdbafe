#include <fcntl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/random_bits.hpp"

namespace xlaunch::launcher {
namespace {

bool fill(void* data, std::size_t size) {
  ssize_t n;
  do {
    n = ::getrandom(data, size, 0);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(size)) return true;
  // Kernels before 3.17 (ENOSYS), or a seccomp filter that refuses the call.
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  do {
    n = ::read(fd, data, size);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  return n == static_cast<ssize_t>(size);
}

}  // namespace

std::uint64_t random_bits() {
  std::uint64_t bits = 0;
  if (fill(&bits, sizeof bits)) return bits;
  // Neither source: the time and pid still keep two launches on one machine apart.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return (static_cast<std::uint64_t>(now.tv_nsec) << 32) ^ static_cast<std::uint64_t>(now.tv_sec) ^
         (static_cast<std::uint64_t>(::getpid()) << 16);
}

}  // namespace xlaunch::launcher
