#include "cli/launch_flags.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include "cli/flag_groups.hpp"
#include "config/env_settings.hpp"
#include "config/flag_settings.hpp"
#include "config/launch_rules.hpp"
#include "config/resolve.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/torchrun_values.hpp"
#include "config/usage_error.hpp"
#include "config/validate.hpp"
#include "launcher/console.hpp"

namespace xlaunch::cli {
namespace {

// Each config key a launch flag sets: its flag names (accelerate's first, torchrun's
// aliases after), help with the default, and the --help group.
struct KeyFlag {
  const char* key;
  const char* names;
  const char* help;
  const char* group;
  const char* type;  // shown in --help: INT, FLOAT, ...
  bool is_switch = false;
};

constexpr const char* kLaunch = "Launch";
constexpr const char* kMachines = "Machines and store";
constexpr const char* kSupervision = "Supervision and logs";
constexpr const char* kTorchrunNoOp = "torchrun's flags without effect here";

const KeyFlag kKeyFlags[] = {
    {"num_processes", "--num_processes",
     "Workers in the whole job (default: one per selected GPU, else 1)", kLaunch, "INT"},
    {"nproc_per_node", "--nproc_per_node",
     "Workers per machine: a number, or auto (the GPUs, else the CPUs), gpu, cpu", kLaunch,
     "N|auto|gpu|cpu"},
    {"gpu_ids", "--gpu_ids",
     "GPUs to use, as indices into the GPUs this launcher sees (e.g. 1,3) or 'all' (default: all)",
     kLaunch, "IDS"},
    {"use_cpu", "--use_cpu,--cpu",
     "Run CPU workers even when GPUs are present (--use_cpu=false to turn a config's off)", kLaunch,
     "", true},
    {"distributed_type", "--distributed_type",
     "NO, MULTI_GPU (DDP), DP or MULTI_CPU (default: MULTI_GPU for several GPU workers, "
     "MULTI_CPU for several CPU workers, else NO)",
     kLaunch, "TYPE"},
    {"mixed_precision", "--mixed_precision",
     "no, fp16, bf16 or fp8, passed to workers as ACCELERATE_MIXED_PRECISION (default: no)",
     kLaunch, "MODE"},
    {"python", "--python",
     "Interpreter for .py programs and -m; XLAUNCH_PYTHON and the config key python set it "
     "too (default: the python3 of the environment xlaunch was installed in, else python3 on "
     "PATH)",
     kLaunch, "PATH"},
    {"num_machines", "--num_machines,--nnodes",
     "Machines in the job; MIN:MAX (e.g. 1:4) runs an elastic job with MIN to MAX machines "
     "(default: 1)",
     kMachines, "N|MIN:MAX"},
    {"machine_rank", "--machine_rank,--node_rank", "This machine's rank (default 0)", kMachines,
     "INT"},
    {"main_process_ip", "--main_process_ip,--master_addr",
     "Address of machine 0's store (default 127.0.0.1)", kMachines, "ADDR"},
    {"main_process_port", "--main_process_port,--master_port",
     "Port of the store; 0 takes a free one (default: 0; 29500 with several machines)", kMachines,
     "INT"},
    {"rdzv_backend", "--rdzv_backend",
     "static or c10d (xlaunch's store), etcd or etcd-v2 (an etcd cluster at --rdzv_endpoint) "
     "(default: static)",
     kMachines, "NAME"},
    {"rdzv_endpoint", "--rdzv_endpoint",
     "The store's host[:port] (port 29400 when not given); the launcher on that host hosts it, "
     "or joins it when another launcher there already does",
     kMachines, "HOST[:PORT]"},
    {"rdzv_id", "--rdzv_id,--run_id",
     "Run id (default: date-time and random hex; with several machines, machine 0's)", kMachines,
     "ID"},
    {"rdzv_conf", "--rdzv_conf",
     "torchrun's k=v,... : join_timeout, last_call_timeout, close_timeout, read_timeout, "
     "is_host, timeout",
     kMachines, "K=V,..."},
    {"rdzv_timeout", "--rdzv_timeout", "Seconds to wait for every machine (default 900)", kMachines,
     "FLOAT"},
    {"heartbeat_timeout", "--heartbeat_timeout",
     "Seconds without a heartbeat before a machine is declared lost (default 30)", kMachines,
     "FLOAT"},
    {"bind_addr", "--bind_addr",
     "Address the store listens on (default: loopback with one machine, all addresses with "
     "several)",
     kMachines, "ADDR"},
    {"local_addr", "--local_addr",
     "This machine's address as the other machines reach it (default: the host name)", kMachines,
     "ADDR"},
    {"role", "--role", "The workers' ROLE_NAME (default 'default')", kSupervision, "NAME"},
    {"max_restarts", "--max_restarts",
     "Restart every worker this many times after a failure (default 0)", kSupervision, "INT"},
    {"term_timeout", "--term_timeout,--shutdown_timeout",
     "Seconds between SIGTERM and SIGKILL when stopping workers (default 10)", kSupervision,
     "FLOAT"},
    {"log_dir", "--log_dir",
     "Folder for a per-run folder of per-rank logs, xlaunch.log and summary.json (default: "
     "none)",
     kSupervision, "DIR"},
    {"local_ranks_filter", "--local_ranks_filter",
     "Show only these local ranks on the console, e.g. 0 or 0,2; logs keep all (default: all)",
     kSupervision, "RANKS"},
    {"redirects", "-r,--redirects",
     "Streams kept off the console (log files only): 0 none, 1 stdout, 2 stderr, 3 both, or "
     "per local rank like 0:3,1:2 (default: 0)",
     kSupervision, "SPEC"},
    {"tee", "-t,--tee",
     "Streams shown on the console even when --redirects keeps them off it, as in torchrun: "
     "same values as --redirects (default: 0)",
     kSupervision, "SPEC"},
    {"signals_to_handle", "--signals_to_handle",
     "Signals that stop the job; xlaunch handles SIGTERM,SIGINT,SIGHUP,SIGQUIT (default: "
     "SIGTERM,SIGINT,SIGHUP,SIGQUIT)",
     kSupervision, "SIGNALS"},
    {"virtual_local_rank", "--virtual_local_rank",
     "Each worker sees only its own GPU (as cuda:0) and gets LOCAL_RANK=0", kLaunch, "", true},
    {"numa_binding", "--numa_binding",
     "node, socket, exclusive or core-complex: accepted, not applied (no NUMA binding)",
     kSupervision, "MODE"},
    {"debug", "--debug", "Workers get ACCELERATE_DEBUG_MODE=true (accelerate's debug checks)",
     kSupervision, "", true},
    {"stall_timeout", "--stall_timeout",
     "Report a stall after this many seconds without output, store traffic or CPU time; 0 turns "
     "it off (default: 300)",
     kSupervision, "FLOAT"},
    {"on_stall", "--on_stall",
     "After a stall report: continue, or stop every worker and exit 124 (default: continue)",
     kSupervision, "continue|stop"},
    {"python_stacks", "--python_stacks",
     "Python workers dump their stacks on request and on a crash; false turns it off "
     "(default: true)",
     kSupervision, "BOOL"},
    {"preload", "--preload",
     "Import these Python modules (comma-separated, e.g. torch) once in a template process and "
     "fork every Python rank from it, instead of each rank importing them",
     kLaunch, "MODULES"},
};

// torchrun's flags that change nothing under xlaunch, with why (also in docs/launch.md).
struct NoOpFlag {
  const char* name;
  const char* help;
  const char* type;
};
const NoOpFlag kNoOpFlags[] = {
    {"monitor_interval", "No effect: xlaunch's supervision is event-driven, not polled", "FLOAT"},
    {"start_method", "No effect: workers are always fresh processes (torchrun's spawn)",
     "spawn|fork|forkserver"},
    {"event_log_handler", "No effect: xlaunch logs its events to xlaunch.log", "NAME"},
    {"logs_specs", "Not applied: xlaunch cannot load torchrun.logs_specs plugins (warns)", "NAME"},
};

/// "--a_b,--c" -> "--a_b,--a-b,--c": torchrun's dashed spelling beside each underscored one.
std::string with_dashed_spellings(std::string_view names) {
  std::string out;
  std::size_t start = 0;
  while (start <= names.size()) {
    const std::size_t comma = std::min(names.find(',', start), names.size());
    const std::string name(names.substr(start, comma - start));
    if (!out.empty()) out += ',';
    out += name;
    if (name.starts_with("--") && name.find('_') != std::string::npos) {
      std::string dashed = name;
      std::replace(dashed.begin() + 2, dashed.end(), '_', '-');
      out += ',' + dashed;
    }
    start = comma + 1;
  }
  return out;
}

/// torchrun's check_env switches: PET_<NAME> as an integer, 0 off, anything else on.
bool pet_switch(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return false;
  const auto number = config::parse_integer(value);
  if (!number) {
    throw UsageError(
        fmt::format("environment variable {}: bad value '{}' (allowed: 0 or 1)", name, value),
        fmt::format("set {}=1 to turn it on, or unset it", name));
  }
  return *number != 0;
}

// Spellings only torchrun's command line has, of flags that choose where and how the job
// runs (accelerate names them otherwise, or has none). Not the logs' flags (--log_dir, -r,
// -t), which xlaunch's own command lines use as much.
constexpr std::string_view kTorchrunOnly[] = {
    "--standalone",  "--nnodes",      "--node_rank",   "--node-rank",     "--master_addr",
    "--master-addr", "--master_port", "--master-port", "--rdzv_endpoint", "--rdzv-endpoint",
    "--rdzv_id",     "--rdzv-id",     "--role",        "--start_method",  "--start-method",
    "--local_addr",  "--local-addr",  "--run_path",    "--run-path"};

bool spells_torchrun_only_flag(const CLI::App& cmd, std::span<const std::string_view> words) {
  const config::FindFlag find = flags_of(cmd);
  // Spelt out: "--stand" is --standalone.
  const std::vector<std::string> all =
      config::argparse_spelling(std::vector<std::string>(words.begin(), words.end()), find);
  const std::size_t launcher_words = config::launcher_word_count(all, find);
  return std::any_of(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(launcher_words),
                     [](const std::string& word) {
                       const std::string_view name =
                           std::string_view(word).substr(0, word.find('='));
                       return std::find(std::begin(kTorchrunOnly), std::end(kTorchrunOnly), name) !=
                              std::end(kTorchrunOnly);
                     });
}

// Whether `words` may name one of accelerate's flags: a word that looks like a flag and is none
// of `cmd`'s (launch's, declared already), or --help, which lists them all. Anywhere, even
// among the program's own words: declaring them needlessly costs only time.
bool may_name_accelerate_flags(const CLI::App& cmd, std::span<const std::string_view> words) {
  const std::vector<const CLI::Option*> options = every_option(cmd);
  auto known = [&](std::string_view name, bool is_long) {
    return std::any_of(options.begin(), options.end(), [&](const CLI::Option* option) {
      const std::vector<std::string>& names = is_long ? option->get_lnames() : option->get_snames();
      return std::find(names.begin(), names.end(), name) != names.end();
    });
  };
  for (std::string_view word : words) {
    if (word.size() < 2 || word[0] != '-' || word == "--") continue;
    if (word == "-h" || word == "--help") return true;
    const bool is_long = word.starts_with("--");
    std::string_view name = word.substr(is_long ? 2 : 1);
    name = name.substr(0, name.find('='));
    if (!known(name, is_long)) return true;
  }
  return false;
}

}  // namespace

void add_launch_flags(CLI::App& cmd, LaunchFlags& flags,
                      std::optional<std::span<const std::string_view>> words) {
  for (const KeyFlag& f : kKeyFlags) {
    std::string& target = flags.raw[f.key];
    const std::string names = with_dashed_spellings(f.names);
    // A switch bare is "true"; --flag=false also works, as the config's true/false does.
    CLI::App& group = flag_group(cmd, f.group);
    flags.options[f.key] = f.is_switch ? group.add_flag(names, target, f.help)
                                       : group.add_option(names, target, f.help)->type_name(f.type);
  }
  for (const NoOpFlag& f : kNoOpFlags) {
    flags.options[f.name] = flag_group(cmd, kTorchrunNoOp)
                                .add_option(with_dashed_spellings(std::string("--") + f.name),
                                            flags.no_op[f.name], f.help)
                                ->type_name(f.type);
  }
  flag_group(cmd, kLaunch)
      .add_flag(with_dashed_spellings("--multi_gpu"), flags.multi_gpu,
                "Same as --distributed_type MULTI_GPU");
  flag_group(cmd, kLaunch)
      .add_option(with_dashed_spellings("--config_file"), flags.config_file,
                  "YAML config to read (default: $XLAUNCH_CONFIG_FILE, else "
                  "~/.config/xlaunch/default_config.yaml)")
      ->type_name("FILE");
  flag_group(cmd, kLaunch)
      .add_flag("-m,--module", flags.module, "Run PROGRAM as a Python module (python -m)");
  flag_group(cmd, kLaunch)
      .add_flag(with_dashed_spellings("--no_python"), flags.no_python,
                "Run PROGRAM as is, without Python");
  flag_group(cmd, kLaunch)
      .add_flag(with_dashed_spellings("--run_path"), flags.run_path,
                "Run PROGRAM with Python whatever its name (torchrun's runpy.run_path)");
  flag_group(cmd, kLaunch)
      .add_flag(with_dashed_spellings("--dry_run"), flags.dry_run,
                "Print the resolved settings and the worker command, then exit; starts nothing");
  flag_group(cmd, kMachines)
      .add_flag("--standalone", flags.standalone,
                "One machine, store on a free loopback port (torchrun's flag)");

  if (!words || may_name_accelerate_flags(cmd, *words)) add_accelerate_flags(cmd, flags.accelerate);
  flags.torchrun_spelling = words && spells_torchrun_only_flag(cmd, *words);

  // PROGRAM and everything after it belong to the worker, unparsed.
  cmd.prefix_command();
}

void finish_launch_flags(CLI::App& cmd, LaunchFlags& flags) {
  std::vector<std::pair<std::string, std::string>> given;
  for (const KeyFlag& f : kKeyFlags) {
    // An empty value (--rdzv_id=$UNSET) is no value, as an empty PET_* variable is.
    if (flags.options.at(f.key)->count() > 0 && !flags.raw.at(f.key).empty()) {
      given.emplace_back(f.key, flags.raw.at(f.key));
    }
  }
  // The config schema parses and checks flags exactly as it does file and env values.
  config::Settings& s = flags.settings;
  s = config::settings_from_flags(given, &flags.notices);
  // (before PET_RUN_PATH is read: the variable is a launch's, not a test's)
  if (cmd.get_name() != "launch" && (flags.dry_run || flags.run_path)) {
    throw UsageError(
        fmt::format("{} belongs to 'xlaunch launch'", flags.dry_run ? "--dry_run" : "--run_path"),
        fmt::format("'xlaunch {}' runs its own program", cmd.get_name()));
  }
  // torchrun's switches also come from PET_STANDALONE, PET_MODULE, ... (below the flag).
  flags.standalone = flags.standalone || pet_switch("PET_STANDALONE");
  flags.module = flags.module || pet_switch("PET_MODULE");
  flags.no_python = flags.no_python || pet_switch("PET_NO_PYTHON");
  if (cmd.get_name() == "launch") flags.run_path = flags.run_path || pet_switch("PET_RUN_PATH");
  for (const NoOpFlag& f : kNoOpFlags) {
    // torchrun reads PET_<FLAG> below the flag and checks it as the flag; so does this.
    std::string flag = std::string("--") + f.name;
    std::string value;
    if (flags.options.at(f.name)->count() > 0) {
      value = flags.no_op.at(f.name);
    } else {
      const std::string variable = "PET_" + config::upper(f.name);
      const char* set = std::getenv(variable.c_str());
      if (set == nullptr || *set == '\0') continue;
      flag = "environment variable " + variable;
      value = set;
    }
    const std::string hint = flags.options.at(f.name)->count() > 0
                                 ? "it has no effect in xlaunch; drop it"
                                 : "it has no effect in xlaunch; fix or unset it";
    if (std::string_view(f.name) == "monitor_interval") {
      const auto seconds = config::parse_number(value);
      if (!seconds || !(*seconds > 0)) {
        throw UsageError(fmt::format("{}: bad value '{}' (allowed: seconds > 0)", flag,
                                     config::printable(value)),
                         hint);
      }
    } else if (std::string_view(f.name) == "start_method" && value != "spawn" && value != "fork" &&
               value != "forkserver") {
      throw UsageError(fmt::format("{}: bad value '{}' (allowed: spawn, fork, forkserver)", flag,
                                   config::printable(value)),
                       hint);
    }
  }
  if (flags.multi_gpu) {
    if (s.use_cpu == true) {
      throw UsageError("--multi_gpu and --cpu/--use_cpu contradict each other",
                       "drop --cpu to run one worker per GPU, or drop --multi_gpu for CPU "
                       "workers (--distributed_type MULTI_CPU)");
    }
    if (s.distributed_type && *s.distributed_type != config::DistributedType::MultiGpu) {
      throw UsageError(fmt::format("--multi_gpu and --distributed_type {} contradict each other",
                                   config::to_string(*s.distributed_type)),
                       "give one of them");
    }
    s.distributed_type = config::DistributedType::MultiGpu;
  }
  finish_accelerate_flags(cmd, flags.accelerate, s);
  if (flags.standalone) {
    if (s.num_machines && *s.num_machines != 1) {
      throw UsageError("--standalone runs on one machine, but --num_machines is " +
                       std::to_string(*s.num_machines));
    }
    s.num_machines = 1;
    s.main_process_port = 0;
  }
  if (flags.run_path && flags.module) {
    throw UsageError("--run_path and -m/--module cannot be used together",
                     "--run_path runs a script file; -m runs a module");
  }
}

config::Settings resolve_launch_settings(const LaunchFlags& flags,
                                         std::optional<std::string>* config_file_read,
                                         std::map<std::string, std::string>* sources) {
  // A closed console must not end the launcher while it prints a notice (the launch itself
  // ignores SIGPIPE from its start on; workers get the default back).
  ::signal(SIGPIPE, SIG_IGN);
  const config::Getenv getenv = config::process_environment();
  config::Resolved resolved = config::resolve(flags.settings, flags.config_file, getenv);
  if (config_file_read) *config_file_read = resolved.config_file;
  if (sources) *sources = config::sources(resolved);
  for (const std::string& notice : flags.notices) launcher::say("xlaunch: note: {}\n", notice);
  for (const std::string& notice : resolved.notices) {
    launcher::say("xlaunch: note: {}\n", notice);
  }
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    names.emplace_back(text.substr(0, text.find('=')));
  }
  for (const std::string& warning : config::unknown_xlaunch_variables(names)) {
    launcher::say("xlaunch: warning: {}\n", warning);
  }
  if (flags.standalone) {
    // torchrun: --standalone replaces any rendezvous settings with a local store.
    resolved.settings.rdzv_endpoint = std::nullopt;
    resolved.settings.num_machines = resolved.settings.min_machines =
        resolved.settings.max_machines = 1;
    resolved.settings.main_process_port = 0;
  }
  config::Settings& counts = resolved.settings;
  if (!counts.num_processes && !counts.nproc_per_node && !counts.nproc_per_node_device &&
      (flags.torchrun_spelling || flags.standalone || config::names_pet_variable(getenv))) {
    // torchrun's --nproc_per_node defaults to 1, where xlaunch's own default is one per GPU:
    // torchrun's command line keeps its meaning (a one-process script stays one process).
    counts.nproc_per_node = 1;
    if (sources) (*sources)["nproc_per_node"] = "torchrun's default for its command lines";
  }
  config::apply_launch_rules(resolved, config::is_local_host);
  const config::Settings& s = resolved.settings;
  if (s.numa_binding) {
    launcher::say(
        "xlaunch: warning: --numa_binding {}: xlaunch does not bind workers to NUMA "
        "nodes; workers run unbound\n",
        *s.numa_binding);
  }
  if (const auto it = flags.no_op.find("logs_specs");
      it != flags.no_op.end() && !it->second.empty()) {
    launcher::say(
        "xlaunch: warning: --logs_specs {}: xlaunch cannot load torchrun.logs_specs "
        "plugins; logs keep xlaunch's layout (docs/launch.md)\n",
        it->second);
  }
  return s;
}

}  // namespace xlaunch::cli
