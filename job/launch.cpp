#include "job/launch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <random>

#include "cluster/detect.hpp"
#include "cluster/etcd_backend.hpp"
#include "cluster/membership.hpp"
#include "cluster/store_backend.hpp"
#include "config/schema.hpp"
#include "config/usage_error.hpp"
#include "config/validate.hpp"
#include "gpu/devices.hpp"
#include "launcher/capacity.hpp"
#include "launcher/console.hpp"
#include "launcher/environment.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/gpu_watch.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/process.hpp"
#include "launcher/report.hpp"
#include "launcher/supervisor.hpp"
#include "launcher/worker_env.hpp"
#include "rendezvous/store_error.hpp"
#include "rendezvous/store_server.hpp"
#include "report/run_report.hpp"

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

rendezvous::ListeningSocket bind_store(const LaunchPlan& plan) {
  try {
    return rendezvous::ListeningSocket::bind(plan.bind_host, plan.master_port);
  } catch (const rendezvous::StoreError& e) {
    throw LaunchError(
        fmt::format("cannot host the store: {}", e.what()), exit_status::kFailure,
        plan.master_port ? "choose another --main_process_port, or 0 for a free one" : "");
  }
}

// bf16 needs compute capability 8.0 (Ampere); older GPUs (T4, V100) emulate it slowly or fail.
void warn_if_bf16_unsupported(const LaunchPlan& plan, const std::optional<NvmlReport>& nvml) {
  if (plan.mixed_precision != config::MixedPrecision::Bf16 || !nvml) return;
  for (const GpuInfo& gpu : nvml->gpus) {
    bool selected = false;
    for (const std::string& id : plan.gpus) {
      selected = selected || id == gpu.uuid || id == std::to_string(gpu.index);
    }
    if (selected && gpu.compute_major > 0 && gpu.compute_major < 8) {
      say("xlaunch: warning: --mixed_precision bf16 on GPU {} ({}, compute capability "
          "{}.{}): bf16 needs 8.0 or newer; consider fp16\n",
          gpu.index, gpu.name, gpu.compute_major, gpu.compute_minor);
    }
  }
}

#ifndef XLAUNCH_VERSION
#define XLAUNCH_VERSION "unknown"
#endif

// Store address checks and defaults that only matter with several machines.
void check_machines(LaunchPlan& plan, const config::Settings& s) {
  if (plan.num_machines == 1) return;
  if (plan.master_port == 0) plan.master_port = 29500;  // the others must know it; torchrun's
  if (plan.machine_rank > 0 && (!s.main_process_ip || s.main_process_ip->empty())) {
    throw UsageError(fmt::format("machine {} of a {}-machine job needs machine 0's address",
                                 plan.machine_rank, plan.num_machines),
                     "give --main_process_ip (--master_addr) with machine 0's IP or host name");
  }
}

double seconds_setting(const std::optional<double>& value, const char* flag, double fallback) {
  double v = value.value_or(fallback);
  if (!(v > 0) || !std::isfinite(v)) {
    throw UsageError(fmt::format("{} must be a number of seconds > 0 (got {})", flag, v));
  }
  return v;
}

AgentOptions agent_options(const LaunchPlan& plan, const config::Settings& s,
                           const std::string& host) {
  AgentOptions o;
  // Every machine must use the same keys: the random default run id differs per machine.
  o.run_id = s.rdzv_id.value_or("default");
  o.job_run_id = plan.run_id;
  o.num_machines = plan.num_machines;
  o.machine_rank = plan.machine_rank;
  if (s.min_machines && s.max_machines && *s.min_machines < *s.max_machines) {
    o.min_machines = *s.min_machines;
    o.max_machines = *s.max_machines;
  }
  o.max_restarts = plan.max_restarts;
  o.store_host = plan.machine_rank == 0 ? "127.0.0.1" : plan.master_addr;
  if (plan.machine_rank == 0 && !plan.bind_host.empty() && plan.bind_host != "::" &&
      plan.bind_host != "0.0.0.0") {
    o.store_host = plan.bind_host;
  }
  o.store_port = plan.master_port;
  o.host = host;
  o.pid = static_cast<long>(::getpid());
  o.local_processes = plan.local_world_size;
  o.version = XLAUNCH_VERSION;
  if (s.num_processes && !s.nproc_per_node) o.total_processes = s.num_processes;
  auto ms = [](double sec) {
    return std::chrono::milliseconds(static_cast<long long>(sec * 1000));
  };
  const double rdzv = seconds_setting(s.rdzv_timeout, "--rdzv_timeout", 900);
  const double heartbeat = seconds_setting(s.heartbeat_timeout, "--heartbeat_timeout", 30);
  o.rdzv_timeout = ms(rdzv);
  o.heartbeat_timeout = ms(heartbeat);
  // torchrun's c10d default; --rdzv_conf last_call_timeout=S sets it.
  o.last_call_timeout = ms(s.rdzv_last_call_timeout.value_or(30));
  o.settings = agreed_settings({
      {"num_machines", std::to_string(plan.num_machines)},
      {"num_processes",
       s.num_processes && !s.nproc_per_node ? std::to_string(*s.num_processes) : "-"},
      {"max_restarts", std::to_string(plan.max_restarts)},
      {"distributed_type", std::string(config::to_string(plan.distributed_type))},
      {"mixed_precision", std::string(config::to_string(plan.mixed_precision))},
      {"heartbeat_timeout", fmt::format("{:g}", heartbeat)},
  });
  if (o.elastic()) {
    o.settings +=
        agreed_settings({{"nnodes", fmt::format("{}:{}", o.min_machines, o.max_machines)}});
  }
  return o;
}

// Shows what the console still has queued, waiting a little at most: a console that stopped
// reading must not keep a finished job from exiting. What it never showed is logged.
void finish_console(RunFiles& files) {
  console_drain(std::chrono::seconds(2));
  const ConsoleStats stats = console_stats();
  if (stats.dropped_lines > 0) {
    files.log(
        fmt::format("console: {} lines not shown because the console did not keep up "
                    "(every line is in the rank logs)",
                    stats.dropped_lines));
  }
  if (stats.out_closed || stats.err_closed) {
    files.log(fmt::format("console: {} closed during the run; {} lines not shown",
                          stats.out_closed && stats.err_closed ? "stdout and stderr"
                          : stats.out_closed                   ? "stdout"
                                                               : "stderr",
                          stats.lost_lines));
  }
}

// Stops the agent's monitor before the supervisor it posts to is destroyed.
struct MonitorStopper {
  JoinBackend* agent = nullptr;
  ~MonitorStopper() {
    if (agent) agent->stop_monitor();
  }
};

}  // namespace

int launch(const LaunchRequest& request) {
  // A closed console must not kill the launcher mid-job; write errors are handled instead.
  ::signal(SIGPIPE, SIG_IGN);
  const Environment parent_env = current_environment();
  const ClusterDetection cluster = detect_cluster(parent_env);
  for (const std::string& note : cluster.notes) {
    say("xlaunch: warning: {} environment: {}\n", cluster.scheduler, note);
  }
  const config::Settings settings = apply_cluster(request.settings, cluster);

  std::optional<NvmlReport> nvml = query_nvml();
  if (auto warning = cuda_visible_devices_warning(lookup(parent_env, "CUDA_VISIBLE_DEVICES"))) {
    say("xlaunch: warning: {}\n", *warning);
  }
  const std::vector<std::string> visible =
      visible_gpus(lookup(parent_env, "CUDA_VISIBLE_DEVICES"), nvml);
  std::vector<std::string> argv = resolve_worker_argv(
      request.program, lookup(parent_env, "PATH").value_or("/usr/bin:/bin"), host_exec_probe());
  std::random_device entropy;
  LaunchPlan plan =
      make_plan(settings, std::move(argv), visible, make_run_id(Clock::now(), entropy()));
  plan.ignored_stop_signals = ignored_stop_signals();  // before any handler is installed
  // Elastic jobs: the launcher given --machine_rank 0 (or no --main_process_ip) hosts the
  // store; the others take machine ranks by join order, round by round.
  const bool elastic = settings.min_machines && settings.max_machines &&
                       *settings.min_machines < *settings.max_machines;
  if (elastic &&
      !(settings.machine_rank ? *settings.machine_rank == 0 : !settings.main_process_ip)) {
    plan.machine_rank = -1;
  }
  if (elastic) plan.num_machines = *settings.max_machines;  // until the first round says
  // etcd (--rdzv_backend etcd): the launchers meet in etcd at --main_process_ip:port, ranks
  // by arrival unless given; every launcher binds a store, rank 0's serves the workers.
  const bool via_etcd =
      plan.num_machines > 1 && settings.rdzv_backend && settings.rdzv_backend->starts_with("etcd");
  std::string etcd_endpoint;
  if (via_etcd) {
    if (!settings.main_process_ip || settings.main_process_ip->empty()) {
      throw UsageError("--rdzv_backend etcd needs etcd's address",
                       "give --main_process_ip (--master_addr) HOST and --main_process_port "
                       "PORT (default 2379) of an etcd member");
    }
    const int port = settings.main_process_port.value_or(0);
    const std::string& ip = *settings.main_process_ip;
    const bool v6 = ip.find(':') != std::string::npos;  // an IPv6 address needs brackets
    etcd_endpoint =
        fmt::format("{}{}{}:{}", v6 ? "[" : "", ip, v6 ? "]" : "", port == 0 ? 2379 : port);
    if (!settings.machine_rank) plan.machine_rank = -1;
  }
  check_machines(plan, settings);
  check_capacity(plan, settings, read_capacity_limits());  // before anything is started

  // Forked before the store's thread exists. The guardian makes the run's cgroup and
  // removes it whenever the launcher ends; stop signals wait until it is set up.
  GroupGuardian guardian = [&] {
    StopSignalsHeld held;
    return GroupGuardian::start(
        parse_containment_request(lookup(parent_env, "XLAUNCH_CONTAINMENT")));
  }();
  warn_if_bf16_unsupported(plan, nvml);
  rendezvous::raise_open_file_limit();
  // Only machine 0 hosts the store; the others join it.
  std::optional<rendezvous::StoreServer> store;
  std::optional<rendezvous::ListeningSocket> etcd_store_socket;
  if (via_etcd) {
    LaunchPlan any_port = plan;
    any_port.master_port = 0;
    etcd_store_socket.emplace(bind_store(any_port));
  } else if (plan.machine_rank == 0) {
    // One machine: listen where the workers are told to connect (under srun -N1, MASTER_ADDR
    // is the node's name, which resolves to the node's own address, not 127.0.0.1).
    if (plan.num_machines == 1 && !settings.bind_addr) plan.bind_host = plan.master_addr;
    rendezvous::ListeningSocket socket = bind_store(plan);
    plan.master_port = socket.port();
    store.emplace(std::move(socket));
    // Its thread inherits a mask that keeps stop signals for the main thread, so none can
    // end the launcher by its default action before the supervisor's handlers exist.
    StopSignalsHeld held;
    store->start();
  }
  const std::string host = settings.local_addr.value_or(host_name());  // torchrun's --local_addr

  std::unique_ptr<JoinBackend> agent;
  EtcdBackend* etcd_agent = nullptr;  // agent, when the join is through etcd
  // Applies a round's membership: ranks, sizes and the job's run id on this machine.
  auto adopt = [&](const Membership& m) {
    plan.world_size = m.layout.world_size();
    plan.machine_rank = m.machine_rank;
    plan.num_machines = m.num_machines();
    plan.rank_offset = m.layout.rank_offset(m.machine_rank);
    if (!m.layout.run_id.empty()) {
      if (!config::is_valid_run_id(m.layout.run_id)) {
        throw LaunchError(fmt::format("machine 0 announced an invalid run id '{}'",
                                      config::printable(m.layout.run_id)),
                          exit_status::kFailure);
      }
      plan.run_id = m.layout.run_id;
    }
  };
  // The launchers' own records, which an elastic job keeps from round to round.
  std::string agent_keys;
  if (plan.num_machines > 1) {
    AgentOptions options = agent_options(plan, settings, host);
    agent_keys = fmt::format("xlaunch/{}/", options.run_id);
    if (!cluster.scheduler.empty()) {
      say("xlaunch: {} detected: machine {} of {}, machine 0 at {}\n", cluster.scheduler,
          plan.machine_rank, plan.num_machines, plan.master_addr);
    }
    if (via_etcd && options.elastic()) {
      say("xlaunch: joining the elastic job ({}..{} machines) through etcd at {} (waiting up to "
          "{:g}s)\n",
          options.min_machines, options.max_machines, etcd_endpoint,
          options.rdzv_timeout.count() / 1000.0);
    } else if (via_etcd) {
      say("xlaunch: joining the {}-machine job through etcd at {} (waiting up to {:g}s)\n",
          plan.num_machines, etcd_endpoint, options.rdzv_timeout.count() / 1000.0);
    } else if (options.elastic()) {
      say("xlaunch: {}: joining the elastic job ({}..{} machines) at {}:{} (waiting up to "
          "{:g}s)\n",
          plan.machine_rank == 0 ? "machine 0" : "this machine", options.min_machines,
          options.max_machines, options.store_host, options.store_port,
          options.rdzv_timeout.count() / 1000.0);
    } else {
      say("xlaunch: machine {} of {}: joining the job at {}:{} (waiting up to {:g}s "
          "for every machine)\n",
          plan.machine_rank, plan.num_machines, options.store_host, options.store_port,
          options.rdzv_timeout.count() / 1000.0);
    }
    const bool is_elastic = options.elastic();
    try {
      if (via_etcd) {
        auto backend = std::make_unique<EtcdBackend>(std::move(options), etcd_endpoint,
                                                     etcd_store_socket->port());
        etcd_agent = backend.get();
        agent = std::move(backend);
      } else {
        agent = std::make_unique<StoreBackend>(std::move(options));
      }
      Membership m = agent->join();
      adopt(m);
      plan.first_attempt = m.round;  // a late machine starts at the job's round
    } catch (const AgentError& e) {
      throw LaunchError(e.what(), e.exit_code());
    }
    if (etcd_agent) {
      plan.master_addr = etcd_agent->hosts().at(0);
      plan.master_port = static_cast<std::uint16_t>(etcd_agent->store_port());
      if (plan.machine_rank == 0) {
        store.emplace(std::move(*etcd_store_socket));
        StopSignalsHeld held;  // as for machine 0's store above
        store->start();
      }
      if (!is_elastic) etcd_store_socket.reset();  // elastic: a later round's rank 0 needs it
      say("xlaunch: machine {} of {} (through etcd), the workers' store at {}:{}\n",
          plan.machine_rank, plan.num_machines, plan.master_addr, plan.master_port);
    }
    if (is_elastic) {
      say("xlaunch: round {}: machine {} of {}, world size {}\n", plan.first_attempt,
          plan.machine_rank, plan.num_machines, plan.world_size);
    }
  }

  // From the run folder on, a stop signal waits for the supervisor's handlers, so that
  // the run ends with its summary.json; until then it ends xlaunch as usual.
  std::optional<StopSignalsHeld> held(std::in_place);
  RunFiles files(plan.run_id, plan.log_dir);
  files.log(fmt::format("orphan containment: {}", guardian.describe()));
  for (int signal : plan.ignored_stop_signals) {
    files.log(
        fmt::format("{} was ignored when xlaunch started (nohup, or a background job of "
                    "a script): xlaunch ignores it too",
                    signal_name(signal)));
  }
  become_child_subreaper();
  files.log(fmt::format("run {} on {}: {}, store {}:{}, argv: {}", plan.run_id, host,
                        describe_workers(plan), plan.master_addr, plan.master_port,
                        fmt::join(plan.argv, " ")));
  say("xlaunch: run {}: {}, store {}:{}{}{}\n", plan.run_id, describe_workers(plan),
      plan.master_addr, plan.master_port,
      request.config_file ? fmt::format(", config {}", *request.config_file) : "",
      files.keeps_output() ? fmt::format(", logs in {}", files.run_dir()) : "");
  // What runs, interpreter resolved: the first thing to check when a worker misbehaves.
  say("xlaunch: command: {}\n", fmt::join(plan.argv, " "));
  if (plan.local_world_size > 1 && omp_threads_defaulted(parent_env) &&
      !plan.accelerate.args.contains("num_cpu_threads_per_process")) {
    say("xlaunch: setting OMP_NUM_THREADS=1 for each worker (set it yourself to choose)\n");
  }

  std::optional<Supervisor> supervising;
  Supervisor& supervisor = supervising.emplace(plan, parent_env, files, host, guardian);
  held.reset();
  Supervisor::AttemptHooks hooks;
  hooks.before_attempt = [&](int attempt) {
    if (attempt == plan.first_attempt) return;
    // Each attempt starts from an empty store (on every machine together).
    if (!agent) {
      store->clear();
      return;
    }
    const int machines_before = plan.num_machines;
    adopt(agent->begin_round(attempt, [&] {
      if (store) store->clear(elastic ? agent_keys : std::string());
    }));
    if (etcd_agent && elastic) {
      // The round's rank 0 hosts the workers' store: a new one when rank 0 was lost.
      plan.master_addr = etcd_agent->hosts().at(0);
      plan.master_port = static_cast<std::uint16_t>(etcd_agent->store_port());
      if (plan.machine_rank == 0 && !store && etcd_store_socket) {
        store.emplace(std::move(*etcd_store_socket));
        StopSignalsHeld held_now;
        store->start();
        etcd_store_socket.reset();
      }
    }
    if (plan.num_machines != machines_before || elastic) {
      say("xlaunch: round {}: machine {} of {}, world size {}\n", attempt, plan.machine_rank,
          plan.num_machines, plan.world_size);
    }
  };
  if (store) hooks.store_clients = [&] { return store->clients(); };
  std::optional<FailureRecord> job_failure;
  MonitorStopper stopper;
  if (agent) {
    hooks.on_failure = [&](int attempt, const FailureRecord& local) {
      agent->report_failure(attempt, local);
    };
    hooks.after_attempt = [&](int attempt, const std::optional<FailureRecord>& local) {
      job_failure = agent->finish_round(attempt, local);
      if (job_failure && is_membership_change(*job_failure)) {
        say("xlaunch: the job's machines changed: {}\n", job_failure->describe());
      } else if (job_failure) {
        say("xlaunch: job failed: {}\n", job_failure->describe());
      }
      return job_failure;
    };
    agent->start_monitor([&](int round, const FailureRecord& failure) {
      supervisor.request_stop(round, failure.describe());
    });
    stopper.agent = agent.get();
  }
  // GPU use: sampled while the job runs, summed up at its end.
  WorkerPids worker_pids;
  hooks.on_worker_started = [&](int, int rank, long pid) { worker_pids.add(pid, rank); };
  std::unique_ptr<GpuWatch> gpu_watch = GpuWatch::start(plan, nvml, files, worker_pids);
  RunSummary summary;
  try {
    summary = supervisor.run(hooks);
  } catch (const AgentError& e) {
    throw LaunchError(e.what(), e.exit_code());
  }
  // The exit code is decided: a signal from now on must not turn it into 128+S. Held here,
  // it is discarded once ignored (the supervisor's handlers are gone by then; the store's
  // and the monitor's threads, which could take it, are joined first).
  hold_stop_signals();
  if (agent) agent->stop_monitor();
  if (agent) agent->close(summary.exit_code);
  if (store) store->stop();
  supervising.reset();
  ignore_stop_signals();
  if (gpu_watch) gpu_watch->finish(files);

  if (summary.exit_code != exit_status::kSuccess) files.keep();
  try {
    files.write_summary(summary_json(summary));
  } catch (const std::exception& e) {
    say("xlaunch: warning: could not write summary.json: {}\n", e.what());
  }
  files.log(fmt::format("exit code {}", summary.exit_code));
  if (files.keeps_output()) {  // the run's picture, beside its logs
    try {
      say("xlaunch: report: {}\n", report::write_run_report(files.run_dir()));
    } catch (const std::exception& e) {
      say("xlaunch: warning: could not write report.html: {}\n", e.what());
    }
  }
  if (summary.exit_code == exit_status::kSuccess) {
    if (plan.local_world_size == 1) {
      say("xlaunch: the worker finished successfully\n");
    } else {
      say("xlaunch: all {} workers finished successfully\n", plan.local_world_size);
    }
  } else if (job_failure) {
    say("xlaunch: exit code {}{}\n", summary.exit_code,
        files.keeps_output() ? fmt::format(" (logs: {})", files.run_dir()) : "");
  } else if (summary.root_cause) {
    say("xlaunch: job failed: rank {} {}; exit code {}{}\n", summary.root_cause->worker.rank,
        describe_end(summary.root_cause->worker), summary.exit_code,
        files.keeps_output() ? fmt::format(" (logs: {})", files.run_dir()) : "");
  }
  finish_console(files);
  return summary.exit_code;
}

}  // namespace xlaunch::job
