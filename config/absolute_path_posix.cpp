#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "config/absolute_path.hpp"

namespace xlaunch::config {

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  std::filesystem::path full = std::filesystem::absolute(path, ec);
  return ec ? path : full.string();
}

std::string temp_root() {
  const char* tmp = std::getenv("TMPDIR");
  return absolute_path(tmp && *tmp ? tmp : "/tmp");
}

}  // namespace xlaunch::config
