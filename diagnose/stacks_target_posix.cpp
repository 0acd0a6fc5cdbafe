// Reads what stacks_target.hpp checks, right before the signal: the rank's .fd note, its
// SigCgt mask, and whether that descriptor still is the dump file.
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "diagnose/stacks_site.hpp"
#include "diagnose/stacks_target.hpp"

namespace xlaunch::diagnose {
namespace {

void do_nothing(int) {}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

DumpTarget check_dump_target(const std::string& stacks_dir, const RankProcess& rank) {
  if (stacks_dir.empty()) return DumpTarget::not_python;
  const auto note = slurp(descriptor_file(stacks_dir, rank.rank, rank.own_pid));
  if (!note) return DumpTarget::not_python;
  const auto fd = parse_descriptor_note(*note);
  if (!fd) return DumpTarget::not_python;
  const std::string proc = "/proc/" + std::to_string(rank.pid);
  const auto status = slurp(proc + "/status");
  if (!status) return DumpTarget::ended;
  if (!catches_signal(*status, stacks_signal())) return DumpTarget::no_handler;
  // stat() follows the /proc link to the open file itself, even when it was renamed.
  struct stat ours {};
  struct stat theirs {};
  if (::stat(stacks_file(stacks_dir, rank.rank, rank.own_pid).c_str(), &ours) != 0 ||
      ::stat((proc + "/fd/" + std::to_string(*fd)).c_str(), &theirs) != 0 ||
      ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino) {
    return DumpTarget::file_closed;
  }
  return DumpTarget::ready;
}

DumpTarget request_dump(const std::string& stacks_dir, const RankProcess& rank) {
  const DumpTarget target = check_dump_target(stacks_dir, rank);
  // The rank is our child and not yet reaped (the caller runs on the loop that reaps), so
  // its pid cannot have been reused; and should it exec between the check and the signal,
  // SIGURG's default action is to ignore it.
  if (target == DumpTarget::ready) ::kill(static_cast<pid_t>(rank.pid), stacks_signal());
  return target;
}

long read_own_pid(long pid) {
  const auto status = slurp("/proc/" + std::to_string(pid) + "/status");
  return status ? own_pid(*status).value_or(pid) : pid;
}

void survive_old_dump_signal() {
  struct sigaction action {};
  action.sa_handler = do_nothing;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGRTMIN + 4, &action, nullptr);
}

}  // namespace xlaunch::diagnose
