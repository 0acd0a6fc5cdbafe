// One attempt's events on the supervisor's loop: the workers' exits, the launcher's stop
// signals, the teardown after a failure, and the attempt's end (and its start-up loop).
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>

#include "launcher/exit_status.hpp"
#include "launcher/process.hpp"
#include "launcher/stop_request.hpp"
#include "launcher/supervisor_impl.hpp"

namespace xlaunch::launcher {
namespace {

// Ranks asked of the spawner before the launcher reads their answers: it makes them while
// the launcher prepares the next (three took 2 % less time than one, at 8 and 32 ranks).
constexpr std::size_t kStartsAhead = 3;

}  // namespace

void Supervisor::Impl::watch_children() {
  child_signals.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    for (const ExitEvent& event : reap_ended_children()) on_exit(event);
    forget_emptied_groups();
    if (!attempt_done) watch_children();
  });
}

void Supervisor::Impl::on_exit(const ExitEvent& event) {
  if (preload && event.pid == preload->pid()) preload->mark_reaped();
  auto it = by_pid.find(event.pid);
  if (it == by_pid.end()) {
    // A rank whose pid the spawner has not told yet, or an adopted orphan: the answers are
    // taken now (they are on their way), so that an exit counts when it was seen.
    if (pending_starts.empty()) return;
    unclaimed_exits.push_back(event);
    while (!pending_starts.empty()) complete_oldest_start();
    return;
  }
  const std::size_t index = it->second;
  by_pid.erase(it);
  Worker& worker = workers[index];
  worker.running = false;
  // A group outlives its leader only while it has members; then its number is free.
  if (!group_exists(event.pid)) forget_group(worker);
  settle_start(worker);
  // A rank that never ran its program is reported by why, not by the status that says so.
  worker.outcome.exit_code = worker.start_failure ? worker.start_failure_code : event.exit_code;
  worker.outcome.signal = worker.start_failure ? std::nullopt : event.signal;
  worker.outcome.end = Clock::now();
  files.log(fmt::format("rank {} (pid {}) {}", worker.outcome.rank, event.pid,
                        describe_end(worker.outcome)));
  if (monitor) monitor->on_end(static_cast<int>(index), describe_end(worker.outcome));
  // The failure is acted on at once; the report waits for the worker's last bytes.
  if (failed(worker.outcome)) note_failure(index);
  if (worker.drained()) {
    finish_worker(worker);
    return;
  }
  // A descendant may hold the pipes open: read on for a while, then report anyway.
  stop_reading_later(worker, true);
}

void Supervisor::Impl::note_failure(std::size_t index) {
  if (stopping) return;
  first_failure = index;
  publish_failure(local_failure());
  stop_workers(SIGTERM);
}

void Supervisor::Impl::finish_worker(Worker& worker) {
  if (worker.finished) return;
  worker.finished = true;
  worker.drain_timer->cancel();
  --unfinished;
  finish_if_done();
}

void Supervisor::Impl::stop_workers(int signal) {
  // A second stop (a signal after another machine's stop) forwards its signal but keeps
  // the first deadline: --term_timeout counts from the first request.
  const bool first = !stopping;
  stopping = true;
  stop_signal = signal;
  for (Worker& worker : workers) {
    if (worker.finished || worker.outcome.pid == 0) continue;
    if (worker.running) worker.outcome.stopped_by_launcher = true;
    // An exited worker's group may still hold a descendant that keeps its pipes open.
    signal_worker_group(worker, signal);
    // A stopped process (Ctrl-Z, SIGSTOP) acts on the signal only once it runs again, as
    // the shell's kill knows: without this it would wait out --term_timeout for SIGKILL.
    // Harmless to a process that runs.
    if (signal != SIGKILL) signal_worker_group(worker, SIGCONT);
  }
  files.log(fmt::format("sent {} to every running worker's process group", signal_name(signal)));
  if (!first) return;
  kill_timer.expires_after(plan.term_timeout);
  kill_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    kill_all("--term_timeout expired");
  });
}

void Supervisor::Impl::signal_worker_group(Worker& worker, int signal) {
  if (worker.group_gone) return;
  // The kernel frees a number only once no process, group or session uses it: with the
  // leader reaped, a process of that pid means the group emptied unseen (its last member
  // reaped by a parent of its own) and the number now belongs to someone else.
  if (!worker.running && worker.outcome.pid > 0 && process_exists(worker.outcome.pid)) {
    forget_group(worker);
    return;
  }
  signal_group(worker.outcome.pid, signal);
}

void Supervisor::Impl::forget_emptied_groups() {
  // This subreaper reaps what a worker left in its group once that one's parent is gone: the
  // last member's exit is seen here, while nothing else can have its number yet.
  for (Worker& worker : workers) {
    if (worker.outcome.pid > 0 && !worker.running && !worker.group_gone &&
        !group_exists(worker.outcome.pid))
      forget_group(worker);
  }
}

void Supervisor::Impl::forget_group(Worker& worker) {
  worker.group_gone = true;
  guardian.forget(worker.outcome.pid);
}

void Supervisor::Impl::kill_all(std::string_view why) {
  killed_all = true;
  bool any = false;
  for (Worker& worker : workers) {
    if (worker.finished || worker.outcome.pid == 0) continue;
    any = true;
    signal_worker_group(worker, SIGKILL);
  }
  if (any) files.log(fmt::format("sent SIGKILL to every running worker ({})", why));
}

void Supervisor::Impl::add_stop_signals() {
  for (int signal : kStopSignals) {
    const auto& ignored = plan.ignored_stop_signals;
    if (std::ranges::find(ignored, signal) == ignored.end()) stop_signals.add(signal);
  }
}

void Supervisor::Impl::watch_stop_signals() {
  stop_signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    const auto now = std::chrono::steady_clock::now();
    const StopState state{.attempt_done = attempt_done,
                          .interrupted = interrupted_by.has_value(),
                          .within_same_request = now - interrupted_at < kSameStopRequest,
                          .failing = first_failure.has_value()};
    switch (respond_to_stop(state)) {
      case StopResponse::after_the_end:
        // Queued before finish_if_done cancelled the wait: its exit code stands.
        files.log(fmt::format("received {} after every worker had ended: nothing to stop{}",
                              signal_name(signal), state.failing ? "; no restart" : ""));
        if (state.failing && !interrupted_by) note_signal_after_failure(signal, now);
        // A multi-machine job still waits for the others: a new request ends that wait.
        if (!state.interrupted || !state.within_same_request) stop_after_end = signal;
        return;
      case StopResponse::same_request:
        // One Ctrl-C delivered twice: by the terminal, and by a wrapper such as timeout(1)
        // that forwards what it gets.
        log_same_stop_request(signal);
        break;
      case StopResponse::kill_now:
        say("xlaunch: {} again: killing every worker now\n", signal_name(signal));
        kill_all("second signal");
        break;
      case StopResponse::hurry_teardown:
        // The job is already failing: the signal hurries the teardown and rules out a
        // restart, but the failure stays the root cause and its exit code.
        note_signal_after_failure(signal, now);
        say("xlaunch: {} while stopping after rank {}'s failure: killing every worker now\n",
            signal_name(signal), workers[*first_failure].outcome.rank);
        files.log(fmt::format("received {} while stopping after a failure", signal_name(signal)));
        kill_all("signal during the teardown");
        break;
      case StopResponse::stop:
        interrupted_by = signal;
        interrupted_at = now;
        say("xlaunch: {}: stopping every worker (waiting up to {:.3g}s; {} again kills them at "
            "once)\n",
            signal_name(signal), plan.term_timeout.count() / 1000.0, signal_name(signal));
        files.log(fmt::format("received {}", signal_name(signal)));
        publish_failure(interrupt_failure(signal));
        stop_workers(signal);
        break;
    }
    if (!attempt_done) watch_stop_signals();
  });
}

void Supervisor::Impl::note_signal_after_failure(int signal,
                                                 std::chrono::steady_clock::time_point now) {
  interrupted_by = signal;
  interrupted_at = now;
  signal_after_failure = true;
}

void Supervisor::Impl::log_same_stop_request(int signal) {
  files.log(fmt::format("received {} again within {}ms: the same request", signal_name(signal),
                        kSameStopRequest.count()));
}

void Supervisor::Impl::finish_if_done() {
  if (spawning || unfinished > 0 || attempt_done) return;
  attempt_done = true;
  // Descendants left in a worker's group, orphans adopted by this subreaper and (with a
  // cgroup or a PID namespace) those that left their group would hold GPU memory:
  // nothing outlives its job.
  for (Worker& worker : workers) signal_worker_group(worker, SIGKILL);
  guardian.kill_descendants();
  kill_timer.cancel();
  if (monitor) monitor->end_attempt();
  child_signals.cancel();
  stop_signals.cancel();
  other_signals.cancel();
  for (auto& waiter : console_waiters) {
    if (waiter) waiter->cancel();
  }
}

void Supervisor::Impl::run_attempt(int attempt) {
  workers.clear();
  workers.resize(plan.local_world_size);
  by_pid.clear();
  unfinished = 0;
  stopping = false;
  killed_all = false;
  attempt_done = false;
  failure_published = false;
  stalled_stop = false;
  first_failure.reset();
  stop_after_end.reset();
  unmade_log_said = false;
  io.restart();
  if (monitor) monitor->begin_attempt(plan.master_addr, plan.master_port);
  add_stop_signals();
  watch_children();
  watch_stop_signals();
  watch_other_signals();
  spawning = true;
  await_preload();
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    // A signal or a failure that arrives while workers start stops the start-up.
    io.poll();
    if (interrupted_by || stopping) break;
    start_worker(workers[local_rank], attempt, local_rank);
    // The first rank is awaited alone, see below.
    while (pending_starts.size() > (local_rank == 0 ? 0 : kStartsAhead)) complete_oldest_start();
    // The other ranks start once the first runs its program or has failed: a program that
    // cannot be executed fails the first rank alone, as it would fail them all. They do not
    // wait for each other's exec, which overlaps with the next one's start.
    while (local_rank == 0 && workers[0].starting && !interrupted_by && !stopping) io.run_one();
  }
  while (!pending_starts.empty()) complete_oldest_start();
  spawning = false;
  if (monitor) monitor->on_ranks_started();
  finish_if_done();
  io.run();
}

void Supervisor::Impl::stop_for_stall() {
  if (stopping || attempt_done) return;
  stalled_stop = true;
  say("xlaunch: stopping every worker: the job stalled (--on_stall stop; exit code {})\n",
      exit_status::kStalled);
  files.log("stopping every worker: the job stalled (--on_stall stop)");
  publish_failure(stall_failure());
  stop_workers(SIGTERM);
}

void Supervisor::Impl::publish_failure(const FailureRecord& record) {
  if (failure_published || !hooks || !hooks->on_failure) return;
  failure_published = true;
  hooks->on_failure(attempt, record);
}

void Supervisor::Impl::remote_stop(int for_attempt, const std::string& reason) {
  if (for_attempt != attempt || attempt_done || stopping) return;
  failure_published = true;  // the job already has its root cause
  say("xlaunch: stopping every worker: {}\n", reason);
  files.log(fmt::format("stopping every worker: {}", reason));
  stop_workers(SIGTERM);
}

}  // namespace xlaunch::launcher
