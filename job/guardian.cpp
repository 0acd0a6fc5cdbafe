#include "job/guardian.hpp"

#include "config/containment_setting.hpp"

namespace xlaunch::job {

using namespace launcher;

void start_guardian(Job& job) {
  // Forked before the store's thread exists. The guardian makes the run's cgroup and
  // removes it whenever the launcher ends; stop signals wait until it is set up.
  StopSignalsHeld held;
  const config::ContainmentRequest request = config::containment_request(
      [&](const std::string& name) { return lookup(job.parent_env, name); });
  job.guardian.emplace(GroupGuardian::start(request));
}

}  // namespace xlaunch::job
