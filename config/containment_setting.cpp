#include "config/containment_setting.hpp"

#include <fmt/format.h>

#include "config/usage_error.hpp"

namespace xlaunch::config {

ContainmentRequest containment_request(const Getenv& getenv) {
  const std::optional<std::string> value = getenv(std::string(kContainmentVariable));
  if (!value || value->empty() || *value == "auto") return ContainmentRequest::Auto;
  if (*value == "cgroup") return ContainmentRequest::Cgroup;
  if (*value == "pidns") return ContainmentRequest::PidNamespace;
  if (*value == "group") return ContainmentRequest::ProcessGroup;
  throw UsageError(fmt::format("{}={}: not a containment mechanism", kContainmentVariable, *value),
                   "use auto (the default), cgroup, pidns or group");
}

}  // namespace xlaunch::config
