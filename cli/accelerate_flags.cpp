#include "cli/accelerate_flags.hpp"

#include <fmt/core.h>

#include <span>
#include <stdexcept>
#include <vector>

#include "cli/flag_groups.hpp"
#include "config/accelerate_keys.hpp"
#include "config/usage_error.hpp"
#include "launcher/console.hpp"

namespace xlaunch::cli {
namespace {

constexpr const char* kGroup = "accelerate (FSDP, DeepSpeed, Megatron-LM, dynamo, FP8)";

/// accelerate flags that xlaunch accepts without acting on them, or refuses.
struct OtherFlag {
  const char* name;
  bool takes_value;
  bool refused;        // exit 2 instead of a note
  const char* reason;  // "" : accepted silently
};

const OtherFlag kOther[] = {
    {"quiet", false, false, ""},  // xlaunch's failure report is the same either way
    {"ipex", false, false, "xlaunch does not set up Intel Extension for PyTorch"},
    {"use_xpu", false, false, "xlaunch launches CUDA or CPU workers, not XPU"},
    {"mpirun_ccl", true, false, "xlaunch does not start workers through mpirun"},
    {"main_training_function", true, false, "only accelerate's TPU launcher uses it"},
    {"downcast_bf16", false, false, "only accelerate's TPU launcher uses it"},
    {"no_tpu_cluster", false, false, "only accelerate's TPU launcher uses it"},
    {"tpu", false, true, "xlaunch does not run on TPUs"},
    {"tpu_cluster", false, true, "xlaunch does not run on TPUs"},
    {"tpu_use_sudo", false, true, "xlaunch does not run on TPUs"},
    {"vm", true, true, "xlaunch does not run on TPUs"},
    {"env", true, true, "xlaunch does not run on TPUs"},
    {"aws_access_key_id", true, true, "xlaunch does not launch on SageMaker"},
    {"aws_secret_access_key", true, true, "xlaunch does not launch on SageMaker"},
    {"mpirun_hostfile", true, true,
     "xlaunch starts the workers itself, not through mpirun: run xlaunch on each machine with "
     "--num_machines, --machine_rank and --main_process_ip"},
};

std::string names(std::string_view name) {
  std::string dashed(name);
  for (char& c : dashed) c = c == '_' ? '-' : c;
  std::string out = "--" + std::string(name);
  if (dashed != name) out += ",--" + dashed;
  if (name == "quiet") out += ",-q";
  return out;
}

const char* type_name(const config::AccelerateArg& arg) {
  // zero_stage, fsdp_version: choices that are numbers.
  if (arg.kind == config::ArgKind::Choice &&
      arg.choices.find_first_not_of("0123456789|") == std::string_view::npos) {
    return "INT";
  }
  switch (arg.kind) {
    case config::ArgKind::Integer:
      return "INT";
    case config::ArgKind::Number:
      return "FLOAT";
    case config::ArgKind::Bool:
      return "BOOL";
    default:
      return "TEXT";
  }
}

bool given(const CLI::App& cmd, const AccelerateFlags& flags, std::string_view name) {
  const auto known = flags.options.find(name);
  if (known != flags.options.end()) return known->second->count() > 0;
  const CLI::Option* launch_flag = find_flag(cmd, name);  // one of launch_flags.cpp's
  if (launch_flag != nullptr) return launch_flag->count() > 0;
  if (!flags.declared) return false;  // an accelerate flag, left undeclared: not given
  throw std::logic_error("no flag --" + std::string(name));
}

/// A switch given and on: `--use_fsdp=false` is given but off, as `--debug=false` is.
bool switched_on(const CLI::App& cmd, const AccelerateFlags& flags, std::string_view name) {
  if (!given(cmd, flags, name)) return false;
  if (flags.options.contains(name)) return flags.switches.at(std::string(name));
  return find_flag(cmd, name)->as<bool>();  // one of launch_flags.cpp's (given, so declared)
}

}  // namespace

void add_accelerate_flags(CLI::App& cmd, AccelerateFlags& flags) {
  flags.declared = true;
  for (const config::AccelerateArg& arg : config::accelerate_args()) {
    const std::string name(arg.name);
    std::string help(arg.help);
    if (arg.kind == config::ArgKind::Switch) {
      flags.options[name] =
          flag_group(cmd, kGroup).add_flag(names(name), flags.switches[name], help);
    } else {
      if (arg.kind == config::ArgKind::Choice) help += " (" + config::allowed_values(arg) + ")";
      flags.options[name] = flag_group(cmd, kGroup)
                                .add_option(names(name), flags.values[name], help)
                                ->type_name(type_name(arg));
    }
  }
  flags.options["same_network"] =
      flag_group(cmd, kGroup)
          .add_flag("--same_network,--same-network", flags.switches["same_network"],
                    "Accepted for accelerate: every machine is on one network (sets same_network)");
  for (const OtherFlag& f : kOther) {
    const std::string help =
        fmt::format("{} ({})", f.refused ? "Refused" : "No effect",
                    *f.reason ? f.reason : "xlaunch's failure report is the same either way");
    CLI::App& group = flag_group(cmd, kGroup);
    flags.options[f.name] = f.takes_value
                                ? group.add_option(names(f.name), flags.values[f.name], help)
                                : group.add_flag(names(f.name), flags.switches[f.name], help);
  }
}

namespace {

// accelerate's own flags given on the command line, into `out` (name -> value).
void read_accelerate_args(const CLI::App& cmd, AccelerateFlags& flags,
                          config::AccelerateArgs& out) {
  for (const config::AccelerateArg& arg : config::accelerate_args()) {
    const std::string name(arg.name);
    if (!given(cmd, flags, name)) continue;
    if (arg.kind == config::ArgKind::Switch) {
      out[name] = flags.switches[name] ? "true" : "false";
      continue;
    }
    const auto value = config::normalize_accelerate_value(arg, flags.values[name]);
    if (!value) {
      throw UsageError(fmt::format("--{}: bad value '{}'", name, flags.values[name]),
                       fmt::format("allowed: {}", config::allowed_values(arg)));
    }
    out[name] = *value;
    if (arg.help.starts_with("no effect:")) {
      launcher::say("xlaunch: note: --{} has {}\n", name, arg.help);
    }
  }
}

}  // namespace

void finish_accelerate_flags(const CLI::App& cmd, AccelerateFlags& flags,
                             config::Settings& settings) {
  // Undeclared (no word could name one), none of accelerate's own was given; of the names
  // read after this block, launch's may still be.
  if (flags.declared) {
    for (const OtherFlag& f : kOther) {
      if (!given(cmd, flags, f.name)) continue;
      if (f.refused) {
        throw UsageError(fmt::format("--{} is accelerate's, but {}", f.name, f.reason),
                         fmt::format("drop --{}", f.name));
      }
      if (*f.reason) launcher::say("xlaunch: note: --{} has no effect: {}\n", f.name, f.reason);
    }
    read_accelerate_args(cmd, flags, settings.accelerate);
  }
  config::AccelerateArgs& out = settings.accelerate;
  if (switched_on(cmd, flags, "same_network")) settings.same_network = true;
  if (given(cmd, flags, "mixed_precision")) out[std::string(config::kMixedPrecisionFlag)] = "true";

  // accelerate: one of these at a time; any of them replaces the config file's paradigm.
  std::vector<std::string> chosen;
  for (const char* name : {"multi_gpu", "use_fsdp", "use_deepspeed", "use_megatron_lm"}) {
    if (switched_on(cmd, flags, name)) chosen.push_back(std::string("--") + name);
  }
  if (given(cmd, flags, "use_cpu") && settings.use_cpu == true)
    chosen.insert(chosen.begin(), "--cpu");
  if (chosen.size() > 1) {
    throw UsageError(fmt::format("{} and {} cannot be used together", chosen[0], chosen[1]),
                     "accelerate runs one of --cpu, --multi_gpu, --use_fsdp, --use_deepspeed, "
                     "--use_megatron_lm at a time: keep one");
  }
  if (!chosen.empty() && chosen[0] != "--cpu") {
    config::select_paradigm(out, chosen[0] == "--multi_gpu"
                                     ? std::nullopt
                                     : std::optional<std::string>(chosen[0].substr(2)));
    if (!settings.distributed_type) settings.distributed_type = config::DistributedType::MultiGpu;
  }
}

}  // namespace xlaunch::cli
