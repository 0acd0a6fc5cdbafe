#include "launcher/stacks_registry.hpp"

#include <fmt/format.h>

namespace xlaunch::launcher {

std::string registry_dir(const Environment& env, unsigned uid) {
  if (auto runtime = lookup(env, "XDG_RUNTIME_DIR"); runtime && !runtime->empty()) {
    return *runtime + "/xlaunch";
  }
  return fmt::format("/tmp/xlaunch-{}", uid);
}

}  // namespace xlaunch::launcher
