// The validated, immutable description of one launch on this machine.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/accelerate_env.hpp"
#include "config/log_specs.hpp"
#include "config/settings.hpp"

namespace xlaunch::launcher {

struct LaunchPlan {
  std::vector<std::string> argv;  // what every worker runs
  bool python_program = false;    // a .py file or -m module, run as [python, -u, ...]
  int local_world_size = 1;       // workers on this machine
  int world_size = 1;             // workers in the job
  int num_machines = 1;
  int machine_rank = 0;
  int rank_offset = 0;                    // RANK of this machine's local rank 0
  std::string master_addr = "127.0.0.1";  // what workers connect to
  std::string bind_host = "127.0.0.1";    // where the store listens
  std::uint16_t master_port = 0;          // 0: bind a free port
  std::vector<std::string> gpus;          // workers' CUDA_VISIBLE_DEVICES; empty: CPU job
  config::DistributedType distributed_type = config::DistributedType::No;
  config::MixedPrecision mixed_precision = config::MixedPrecision::No;
  std::string run_id;
  std::optional<std::string> log_dir;  // parent of the per-run folder
  int max_restarts = 0;
  int first_attempt = 0;  // an elastic job's machine that joins late starts at its round
  std::chrono::milliseconds term_timeout{10'000};
  std::optional<std::set<int>> console_ranks;           // local ranks shown; nullopt: all
  std::vector<config::ConsoleStreams> console_streams;  // per local rank
  config::AccelerateLaunch accelerate;                  // what accelerate's environment depends on
  std::string role = "default";                         // torchrun's --role: ROLE_NAME
  bool virtual_local_rank = false;  // torchrun's: LOCAL_RANK=0, each worker sees its own GPU
  // Stop signals ignored when xlaunch started (nohup, a background job of a script): they
  // stay ignored, as the one who started xlaunch asked.
  std::vector<int> ignored_stop_signals;
  // Signals --signals_to_handle names beyond the stop signals (SIGUSR1...): forwarded to
  // every worker; the job goes on.
  std::vector<int> forwarded_signals;
  // Diagnosis (docs/diagnose.md).
  std::chrono::milliseconds stall_timeout{300'000};  // 0: no stall detection
  bool stop_on_stall = false;
  bool python_stacks = true;
  bool python_ranks = true;  // false: a native program, no Python stack set-up (job/python_ranks)
  // Modules a template process imports once, forking each Python rank from it (docs/launch.md).
  std::vector<std::string> preload;
};

/// Where each setting came from, by config key (config::sources): "the command line",
/// "XLAUNCH_X", "FILE:LINE:COL".
using Sources = std::map<std::string, std::string>;

/// Builds the plan from the merged settings, the worker argv and the GPUs the launcher
/// sees. Applies built-in defaults (one worker per selected GPU, else 1) and throws
/// UsageError (exit 2) for every inconsistency, naming the flag and what to do, and where
/// the value came from when `sources` knows.
LaunchPlan make_plan(const config::Settings& settings, std::vector<std::string> argv,
                     const std::vector<std::string>& visible_gpus, std::string run_id,
                     const Sources& sources = {});

/// What to tell the user when this machine runs more GPU workers than it has GPUs (torchrun
/// and accelerate run them; so does xlaunch): which local ranks have no GPU of their own.
/// nullopt when every worker has one, or for a CPU job.
std::optional<std::string> shared_gpus_warning(const LaunchPlan& plan);

/// Some stream of some worker goes to its log file only (--redirects, not in --tee): without
/// --log_dir the run then needs log files all the same.
bool output_off_console(const LaunchPlan& plan);

/// A fresh run id: UTC date-time plus random hex, sortable in a log folder.
std::string make_run_id(std::chrono::system_clock::time_point now, std::uint32_t random);

}  // namespace xlaunch::launcher
