#include "job/early_start.hpp"

#include <exception>
#include <optional>

#include "config/containment_setting.hpp"
#include "launcher/process.hpp"

namespace xlaunch::job {
namespace {

std::optional<launcher::Spawner>& early_spawner() {
  static std::optional<launcher::Spawner> spawner;
  return spawner;
}

// Words after which `xlaunch launch` starts no worker. Anywhere, even among the program's
// own words: a needless late start only costs what starting early saves.
bool starts_nothing(std::span<const std::string_view> args) {
  if (args.empty()) return true;
  for (std::string_view word : args) {
    if (word == "-h" || word == "--help" || word.starts_with("--dry_run") ||
        word.starts_with("--dry-run")) {
      return true;
    }
  }
  return false;
}

}  // namespace

void start_helpers_early(std::span<const std::string_view> args) {
  if (starts_nothing(args)) return;
  try {
    early_spawner().emplace(launcher::Spawner::start());
    launcher::GroupGuardian::start_early(
        config::containment_request(config::process_environment()));
  } catch (const std::exception&) {
    // A bad XLAUNCH_CONTAINMENT, no fork: the launch meets it again and says so.
  }
}

launcher::Spawner take_spawner() {
  std::optional<launcher::Spawner>& early = early_spawner();
  if (!early) return launcher::Spawner::start();
  launcher::Spawner spawner = std::move(*early);
  early.reset();
  return spawner;
}

void end_unused_helpers() {
  early_spawner().reset();
  launcher::GroupGuardian::end_early();
}

}  // namespace xlaunch::job
