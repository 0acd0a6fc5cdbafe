// Starting one attempt's workers: each rank's pipes and environment, its process (made by
// the spawner), and the watch on its start-status pipe until it runs its program, fails to,
// or has done neither within kStartBound.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "launcher/exit_status.hpp"
#include "launcher/preload_template.hpp"
#include "launcher/process.hpp"
#include "launcher/spawn_protocol.hpp"
#include "launcher/spawner.hpp"
#include "launcher/supervisor_impl.hpp"
#include "launcher/worker_env.hpp"

namespace xlaunch::launcher {
namespace {

// From the spawner's (or the template's) answer until the worker runs its program. Its child
// does a handful of system calls and execve, which returns once the new program is mapped:
// milliseconds, or seconds for a program on a slow network file system. A rank that takes
// longer is stuck.
constexpr auto kStartBound = std::chrono::seconds(30);

}  // namespace

void Supervisor::Impl::start_worker(Worker& worker, int attempt, int local_rank) {
  const int rank = plan.rank_offset + local_rank;
  worker.outcome = WorkerOutcome{};
  worker.outcome.rank = rank;
  worker.outcome.local_rank = local_rank;
  worker.outcome.attempt = attempt;
  worker.prefix = fmt::format("[rank{}]: ", rank);
  worker.drain_timer = std::make_unique<asio::steady_timer>(io);
  Pipe out;
  Pipe err;
  Pipe status;
  Environment env;
  try {
    const RunFiles::RankFiles rank_files = files.prepare_rank(attempt, rank);
    worker.error_file = rank_files.error_file;
    env = worker_environment(parent_env, plan, local_rank, attempt,
                             WorkerPaths{worker.error_file, files.run_dir()});
    if (monitor) monitor->add_worker_env(env);
    out = make_pipe();
    err = make_pipe();
    resize_pipe(out.read_fd, rank_pipe_bytes);
    resize_pipe(err.read_fd, rank_pipe_bytes);
    status = make_pipe();
    open_stream(worker.out, local_rank, rank_files, false, out);
    open_stream(worker.err, local_rank, rank_files, true, err);
  } catch (const std::exception& e) {
    // No descriptors left...: this rank fails to start and the job ends with a report and
    // its summary.json, like any other failure. (Its log files are no reason: see
    // open_stream.)
    for (Pipe* pipe : {&out, &err, &status}) {
      close_fd(pipe->read_fd);
      close_fd(pipe->write_fd);
    }
    for (Stream* stream : {&worker.out, &worker.err}) {
      stream->pipe.reset();
      close_fd(stream->log_fd);
    }
    worker.outcome.start = Clock::now();
    worker.finished = true;  // nothing to reap or read
    fail_to_start(worker, local_rank, exit_status::kFailure,
                  fmt::format("could not set up this rank: {}", e.what()));
    return;
  }
  ++unfinished;
  worker.outcome.start = Clock::now();
  std::optional<long> made;
  bool asked = false;
  try {
    made =
        spawn_rank(SpawnSpec{plan.argv, to_envp(env), out.write_fd, err.write_fd, status.write_fd});
    asked = !made;
  } catch (const std::exception& e) {
    no_process_for(worker, status.read_fd, e.what());
  }
  // The spawner (or the template) holds its own copies: from its answer on, only the child
  // holds the write ends.
  close_fd(status.write_fd);
  close_fd(out.write_fd);
  close_fd(err.write_fd);
  if (asked) {
    // Its output is read once its pid is known, so that no end of it is taken for the end
    // of a worker that has not started.
    pending_starts.push_back({static_cast<std::size_t>(local_rank), status.read_fd});
    return;
  }
  if (made) track_started(worker, *made, status.read_fd);
  read_output(worker, made.has_value());
}

void Supervisor::Impl::complete_oldest_start() {
  const PendingStart pending = pending_starts.front();
  pending_starts.pop_front();
  Worker& worker = workers[pending.local_rank];
  int status_fd = pending.status_fd;
  bool started = false;
  try {
    track_started(worker, await_worker(), status_fd);
    started = true;
  } catch (const std::exception& e) {
    no_process_for(worker, status_fd, e.what());
  }
  read_output(worker, started);
  if (pending_starts.empty()) unclaimed_exits.clear();  // adopted orphans
}

void Supervisor::Impl::no_process_for(Worker& worker, int& status_fd, const char* why) {
  close_fd(status_fd);
  fail_to_start(worker, worker.outcome.local_rank, exit_status::kFailure,
                fmt::format("could not start a process for this rank: {}", why));
  if (!spawner_usable()) kill_unnamed_children();
}

void Supervisor::Impl::read_output(Worker& worker, bool started) {
  read_more(worker, worker.out);
  read_more(worker, worker.err);
  // Its pipes end when the last copy closes; a process that keeps one (a killed one stuck
  // in the kernel) must not hold the job.
  if (!started && !worker.finished) stop_reading_later(worker, false);
}

void Supervisor::Impl::kill_unnamed_children() {
  // The spawner failed: a process it made whose answer went with it (requests are sent
  // ahead) is still our child (CLONE_PARENT). Killed, it lets go of its rank's pipes and
  // cannot run unsupervised. Orphans we adopted go too, as at every attempt's end.
  guardian.kill_unknown_children([this](long child) { return by_pid.contains(child); });
}

void Supervisor::Impl::track_started(Worker& worker, long pid, int status_fd) {
  const int local_rank = worker.outcome.local_rank;
  worker.outcome.pid = pid;
  guardian.watch(pid);
  worker.running = true;
  by_pid[pid] = static_cast<std::size_t>(local_rank);
  watch_start(worker, status_fd);
  if (monitor) monitor->on_start(local_rank, worker.outcome.rank, pid);
  if (hooks && hooks->on_worker_started) {
    hooks->on_worker_started(worker.outcome.attempt, worker.outcome.rank, pid);
  }
  files.log(fmt::format("attempt {}: rank {} (local rank {}) started, pid {}",
                        worker.outcome.attempt, worker.outcome.rank, local_rank, pid));
  // It may have ended already, reaped while its pid was unknown.
  const auto ended = std::find_if(unclaimed_exits.begin(), unclaimed_exits.end(),
                                  [pid](const ExitEvent& event) { return event.pid == pid; });
  if (ended != unclaimed_exits.end()) {
    const ExitEvent event = *ended;
    unclaimed_exits.erase(ended);
    on_exit(event);
  }
  if (stopping && worker.running) {
    // Asked for before the stop, answered after it: it stops with the others.
    worker.outcome.stopped_by_launcher = true;
    signal_group(pid, killed_all ? SIGKILL : stop_signal);
  }
}

void Supervisor::Impl::fail_to_start(Worker& worker, int local_rank, int exit_code,
                                     const std::string& reason) {
  worker.outcome.exit_code = exit_code;
  worker.outcome.end = Clock::now();
  worker.outcome.start_error = reason;  // the report says it could not be started, and why

  files.log(fmt::format("rank {}: {}", worker.outcome.rank, reason));
  note_failure(static_cast<std::size_t>(local_rank));
}

void Supervisor::Impl::watch_start(Worker& worker, int status_fd) {
  // Readiness only, read here: on_exit may have to read it first, and must find the bytes.
  ::fcntl(status_fd, F_SETFL, O_NONBLOCK);
  worker.starting = true;
  worker.start_status = std::make_unique<asio::posix::stream_descriptor>(io, status_fd);
  worker.start_status->async_wait(asio::posix::descriptor_base::wait_read,
                                  [this, &worker](const boost::system::error_code& ec) {
                                    if (!ec) read_start_status(worker);
                                  });
  worker.start_timer = std::make_unique<asio::steady_timer>(io, kStartBound);
  worker.start_timer->async_wait([this, &worker](const boost::system::error_code& ec) {
    if (!ec && worker.starting) start_timed_out(worker);
  });
}

void Supervisor::Impl::read_start_status(Worker& worker) {
  if (!worker.start_status) return;
  char bytes[kStartFailureSize];
  ssize_t n;
  do {
    n = ::read(worker.start_status->native_handle(), bytes, sizeof bytes);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) {  // not yet (a spurious wake-up)
    worker.start_status->async_wait(asio::posix::descriptor_base::wait_read,
                                    [this, &worker](const boost::system::error_code& ec) {
                                      if (!ec) read_start_status(worker);
                                    });
    return;
  }
  worker.start_status.reset();
  const std::optional<StartFailure> failure =
      n > 0 ? decode_start_failure({bytes, static_cast<std::size_t>(n)}) : std::nullopt;
  if (!failure) {
    // End of file: the program runs. (Bytes that are no StartFailure cannot come from the
    // child; its exit status will tell.)
    worker.starting = false;
    worker.start_timer->cancel();
    return;
  }
  // It exits right after writing this; on_exit reports it, and the start-up goes on then.
  worker.start_failure =
      describe_start_failure(*failure, plan.argv.front(), worker_placement().cgroup_procs);
  worker.start_failure_code = start_failure_exit_code(*failure);
}

void Supervisor::Impl::start_timed_out(Worker& worker) {
  worker.starting = false;
  worker.start_status.reset();
  // Its own group may not exist yet: the process itself, then the group.
  ::kill(static_cast<pid_t>(worker.outcome.pid), SIGKILL);
  signal_group(worker.outcome.pid, SIGKILL);
  worker.start_failure = fmt::format(
      "did not start: its process (pid {}) had neither run {} nor failed {} s "
      "after it was made; killed it",
      worker.outcome.pid, plan.argv.front(), kStartBound.count());
  worker.start_failure_code = exit_status::kFailure;
  worker.outcome.exit_code = worker.start_failure_code;
  worker.stderr_tail.push_back("xlaunch " + *worker.start_failure);
  files.log(fmt::format("rank {}: {}", worker.outcome.rank, *worker.start_failure));
  note_failure(worker.outcome.local_rank);
}

void Supervisor::Impl::settle_start(Worker& worker) {
  if (!worker.starting) return;
  // The process is gone: the pipe holds its failure, or nothing (it exec'd, then ended).
  if (worker.start_status) read_start_status(worker);
  worker.starting = false;
  worker.start_status.reset();
  worker.start_timer->cancel();
  if (!worker.start_failure) return;
  worker.stderr_tail.push_back("xlaunch " + *worker.start_failure);
  files.log(fmt::format("rank {}: {}", worker.outcome.rank, *worker.start_failure));
}

}  // namespace xlaunch::launcher
