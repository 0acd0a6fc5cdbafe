#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>

#include "config/regular_file.hpp"
#include "report/run_file.hpp"

namespace xlaunch::report {

RunFile read_run_file(const std::string& path, std::size_t max_bytes) {
  using Status = config::RegularFile::Status;
  config::RegularFile file = config::read_regular_file(path, max_bytes);
  switch (file.status) {
    case Status::Ok:
      return RunFile{RunFile::Status::Ok, std::move(file.text), {}};
    case Status::Missing:
      return RunFile{};
    case Status::NotRegular:
      return RunFile{
          RunFile::Status::Problem, {}, fmt::format("not a regular file ({})", file.kind)};
    case Status::TooLarge:
      return RunFile{
          RunFile::Status::Problem,
          {},
          fmt::format("{} bytes, more than the report reads ({} MiB)", file.size, max_bytes >> 20)};
    case Status::Unreadable:
      break;
  }
  return RunFile{RunFile::Status::Problem, {}, std::strerror(file.error)};
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat first {};
  struct stat second {};
  return ::stat(a.c_str(), &first) == 0 && ::stat(b.c_str(), &second) == 0 &&
         first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

}  // namespace xlaunch::report
