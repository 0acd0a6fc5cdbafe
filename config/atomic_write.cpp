#include "config/atomic_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "config/regular_file.hpp"

namespace xlaunch::config {
namespace {

[[noreturn]] void fail(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

/// Closes and unlinks the temporary unless it was renamed into place.
struct Temporary {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~Temporary() {
    if (fd >= 0) ::close(fd);
    if (!committed && !path.empty()) ::unlink(path.c_str());
  }
};

// The process's umask, read without changing it (umask(2) sets as it reads, which races
// with other threads creating files); 022 where /proc does not say.
mode_t current_umask() {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 022;
  char text[4096];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return 022;
  text[n] = '\0';
  const char* line = std::strstr(text, "\nUmask:");
  if (!line) return 022;
  return static_cast<mode_t>(std::strtoul(line + 7, nullptr, 8) & 0777);
}

}  // namespace

void atomic_write(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(ec.value(), "cannot create directory " + dir.string());

  // A link is replaced by the new file, as rename does, and its target left alone: the new
  // file's mode is a new file's. A replaced file keeps its permissions, not a setuid bit.
  mode_t mode = 0644 & ~current_umask();
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) fail(EISDIR, "cannot write " + path);
    if (S_ISREG(existing.st_mode)) {
      mode = existing.st_mode & 0777;
    } else if (!S_ISLNK(existing.st_mode)) {
      // Renamed over, a FIFO or a device node (/dev/null, as root) would be replaced.
      fail(EINVAL, "cannot write " + path + ": it is " + file_kind(existing.st_mode) +
                       ", not a plain file");
    }
  }

  // Same directory, so the rename cannot cross file systems and stays atomic.
  Temporary tmp;
  std::string pattern = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  tmp.fd = ::mkstemp(pattern.data());
  if (tmp.fd < 0) fail(errno, "cannot create a temporary file in " + dir.string());
  tmp.path = pattern;

  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno, "cannot write " + tmp.path);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fchmod(tmp.fd, mode) != 0) fail(errno, "cannot set the mode of " + tmp.path);
  // Without fsync a crash after rename can leave an empty file under the real name.
  if (::fsync(tmp.fd) != 0) fail(errno, "cannot flush " + tmp.path);
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail(errno, "cannot close " + tmp.path);
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) fail(errno, "cannot replace " + path);
  tmp.committed = true;

  // Persist the directory entry too; failure here is harmless for correctness, so ignored.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace xlaunch::config
