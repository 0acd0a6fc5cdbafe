#include "diagnose/stacks_registry.hpp"

#include <fmt/format.h>

namespace xlaunch::diagnose {

std::string registry_dir(const std::map<std::string, std::string>& env, unsigned uid) {
  if (auto runtime = env.find("XDG_RUNTIME_DIR");
      runtime != env.end() && !runtime->second.empty()) {
    return runtime->second + "/xlaunch";
  }
  return fmt::format("/tmp/xlaunch-{}", uid);
}

}  // namespace xlaunch::diagnose
