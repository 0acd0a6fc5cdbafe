#include "job/supervise.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster/membership.hpp"
#include "job/join.hpp"
#include "launcher/console.hpp"
#include "launcher/gpu_watch.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/supervisor.hpp"
#include "launcher/worker_env.hpp"

namespace xlaunch::job {

using namespace launcher;
using namespace gpu;
using namespace cluster;

namespace {

std::string describe_workers(const LaunchPlan& plan) {
  std::string where = plan.gpus.empty() ? "CPU" : fmt::format("GPUs {}", fmt::join(plan.gpus, ","));
  return fmt::format("{} worker{} ({}, {})", plan.local_world_size,
                     plan.local_world_size == 1 ? "" : "s", where,
                     config::to_string(plan.distributed_type));
}

// Stops the agent's monitor before the supervisor it posts to is destroyed.
struct MonitorStopper {
  JoinBackend* agent = nullptr;
  ~MonitorStopper() {
    if (agent) agent->stop_monitor();
  }
};

// Every machine's failures and verdicts go through the join: each attempt ends the same way
// on all of them.
void add_join_hooks(Job& job, Supervisor::AttemptHooks& hooks,
                    std::optional<FailureRecord>& job_failure) {
  hooks.on_failure = [&job](int attempt, const FailureRecord& local) {
    job.agent->report_failure(attempt, local);
  };
  hooks.after_attempt = [&job, &job_failure](int attempt,
                                             const std::optional<FailureRecord>& local) {
    job_failure = job.agent->finish_round(attempt, local);
    if (job_failure && is_membership_change(*job_failure)) {
      say("xlaunch: the job's machines changed: {}\n", job_failure->describe());
    } else if (job_failure) {
      say("xlaunch: job failed: {}\n", job_failure->describe());
    }
    return job_failure;
  };
}

}  // namespace

void announce_run(Job& job, RunFiles& files) {
  const LaunchPlan& plan = job.plan;
  files.log(fmt::format("orphan containment: {}", job.guardian->describe()));
  for (int signal : plan.ignored_stop_signals) {
    files.log(
        fmt::format("{} was ignored when xlaunch started (nohup, or a background job of "
                    "a script): xlaunch ignores it too",
                    signal_name(signal)));
  }
  become_child_subreaper();
  // A temporary run folder is removed by the guardian should the launcher be killed; a
  // --log_dir one holds the logs the user asked for and stays (docs/diagnose.md).
  if (!files.keeps_output()) {
    job.guardian->remove_if_killed(files.run_dir(), GroupGuardian::Leftover::run_folder);
  }
  files.log(fmt::format("run {} on {}: {}, store {}:{}, argv: {}", plan.run_id, job.host,
                        describe_workers(plan), plan.master_addr, plan.master_port,
                        fmt::join(plan.argv, " ")));
  say("xlaunch: run {}: {}, store {}:{}{}{}\n", plan.run_id, describe_workers(plan),
      plan.master_addr, plan.master_port,
      job.request.config_file ? fmt::format(", config {}", *job.request.config_file) : "",
      files.keeps_output() ? fmt::format(", logs in {}", files.run_dir()) : "");
  if (files.logs_in_temp()) {
    const std::string note = fmt::format(
        "--redirects keeps output off the console and there is no --log_dir: the workers' "
        "logs go to {}, which stays after the run",
        files.run_dir());
    say("xlaunch: note: {}\n", note);
    files.log(note);
  }
  // What runs, interpreter resolved: the first thing to check when a worker misbehaves.
  say("xlaunch: command: {}\n", fmt::join(plan.argv, " "));
  if (omp_threads_defaulted(job.parent_env, plan) &&
      !plan.accelerate.args.contains("num_cpu_threads_per_process")) {
    say("xlaunch: setting OMP_NUM_THREADS=1 for each worker (set it yourself to choose)\n");
  }
}

Outcome supervise(Job& job, RunFiles& files, std::optional<StopSignalsHeld>& held) {
  Outcome outcome;
  std::optional<Supervisor> supervising;
  Supervisor& supervisor =
      supervising.emplace(job.plan, job.parent_env, files, job.host, *job.guardian);
  held.reset();
  Supervisor::AttemptHooks hooks;
  hooks.before_attempt = [&job](int attempt) { begin_attempt(job, attempt); };
  if (job.store) hooks.store_clients = [&job] { return job.store->clients(); };
  MonitorStopper stopper;
  if (job.agent) {
    add_join_hooks(job, hooks, outcome.job_failure);
    {
      // Its thread keeps stop signals blocked, as the store's does: they are the main
      // thread's alone, which the supervisor relies on when it hands them to their default.
      StopSignalsHeld for_the_monitor;
      job.agent->start_monitor([&supervisor](int round, const FailureRecord& failure) {
        supervisor.request_stop(round, failure.describe());
      });
    }
    stopper.agent = job.agent.get();
  }
  // GPU use: sampled while the job runs, summed up at its end.
  WorkerPids worker_pids;
  hooks.on_worker_started = [&](int, int rank, long pid) { worker_pids.add(pid, rank); };
  std::unique_ptr<GpuWatch> gpu_watch =
      GpuWatch::start(job.plan, job.nvml, std::move(job.nvml_session), files, worker_pids);
  try {
    outcome.summary = supervisor.run(hooks);
  } catch (const AgentError& e) {
    throw LaunchError(e.what(), e.exit_code());
  }
  // The exit code is decided: a signal from now on must not turn it into 128+S. Held here,
  // it is discarded once ignored (the supervisor's handlers are gone by then; the store's
  // and the monitor's threads, which could take it, are joined first).
  hold_stop_signals();
  if (job.agent) job.agent->stop_monitor();
  if (job.agent) job.agent->close(outcome.summary.exit_code);
  if (job.store) job.store->stop();
  supervising.reset();
  ignore_stop_signals();
  if (gpu_watch) gpu_watch->finish(files);
  return outcome;
}

}  // namespace xlaunch::job
