#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "config/regular_file.hpp"

namespace xlaunch::config {

const char* file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

std::optional<std::string> non_regular_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return std::nullopt;
  return file_kind(st.st_mode);
}

namespace {

RegularFile unreadable(int error) {
  RegularFile out;
  out.status = RegularFile::Status::Unreadable;
  out.error = error;
  return out;
}

}  // namespace

RegularFile read_regular_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno == ENOENT ? RegularFile{} : unreadable(errno);
  struct stat st {};
  RegularFile out;
  if (::fstat(fd, &st) != 0) {
    out = unreadable(errno);
  } else if (!S_ISREG(st.st_mode)) {
    out.status = RegularFile::Status::NotRegular;
    out.kind = file_kind(st.st_mode);
  } else if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    out.status = RegularFile::Status::TooLarge;
    out.size = static_cast<std::uintmax_t>(st.st_size);
  } else {
    out.status = RegularFile::Status::Ok;
    out.text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    // A file that grows meanwhile is read up to its size at fstat: bounded either way.
    while (got < out.text.size()) {
      const ssize_t n = ::read(fd, out.text.data() + got, out.text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out = unreadable(errno);
        break;
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (out.status == RegularFile::Status::Ok) out.text.resize(got);
  }
  ::close(fd);
  return out;
}

RegularFile read_bounded_stream(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? RegularFile{} : unreadable(errno);
  struct stat st {};
  RegularFile out;
  if (::fstat(fd, &st) != 0) {
    out = unreadable(errno);
  } else if (S_ISDIR(st.st_mode)) {
    out.status = RegularFile::Status::NotRegular;
    out.kind = file_kind(st.st_mode);
  } else {
    out.status = RegularFile::Status::Ok;
    char buffer[16384];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out = unreadable(errno);
        break;
      }
      if (n == 0) break;
      if (out.text.size() + static_cast<std::size_t>(n) > max_bytes) {
        out.status = RegularFile::Status::TooLarge;
        out.size = out.text.size() + static_cast<std::size_t>(n);
        out.text.clear();
        break;
      }
      out.text.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

std::optional<std::string> read_regular_text(const std::string& path, std::size_t max_bytes) {
  RegularFile file = read_regular_file(path, max_bytes);
  if (file.status != RegularFile::Status::Ok) return std::nullopt;
  return std::move(file.text);
}

}  // namespace xlaunch::config
