#include "job/plan_step.hpp"

#include <fmt/format.h>

#include "config/launch_rules.hpp"
#include "config/usage_error.hpp"
#include "gpu/devices.hpp"
#include "job/python_ranks.hpp"
#include "launcher/capacity.hpp"
#include "launcher/console.hpp"
#include "launcher/random_bits.hpp"
#include "launcher/report.hpp"

namespace xlaunch::job {

using namespace launcher;
using namespace gpu;

namespace {

// The cluster manager's variables fill in what the request leaves unset.
void read_cluster(Job& job) {
  job.cluster = cluster::detect_cluster(job.parent_env);
  for (const std::string& note : job.cluster.notes) {
    say("xlaunch: warning: {} environment: {}\n", job.cluster.scheduler, note);
  }
  job.settings = cluster::apply_cluster(job.request.settings, job.cluster);
}

// How the machines meet: machine ranks by arrival where nobody assigned them.
void plan_join(Job& job) {
  LaunchPlan& plan = job.plan;
  job.join = config::join_settings(job.settings);
  // Elastic jobs: the launcher given --machine_rank 0 (or no --main_process_ip) hosts the
  // store; the others take machine ranks by join order, round by round.
  if (job.join.elastic && !job.join.hosts_elastic_store) plan.machine_rank = -1;
  if (job.join.elastic) plan.num_machines = job.join.max_machines;  // until the first round says
  // etcd (--rdzv_backend etcd): the launchers meet in etcd at --main_process_ip:port, ranks
  // by arrival unless given; every launcher binds a store, rank 0's serves the workers.
  job.via_etcd = plan.num_machines > 1 && job.join.etcd;
  if (job.via_etcd) {
    job.etcd_endpoint = config::etcd_endpoint(job.settings);
    if (!job.settings.machine_rank) plan.machine_rank = -1;
  }
}

// Store address checks and defaults that only matter with several machines.
void check_machines(LaunchPlan& plan, const config::Settings& s) {
  if (plan.num_machines == 1) return;
  // The count may be the cluster manager's, unknown when the endpoint was first checked.
  config::check_endpoint_port(s, plan.num_machines, "--rdzv_endpoint");
  if (plan.master_port == 0) plan.master_port = 29500;  // the others must know it; torchrun's
  if (plan.machine_rank > 0 && (!s.main_process_ip || s.main_process_ip->empty())) {
    throw UsageError(fmt::format("machine {} of a {}-machine job needs machine 0's address",
                                 plan.machine_rank, plan.num_machines),
                     "give --main_process_ip (--master_addr) with machine 0's IP or host name");
  }
}

}  // namespace

void plan_job(Job& job) {
  read_cluster(job);
  {
    // nvmlInit starts a thread, which takes this one's signal mask: a stop signal must reach
    // the supervisor's handlers, not end xlaunch there once they are gone.
    StopSignalsHeld held;
    job.nvml_session = NvmlSession::open();
  }
  if (job.nvml_session) {
    job.nvml_session->keep_until_exit();
    job.nvml = job.nvml_session->report();
  }
  const std::optional<std::string> cuda_visible = lookup(job.parent_env, "CUDA_VISIBLE_DEVICES");
  if (auto warning = cuda_visible_devices_warning(cuda_visible)) {
    say("xlaunch: warning: {}\n", *warning);
  }
  const std::vector<std::string> visible = visible_gpus(cuda_visible, job.nvml);
  std::vector<std::string> argv = resolve_worker_argv(
      job.request.program, lookup(job.parent_env, "PATH").value_or("/usr/bin:/bin"),
      host_exec_probe());
  job.plan = make_plan(job.settings, std::move(argv), visible,
                       make_run_id(Clock::now(), static_cast<std::uint32_t>(random_bits())),
                       job.request.sources);
  if (auto warning = shared_gpus_warning(job.plan)) say("xlaunch: warning: {}\n", *warning);
  // --run_path's interpreter runs a Python file too, whatever its name (--preload applies).
  job.plan.python_program = runs_under_python(job.request.program) || job.request.program.run_path;
  job.plan.python_ranks = may_run_python(job.request.program, job.settings.python_stacks,
                                         job.plan.argv.front(), read_head(job.plan.argv.front()));
  job.plan.ignored_stop_signals = ignored_stop_signals();  // before any handler is installed
  plan_join(job);
  check_machines(job.plan, job.settings);
  check_capacity(job.plan, job.settings, read_capacity_limits());  // before anything is started
}

// bf16 needs compute capability 8.0 (Ampere); older GPUs (T4, V100) emulate it slowly or fail.
void warn_if_bf16_unsupported(const Job& job) {
  const LaunchPlan& plan = job.plan;
  if (plan.mixed_precision != config::MixedPrecision::Bf16 || !job.nvml) return;
  for (const GpuInfo& gpu : job.nvml->gpus) {
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

}  // namespace xlaunch::job
