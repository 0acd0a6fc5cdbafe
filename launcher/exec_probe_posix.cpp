// The filesystem side of program resolution (access/stat), kept out of program.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "config/text.hpp"
#include "launcher/program.hpp"

namespace xlaunch::launcher {
namespace {

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> find_executable(const std::string& name, const std::string& path_var) {
  if (name.find('/') != std::string::npos) {
    if (!is_executable_file(name)) return std::nullopt;
    return std::filesystem::absolute(name).lexically_normal().string();
  }
  for (std::string_view dir : config::split(path_var, ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    if (is_executable_file(candidate)) {
      return std::filesystem::absolute(candidate).lexically_normal().string();
    }
  }
  return std::nullopt;
}

bool is_readable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

ExecProbe host_exec_probe() { return ExecProbe{find_executable, is_readable_file, exists}; }

}  // namespace xlaunch::launcher
