#include "gpu/gpu_sampler.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>

using namespace xlaunch::gpu;

TEST_CASE("parent_pid reads /proc: this process's parent, 0 for a pid that does not exist") {
  CHECK(parent_pid(static_cast<long>(::getpid())) == static_cast<long>(::getppid()));
  CHECK(parent_pid(0x3fffffff) == 0);
}

TEST_CASE("WorkerPids keeps every attempt's pids with their ranks") {
  WorkerPids pids;
  pids.add(10, 0);
  pids.add(11, 1);
  pids.add(12, 1);
  CHECK(pids.snapshot() == std::map<long, int>{{10, 0}, {11, 1}, {12, 1}});
}
