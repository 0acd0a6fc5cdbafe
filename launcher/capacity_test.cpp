#include "launcher/capacity.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::launcher;

namespace {

LaunchPlan plan_of(int local_workers, bool log_dir = false, int machines = 1, int rank = 0) {
  LaunchPlan plan;
  plan.local_world_size = local_workers;
  plan.num_machines = machines;
  plan.machine_rank = rank;
  plan.world_size = local_workers * machines;
  if (log_dir) plan.log_dir = "/logs";
  return plan;
}

config::Settings asked(int num_processes) {
  config::Settings s;
  s.num_processes = num_processes;
  return s;
}

CapacityLimits unlimited() { return {}; }

/// The UsageError's message and hint, or "" when the plan fits.
std::string refusal(const LaunchPlan& plan, const config::Settings& s, const CapacityLimits& l) {
  try {
    check_capacity(plan, s, l);
  } catch (const UsageError& e) {
    return std::string(e.what()) + "\nhint: " + e.hint();
  }
  return "";
}

}  // namespace

TEST_CASE("a machine runs at most kMaxLocalWorkers workers", "[capacity]") {
  CHECK(refusal(plan_of(kMaxLocalWorkers), asked(kMaxLocalWorkers), unlimited()).empty());
  const std::string message = refusal(plan_of(100000), asked(100000), unlimited());
  CHECK_THAT(message, Catch::Contains("--num_processes 100000 asks for 100000 workers on this "
                                      "machine; xlaunch runs at most 1024 per machine"));
  CHECK_THAT(message, Catch::Contains("--num_machines"));
  config::Settings per_node;
  per_node.nproc_per_node = 2000;
  CHECK_THAT(refusal(plan_of(2000), per_node, unlimited()),
             Catch::StartsWith("--nproc_per_node 2000 asks for 2000 workers"));
}

TEST_CASE("the workers and the guardian must fit under the user's process limit", "[capacity]") {
  CapacityLimits limits;
  limits.max_user_processes = 100;
  limits.user_processes = 90;
  CHECK(refusal(plan_of(9), asked(9), limits).empty());  // 9 workers + the guardian = 100
  const std::string message = refusal(plan_of(10), asked(10), limits);
  CHECK_THAT(message, Catch::Contains("process limit (ulimit -u) is 100 and you already run 90"));
  CHECK_THAT(message, Catch::Contains("use --num_processes 9 or fewer"));
  limits.user_processes = 200;  // already over: nothing fits
  CHECK_THAT(refusal(plan_of(1), asked(1), limits), Catch::Contains("--num_processes 0 or fewer"));
}

TEST_CASE("the launcher's descriptors must fit under the open-file limit", "[capacity]") {
  // Per worker: 2 pipes, a store connection on machine 0 (+2 log files with --log_dir).
  CHECK(descriptors_per_worker(plan_of(1)) == 3);
  CHECK(descriptors_per_worker(plan_of(1, true)) == 5);
  CHECK(descriptors_per_worker(plan_of(1, false, 4, 0)) == 2 + 4);  // all 4 machines' workers
  CHECK(descriptors_per_worker(plan_of(1, false, 4, 3)) == 2);      // no store on machine 3
  CHECK(descriptors_needed(plan_of(10)) == kReservedDescriptors + 1 + 10 * 3);

  CapacityLimits limits;
  limits.open_files = 5;
  limits.max_open_files = 5 + descriptors_needed(plan_of(100, true));
  CHECK(refusal(plan_of(100, true), asked(100), limits).empty());
  const std::string message = refusal(plan_of(101, true), asked(101), limits);
  CHECK_THAT(message, Catch::Contains("--num_processes 101 asks for 101 workers on this "
                                      "machine, which need about"));
  CHECK_THAT(message, Catch::Contains("open-file limit (ulimit -n"));
  CHECK_THAT(message, Catch::Contains("use --num_processes 100 or fewer"));
  limits.max_open_files = 1024;
  limits.open_files = 3;
  CHECK(refusal(plan_of(8), asked(8), limits).empty());
  CHECK_FALSE(refusal(plan_of(1000), asked(1000), limits).empty());
}

TEST_CASE("several machines: the message says how the count was split", "[capacity]") {
  CHECK_THAT(refusal(plan_of(2000, false, 2, 1), asked(4000), unlimited()),
             Catch::StartsWith("--num_processes 4000 over 2 machines asks for 2000 workers"));
}

TEST_CASE("the OS limits read back sensibly", "[capacity]") {
  const CapacityLimits limits = read_capacity_limits();
  CHECK(limits.open_files >= 3);  // at least stdin, stdout, stderr
  if (limits.max_open_files) CHECK(*limits.max_open_files >= limits.open_files);
  if (limits.max_user_processes) CHECK(limits.user_processes >= 1);  // this test itself
}
