// default_python.hpp's file-system side: argv[0], PATH, the working folder, access(2).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "launcher/default_python.hpp"

namespace xlaunch::launcher {
namespace {

std::string remembered_argv0;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_program(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

void remember_invocation(const char* argv0) { remembered_argv0 = argv0 ? argv0 : ""; }

std::string default_python() {
  const char* path = std::getenv("PATH");
  char cwd[4096];
  const std::string working_folder = ::getcwd(cwd, sizeof cwd) ? cwd : "/";
  return python_beside(
      invoked_folder(remembered_argv0, path ? path : "/usr/bin:/bin", working_folder, is_program),
      exists, is_program);
}

}  // namespace xlaunch::launcher
