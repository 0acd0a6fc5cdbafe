#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "report/run_file.hpp"

namespace xlaunch::report {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

RunFile problem(std::string text) { return RunFile{RunFile::Status::Problem, {}, std::move(text)}; }

}  // namespace

RunFile read_run_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return RunFile{};
    return problem(std::strerror(errno));
  }
  struct stat st {};
  RunFile out;
  if (::fstat(fd, &st) != 0) {
    out = problem(std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    out = problem(fmt::format("not a regular file ({})", kind_of(st.st_mode)));
  } else if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    out = problem(
        fmt::format("{} bytes, more than the report reads ({} MiB)", st.st_size, max_bytes >> 20));
  } else {
    out.status = RunFile::Status::Ok;
    out.text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    // A file that grows meanwhile is read up to its size at fstat: bounded either way.
    while (got < out.text.size()) {
      const ssize_t n = ::read(fd, out.text.data() + got, out.text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out = problem(std::strerror(errno));
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (out.status == RunFile::Status::Ok) out.text.resize(got);
  }
  ::close(fd);
  return out;
}

}  // namespace xlaunch::report
