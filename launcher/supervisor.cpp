#include "launcher/supervisor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstring>

#include "config/regular_file.hpp"
#include "diagnose/stacks_registry.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/pipe_size.hpp"
#include "launcher/process.hpp"
#include "launcher/supervisor_impl.hpp"

namespace xlaunch::launcher {
namespace {

// PyTorch's error file is a traceback and a few fields: kilobytes.
constexpr std::size_t kMaxErrorFileBytes = 4u << 20;

}  // namespace

Supervisor::Supervisor(const LaunchPlan& plan, const Environment& parent_env, RunFiles& files,
                       std::string host, GroupGuardian& guardian)
    : impl_(std::make_unique<Impl>(plan, parent_env, files, std::move(host), guardian)) {}

Supervisor::~Supervisor() = default;

void Supervisor::request_stop(int attempt, std::string reason) {
  Impl* s = impl_.get();
  asio::post(s->io, [s, attempt, reason = std::move(reason)] { s->remote_stop(attempt, reason); });
}

RunSummary Supervisor::run(const AttemptHooks& hooks) {
  Impl& s = *impl_;
  s.hooks = &hooks;
  s.monitor = std::make_unique<diagnose::StallMonitor>(s.io, s.monitor_options(),
                                                       s.monitor_output(), hooks.store_clients);
  s.monitor->on_stall_stop = [&s] { s.stop_for_stall(); };
  // Should the launcher be killed, its guardian removes it (docs/diagnose.md), as it does
  // the temporary folder (monitor_options).
  if (!s.monitor->socket_path().empty()) {
    s.guardian.remove_if_killed(s.monitor->socket_path(), GroupGuardian::Leftover::file);
  }
  s.start_preload();
  RunSummary summary;
  summary.run_id = s.plan.run_id;
  summary.host = s.host;
  summary.world_size = s.plan.world_size;
  for (int attempt = s.plan.first_attempt;; ++attempt) {
    if (hooks.before_attempt) hooks.before_attempt(attempt);
    s.attempt = attempt;
    s.run_attempt(attempt);
    s.record_attempt(summary, attempt);
    const bool again = hooks.after_attempt ? s.end_job_attempt(summary, attempt)
                                           : s.end_local_attempt(summary, attempt);
    if (!again) return summary;
  }
}

Supervisor::Impl::Impl(const LaunchPlan& p, const Environment& env, RunFiles& f, std::string h,
                       GroupGuardian& g)
    : plan(p), parent_env(env), files(f), host(std::move(h)), guardian(g) {
  // A launch inside another xlaunch job's worker keeps the kernel's pipes: the budget is
  // per launcher, and N inner launchers would take N sixteenths of the user's pipes.
  if (!lookup(parent_env, "XLAUNCH_RUN_ID")) {
    rank_pipe_bytes =
        rank_pipe_size(2 * static_cast<std::size_t>(plan.local_world_size), pipe_user_pages_soft(),
                       static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  }
  add_stop_signals();
  add_other_signals();
  // Text queued from another thread (the agent's monitor) must get written too.
  console_on_backlog([this] { asio::post(io, [this] { arm_console(); }); });
}

Supervisor::Impl::~Impl() {
  console_on_backlog({});
  ignore_other_signals();
}

void Supervisor::Impl::record_attempt(RunSummary& summary, int attempt) {
  try {
    files.write_file("activity.csv", activity.csv());
  } catch (const std::exception& e) {
    files.log(fmt::format("could not write activity.csv: {}", e.what()));
  }
  summary.stall_json = monitor->stall_json();
  summary.log_cuts.insert(summary.log_cuts.end(), log_cuts.begin(), log_cuts.end());
  log_cuts.clear();
  for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
    const WorkerOutcome& outcome = workers[local_rank].outcome;
    if (outcome.pid != 0 || outcome.end) {
      summary.workers.push_back(outcome);
    } else {
      WorkerOutcome missing;
      missing.rank = plan.rank_offset + local_rank;
      missing.local_rank = local_rank;
      missing.attempt = attempt;
      summary.not_started.push_back(missing);
    }
  }
}

bool Supervisor::Impl::end_local_attempt(RunSummary& summary, int attempt) {
  summary.interrupted_by = interrupted_by;
  if (interrupted_by && !signal_after_failure) {
    summary.exit_code = exit_status::kSignalBase + *interrupted_by;
    return false;
  }
  if (stalled_stop && !first_failure) {
    summary.exit_code = exit_status::kStalled;
    return false;
  }
  if (!first_failure) {
    summary.exit_code = exit_status::kSuccess;
    return false;
  }
  RootCause cause = root_cause(workers[*first_failure]);
  say("{}", format_root_cause(cause, plan.world_size));
  summary.exit_code = exit_code_of(cause.worker);
  summary.root_cause = cause;
  if (attempt >= plan.max_restarts || interrupted_by) {
    if (plan.max_restarts > 0 && !interrupted_by) {
      say("xlaunch: no restarts left ({} used); giving up\n", plan.max_restarts);
    }
    return false;
  }
  say("xlaunch: restarting every worker (restart {} of {})\n", attempt + 1, plan.max_restarts);
  files.log(fmt::format("restart {} of {}", attempt + 1, plan.max_restarts));
  return true;
}

bool Supervisor::Impl::end_job_attempt(RunSummary& summary, int attempt) {
  const std::optional<FailureRecord> local = local_outcome(summary);
  // Waiting for the other machines can take long, and nothing reads signals meanwhile:
  // a Ctrl-C then ends xlaunch by its default action (the others see it leave).
  hand_stop_signals_to_default();
  std::optional<FailureRecord> job = hooks->after_attempt(attempt, local);
  summary.interrupted_by = interrupted_by;
  if (!job) {
    summary.exit_code = exit_status::kSuccess;
    return false;
  }
  summary.exit_code = job->exit_code;
  if (!job->restartable || interrupted_by || attempt >= plan.max_restarts) {
    if (job->restartable && plan.max_restarts > 0 && !interrupted_by) {
      say("xlaunch: no restarts left ({} used); giving up\n", plan.max_restarts);
    }
    return false;
  }
  say("xlaunch: restarting every worker on every machine (restart {} of {})\n", attempt + 1,
      plan.max_restarts);
  files.log(fmt::format("restart {} of {}", attempt + 1, plan.max_restarts));
  return true;
}

void Supervisor::Impl::read_stop_after_end(std::chrono::steady_clock::time_point copies_until) {
  stop_signals.async_wait([this, copies_until](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (std::chrono::steady_clock::now() < copies_until) {
      log_same_stop_request(signal);
      read_stop_after_end(copies_until);
      return;
    }
    stop_after_end = signal;
  });
}

void Supervisor::Impl::hand_stop_signals_to_default() {
  io.restart();
  // A copy of this launcher's own stop signal (one Ctrl-C delivered twice) may still come
  // as the wait begins: until kSameStopRequest has passed, the set reads and lets it go.
  const auto copies_until =
      interrupted_by ? interrupted_at + kSameStopRequest : std::chrono::steady_clock::time_point{};
  read_stop_after_end(copies_until);
  while (!stop_after_end && std::chrono::steady_clock::now() < copies_until) {
    io.run_one_until(copies_until);
  }
  // Every thread holds them now (the others always do), so none is caught and dropped
  // between the last read and the default action's return. One the set caught but did not
  // report, or reported after the workers' end, is sent again: it too ends the wait.
  hold_stop_signals();
  io.poll();
  stop_signals.cancel();
  io.poll();
  stop_signals.clear();
  if (stop_after_end) {
    files.log(fmt::format("{} after this machine's workers ended: leaving the job",
                          signal_name(*stop_after_end)));
    keep_pending(*stop_after_end);
  }
  release_stop_signals();
}

std::optional<FailureRecord> Supervisor::Impl::local_outcome(RunSummary& summary) {
  if (interrupted_by && !signal_after_failure) return interrupt_failure(*interrupted_by);
  if (stalled_stop && !first_failure) return stall_failure();
  if (!first_failure) return std::nullopt;
  RootCause cause = root_cause(workers[*first_failure]);
  say("{}", format_root_cause(cause, plan.world_size));
  summary.root_cause = cause;
  return local_failure();
}

FailureRecord Supervisor::Impl::local_failure() const {
  const WorkerOutcome& w = workers[*first_failure].outcome;
  FailureRecord r;
  r.machine_rank = plan.machine_rank;
  r.host = host;
  r.rank = w.rank;
  r.exit_code = exit_code_of(w);
  r.cause = describe_end(w);
  return r;
}

FailureRecord Supervisor::Impl::interrupt_failure(int signal) const {
  FailureRecord r;
  r.machine_rank = plan.machine_rank;
  r.host = host;
  r.exit_code = exit_status::kSignalBase + signal;
  r.restartable = false;
  r.cause = fmt::format("launcher interrupted by {}", signal_name(signal));
  return r;
}

FailureRecord Supervisor::Impl::stall_failure() const {
  FailureRecord r;
  r.machine_rank = plan.machine_rank;
  r.host = host;
  r.exit_code = exit_status::kStalled;
  r.restartable = false;
  r.cause = "the job stalled (--on_stall stop)";
  return r;
}

RootCause Supervisor::Impl::root_cause(const Worker& worker) const {
  RootCause cause;
  cause.worker = worker.outcome;
  cause.host = host;
  cause.stderr_tail.assign(worker.stderr_tail.begin(), worker.stderr_tail.end());
  cause.error_file = worker.error_file;
  // The rank's file: a FIFO or a link to /dev/zero there must not hang the report.
  config::RegularFile file = config::read_regular_file(worker.error_file, kMaxErrorFileBytes);
  if (file.status == config::RegularFile::Status::Ok) {
    cause.error_file_text = std::move(file.text);
  } else if (file.status != config::RegularFile::Status::Missing) {
    // Said, not silently skipped: the rank meant to leave something there.
    cause.error_file_text = file.status == config::RegularFile::Status::NotRegular
                                ? fmt::format("(not read: it is {}, not a regular file)", file.kind)
                            : file.status == config::RegularFile::Status::TooLarge
                                ? fmt::format("(not read: {} bytes, more than {} MiB)", file.size,
                                              kMaxErrorFileBytes >> 20)
                                : fmt::format("(not read: {})", std::strerror(file.error));
  }
  return cause;
}

diagnose::StallMonitor::Options Supervisor::Impl::monitor_options() const {
  diagnose::StallMonitor::Options o;
  o.run_id = plan.run_id;
  o.stall_timeout = plan.stall_timeout;
  o.stop_on_stall = plan.stop_on_stall;
  o.python_stacks = plan.python_stacks;
  o.python_ranks = plan.python_ranks;
  o.registry_dir = diagnose::registry_dir(current_environment(), ::getuid());
  o.run_cgroup_procs = worker_placement().cgroup_procs;
  o.guardian_pid = guardian.pid();
  o.before_temp_dir = [this](const std::string& folder, const std::string& name_prefix) {
    guardian.remove_named_folders_if_killed(folder, name_prefix);
  };
  return o;
}

diagnose::StallMonitor::Output Supervisor::Impl::monitor_output() {
  return {[](std::string_view text) { console_say(text); },
          [this](std::string_view line) { files.log(line); }};
}

}  // namespace xlaunch::launcher
