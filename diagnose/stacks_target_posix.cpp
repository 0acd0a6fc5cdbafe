// Reads what stacks_target.hpp checks, right before the signal: the rank's .fd note, its
// SigCgt mask, and whether that descriptor still is the dump file.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config/regular_file.hpp"
#include "diagnose/stacks_site.hpp"
#include "diagnose/stacks_target.hpp"

namespace xlaunch::diagnose {
namespace {

void do_nothing(int) {}

// A descriptor's number and a newline.
constexpr std::size_t kMaxNoteBytes = 64;

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
  // The rank wrote it, and could have put anything there.
  const auto note = config::read_regular_text(descriptor_file(stacks_dir, rank.rank, rank.own_pid),
                                              kMaxNoteBytes);
  if (!note) return DumpTarget::not_python;
  if (note->starts_with("none")) return DumpTarget::no_handler;  // the script took the signal
  const auto fd = parse_descriptor_note(*note);
  if (!fd) return DumpTarget::not_python;
  const std::string proc = "/proc/" + std::to_string(rank.pid);
  const auto status = slurp(proc + "/status");
  if (!status) return DumpTarget::ended;
  if (!catches_signal(*status, stacks_signal())) return DumpTarget::no_handler;
  if (stopped_state(*status)) return DumpTarget::stopped;
  // stat() follows the /proc link to the open file itself, even when it was renamed.
  struct stat ours {};
  struct stat theirs {};
  if (::stat(stacks_file(stacks_dir, rank.rank, rank.own_pid).c_str(), &ours) != 0) {
    return DumpTarget::file_closed;
  }
  if (::stat((proc + "/fd/" + std::to_string(*fd)).c_str(), &theirs) != 0) {
    return errno == EACCES || errno == EPERM ? DumpTarget::threads_unseen : DumpTarget::file_closed;
  }
  if (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino) return DumpTarget::file_closed;
  return DumpTarget::ready;
}

namespace {

// The thread to send the dump signal to (stacks_target.hpp): nullopt when every thread
// waits in a call it would cut short; `readable` false when /proc does not say.
struct ThreadChoice {
  bool readable = false;
  std::optional<long> tid;
};

ThreadChoice choose_thread(long pid) {
  ThreadChoice choice;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(tasks.c_str());
  if (dir == nullptr) return choice;
  std::optional<long> running;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (tid <= 0 || *end != '\0') continue;
    const auto state = slurp(tasks + "/" + entry->d_name + "/syscall");
    if (!state || state->empty()) continue;  // gone, or no ptrace access to it
    choice.readable = true;
    const std::optional<BlockedCall> call = blocked_in_syscall(*state);
    if (call && !cut_short_by_a_signal(*call)) {
      choice.tid = tid;  // blocked where the kernel restarts the call: stays so
      break;
    }
    if (!call && !running) running = tid;
  }
  ::closedir(dir);
  if (!choice.tid) choice.tid = running;
  return choice;
}

}  // namespace

DumpTarget request_dump(const std::string& stacks_dir, const RankProcess& rank) {
  const DumpTarget target = check_dump_target(stacks_dir, rank);
  if (target != DumpTarget::ready) return target;
  // The rank is our child and not yet reaped (the caller runs on the loop that reaps), so
  // its pid and threads cannot have been reused; and should it exec between the check and
  // the signal, SIGURG's default action is to ignore it. The handler runs in the thread
  // that gets the signal, and it cuts a poll() or a sleep there short whatever SA_RESTART
  // says: that thread must not be waiting in one.
  const ThreadChoice choice = choose_thread(rank.pid);
  if (!choice.readable) return DumpTarget::threads_unseen;
  if (!choice.tid) return DumpTarget::would_cut_short;
  ::syscall(SYS_tgkill, static_cast<pid_t>(rank.pid), static_cast<pid_t>(*choice.tid),
            stacks_signal());
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
