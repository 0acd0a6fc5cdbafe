#include "job/guardian.hpp"

#include "config/containment_setting.hpp"

namespace xlaunch::job {

using namespace launcher;

namespace {

// config/ parses the setting; GroupGuardian takes launcher/containment.hpp's enum of the
// same four values.
ContainmentRequest to_launcher(config::ContainmentRequest request) {
  switch (request) {
    case config::ContainmentRequest::Cgroup:
      return ContainmentRequest::Cgroup;
    case config::ContainmentRequest::PidNamespace:
      return ContainmentRequest::PidNamespace;
    case config::ContainmentRequest::ProcessGroup:
      return ContainmentRequest::ProcessGroup;
    case config::ContainmentRequest::Auto:
      break;
  }
  return ContainmentRequest::Auto;
}

}  // namespace

void start_guardian(Job& job) {
  // Forked before the store's thread exists. The guardian makes the run's cgroup and
  // removes it whenever the launcher ends; stop signals wait until it is set up.
  StopSignalsHeld held;
  const config::ContainmentRequest request = config::containment_request(
      [&](const std::string& name) { return lookup(job.parent_env, name); });
  job.guardian.emplace(GroupGuardian::start(to_launcher(request)));
}

}  // namespace xlaunch::job
