// `xlaunch config` (the wizard), `xlaunch config default` and `xlaunch config show`.
// Flag wiring and GPU facts only; the work is in config/.
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "config/env_settings.hpp"
#include "config/flag_settings.hpp"
#include "config/machine.hpp"
#include "config/paths.hpp"
#include "config/resolve.hpp"
#include "config/schema.hpp"
#include "config/show.hpp"
#include "config/templates.hpp"
#include "config/terminal.hpp"
#include "config/usage_error.hpp"
#include "config/wizard.hpp"
#include "config/yaml_io.hpp"
#include "gpu/devices.hpp"
#include "gpu/nvml.hpp"
#include "job/launch_check.hpp"
#include "launcher/exit_status.hpp"

namespace xlaunch::cli {
namespace {

struct ConfigOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> template_name;
  bool force = false;
  /// --<key> VALUE for every schema key (config default / show); std::map keeps references
  /// stable for CLI11.
  std::map<std::string, std::string> values;
};

/// What the wizard and `config default` know of this machine, and the GPUs a launch here sees.
struct Machine {
  config::MachineFacts facts;
  std::vector<std::string> visible_gpus;
};

Machine this_machine() {
  Machine m;
  const auto nvml = gpu::query_nvml();
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  m.visible_gpus = gpu::visible_gpus(cvd ? std::optional<std::string>(cvd) : std::nullopt, nvml);
  m.facts.gpu_count = static_cast<int>(m.visible_gpus.size());
  if (nvml && cvd == nullptr) {
    for (const auto& gpu : nvml->gpus) m.facts.gpu_names.push_back(gpu.name);
  }
  return m;
}

/// Every file `config` writes must launch on the machine that wrote it.
void refuse_unless_it_launches(const std::string& path, const config::Settings& settings,
                               const Machine& machine) {
  if (auto refusal = job::launch_refusal(settings, machine.visible_gpus)) {
    throw UsageError(fmt::format("{} was not written: `xlaunch launch` on this machine would "
                                 "refuse it: {}",
                                 path, refusal->what()),
                     refusal->hint());
  }
}

std::string target_path(const ConfigOptions& o) {
  if (o.config_file) return *o.config_file;
  if (auto path = config::default_config_path(config::process_environment())) return *path;
  throw UsageError("cannot tell where the default config file goes",
                   "set HOME, XDG_CONFIG_HOME or XLAUNCH_CONFIG_FILE, or pass --config_file");
}

/// The --<key> flags that were given, as (key, text) pairs.
std::vector<std::pair<std::string, std::string>> given_values(const CLI::App& cmd,
                                                              const ConfigOptions& o) {
  std::vector<std::pair<std::string, std::string>> given;
  for (const auto& [key, value] : o.values) {
    if (cmd.get_option("--" + key)->count() > 0) given.emplace_back(key, value);
  }
  return given;
}

void add_key_flags(CLI::App& cmd, ConfigOptions& o) {
  for (const config::KeySpec& key : config::schema()) {
    const std::string name(key.name);
    std::string& target = o.values[name];
    const std::string help = fmt::format("{} ({})", key.help, key.allowed);
    if (key.kind == config::ValueKind::Boolean) {
      // Bare: "true"; --key=false also works.
      cmd.add_flag("--" + name, target, help)->group("Config keys");
    } else {
      const char* type = key.kind == config::ValueKind::Integer  ? "INT"
                         : key.kind == config::ValueKind::Number ? "FLOAT"
                                                                 : "TEXT";
      cmd.add_option("--" + name, target, help)->group("Config keys")->type_name(type);
    }
  }
}

void print_notices(const std::vector<std::string>& notices) {
  for (const std::string& notice : notices) fmt::print(stderr, "xlaunch: notice: {}\n", notice);
}

int run_wizard(const ConfigOptions& o) {
  const std::string path = target_path(o);
  config::config_write_target(path);  // refused now rather than after every question
  config::Settings start;
  if (o.template_name) {
    const config::Template* preset = config::find_template(*o.template_name);
    start = config::load_config_text(std::string(preset->text), "template " + *o.template_name)
                .settings;
  } else if (std::filesystem::exists(path)) {
    // Its answers would replace the file: one it cannot read is not replaced by defaults,
    // which would lose every setting the wizard does not ask about.
    try {
      start = config::load_config_file(path).settings;
    } catch (const UsageError& e) {
      throw UsageError(e.what(),
                       fmt::format("the wizard starts from {} and writes it again: fix what is "
                                   "named above, or move the file away to start afresh (or "
                                   "write another with --config_file)",
                                   path));
    }
  }
  const Machine machine = this_machine();

  config::Settings answers;
  {
    // The terminal (and its raw mode) ends before anything else is printed.
    const std::unique_ptr<config::Terminal> term = config::make_stdio_terminal();
    const bool typed = term->interactive();
    try {
      answers = config::run_wizard(*term, machine.facts, start);
    } catch (const config::Interrupted& stop) {
      fmt::print(stderr, "xlaunch: interrupted; {} was not changed\n", path);
      return exit_status::kSignalBase + stop.signal();  // 130 after Ctrl-C, 143 after SIGTERM
    } catch (const config::EndOfInput&) {
      throw UsageError(fmt::format("input ended before every question was answered; {} was not "
                                   "changed",
                                   path),
                       typed ? "Ctrl-D ends the input; Ctrl-C stops the wizard"
                             : "with piped input give one answer per line; an empty line "
                               "takes the default");
    }
  }
  refuse_unless_it_launches(path, answers, machine);
  config::save_config(path, answers);
  // The file is written: an output closed meanwhile changes nothing about that.
  std::fputs(fmt::format("\n{}\nWrote {}\n", config::summarize(answers), path).c_str(), stdout);
  return exit_status::kSuccess;
}

int run_default(const CLI::App& cmd, const ConfigOptions& o) {
  const std::string path = target_path(o);
  config::config_write_target(path);
  if (std::filesystem::exists(path) && !o.force) {
    throw UsageError(fmt::format("{} already exists", path),
                     "pass --force to replace it, or --config_file to write another file");
  }
  const Machine machine = this_machine();
  const config::Settings settings =
      config::default_settings(machine.facts, config::settings_from_flags(given_values(cmd, o)));
  refuse_unless_it_launches(path, settings, machine);
  config::save_config(path, settings);
  fmt::print("{}Wrote {}\n", config::summarize(settings), path);
  return exit_status::kSuccess;
}

int run_show(const CLI::App& cmd, const ConfigOptions& o) {
  const config::Getenv env = config::process_environment();
  const config::Resolved resolved =
      config::resolve(config::settings_from_flags(given_values(cmd, o)), o.config_file, env);
  print_notices(resolved.notices);
  const auto default_file = o.config_file ? std::nullopt : config::default_config_path(env);
  fmt::print("{}", config::format_show(resolved, default_file));
  return exit_status::kSuccess;
}

}  // namespace

void add_config_command(CLI::App& app, Action& run) {
  // Shared by the callbacks below, which run after parsing.
  auto options = std::make_shared<ConfigOptions>();
  auto* cmd = app.add_subcommand(
      "config",
      "Write the YAML config: a wizard (default), 'default' without questions, or "
      "'show' the effective settings");
  cmd->require_subcommand(0, 1);
  cmd->add_option("--config_file", options->config_file,
                  "File to write (default: $XLAUNCH_CONFIG_FILE, else "
                  "~/.config/xlaunch/default_config.yaml)");
  std::vector<std::string> names;
  for (const config::Template& t : config::builtin_templates()) names.emplace_back(t.name);
  cmd->add_option("--template", options->template_name, "Start from a preset")
      ->check(CLI::IsMember(names));
  cmd->callback([cmd, options, &run] {
    if (cmd->get_subcommands().empty()) run = [options] { return run_wizard(*options); };
  });

  auto* def = cmd->add_subcommand("default", "Write a config for this machine without questions");
  def->add_option("--config_file", options->config_file, "File to write");
  def->add_flag("--force", options->force, "Replace an existing file");
  add_key_flags(*def, *options);
  def->callback(
      [def, options, &run] { run = [def, options] { return run_default(*def, *options); }; });

  auto* show = cmd->add_subcommand("show", "Print the effective settings and where each came from");
  show->add_option("--config_file", options->config_file, "File to read");
  add_key_flags(*show, *options);
  show->callback(
      [show, options, &run] { run = [show, options] { return run_show(*show, *options); }; });
}

}  // namespace xlaunch::cli
