// Runs the interpreter once for `xlaunch env`: fork, exec, read its stdout to the end.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "launcher/program.hpp"
#include "launcher/python_probe.hpp"

extern char** environ;

namespace xlaunch::launcher {

PythonInfo probe_python(const std::string& interpreter, const std::string& path_var) {
  PythonInfo info;
  info.interpreter = interpreter;
  info.path = host_exec_probe().find_executable(interpreter, path_var);
  if (!info.path) return info;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    info.problem = "could not make a pipe";
    return info;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args{*info.path, "-c", kPythonProbeScript};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, info.path->c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    info.problem = "could not be started";
    return info;
  }
  std::string output;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n > 0) {
      output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  parse_python_probe(output, info);
  if (!info.version) info.problem = "did not answer as Python";
  return info;
}

}  // namespace xlaunch::launcher
