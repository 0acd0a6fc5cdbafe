// --preload (docs/launch.md, "Preloading"): the template starts with the run, answers before
// the first attempt's ranks start, and forks every Python rank of every attempt. Whatever
// goes wrong with it, the ranks start on their own, and one line says why.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "diagnose/safe_text.hpp"
#include "launcher/preload_plan.hpp"
#include "launcher/supervisor_impl.hpp"
#include "launcher/worker_env.hpp"

namespace xlaunch::launcher {
namespace {

// `why` may quote a module's exception: one line, control characters escaped.
void say_without_template(RunFiles& files, const std::string& why) {
  std::string line = diagnose::escape_controls(why);
  std::replace(line.begin(), line.end(), '\n', ' ');
  say("xlaunch: --preload: the ranks start without a template: {}\n", line);
  files.log("--preload: the ranks start without a template: " + line);
}

}  // namespace

void Supervisor::Impl::start_preload() {
  if (plan.preload.empty()) return;
  if (auto why = preload_not_applicable(plan, worker_placement().pid_namespace >= 0)) {
    say_without_template(files, *why);
    return;
  }
  std::vector<Environment> envs;
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    Environment env = worker_environment(parent_env, plan, local_rank, plan.first_attempt,
                                         WorkerPaths{"", files.run_dir()});
    if (monitor) monitor->add_worker_env(env);
    envs.push_back(std::move(env));
  }
  // What the imports print (a warning, a traceback) is kept beside the run's other files.
  const std::string log_path = files.own_file("preload.log");
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  try {
    preload =
        PreloadTemplate::start(preload_template_argv(plan.argv, plan.preload),
                               to_envp(preload_template_env(envs)), log >= 0 ? log : STDERR_FILENO);
    files.log(fmt::format("--preload: template (pid {}) imports {}", preload->pid(),
                          fmt::join(plan.preload, ",")));
  } catch (const std::exception& e) {
    say_without_template(files, e.what());
  }
  if (log >= 0) ::close(log);
}

void Supervisor::Impl::await_preload() {
  if (!preload || preload_ready) return;
  const int own = ::fcntl(preload->answer_fd(), F_DUPFD_CLOEXEC, 0);
  if (own < 0) return;  // asked again before the next attempt
  asio::posix::stream_descriptor answer(io, own);
  bool answered = false;
  bool waited = false;
  answer.async_wait(asio::posix::descriptor_base::wait_read,
                    [&](const boost::system::error_code& ec) {
                      answered = !ec;
                      waited = true;
                    });
  // Imports from a busy network file system can take minutes; a hung one, for ever: say
  // what the ranks wait for, every minute.
  asio::steady_timer note(io);
  bool noted = false;
  const auto since = Clock::now();
  std::function<void()> arm = [&] {
    note.expires_after(std::chrono::seconds(60));
    note.async_wait([&](const boost::system::error_code& ec) {
      noted = true;
      if (ec) return;
      const auto waited_s =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since).count();
      say("xlaunch: --preload: the ranks wait for the template (pid {}), still importing {} "
          "after {} s (its output: preload.log in the run's folder)\n",
          preload->pid(), fmt::join(plan.preload, ","), waited_s);
      noted = false;
      arm();
    });
  };
  arm();
  // A stop signal or a failure elsewhere ends the wait, as it ends the start-up.
  while (!waited && !interrupted_by && !stopping) io.run_one();
  note.cancel();
  if (!waited) answer.cancel();
  while (!waited || !noted) io.run_one();
  if (!answered) return;
  const std::string why = preload->read_answer();
  if (!why.empty()) {
    say_without_template(files, why);
    preload.reset();
    return;
  }
  preload_ready = true;
  files.log(fmt::format("--preload: template (pid {}) ready", preload->pid()));
}

std::optional<long> Supervisor::Impl::spawn_rank(const SpawnSpec& spec) {
  if (preload && preload_ready) {
    try {
      return preload->spawn(spec);
    } catch (const std::exception& e) {
      say_without_template(files, e.what());
      preload.reset();
      preload_ready = false;
    }
  }
  request_worker(spec);
  return std::nullopt;
}

}  // namespace xlaunch::launcher
