#include "launcher/guardian_groups.hpp"

#include <catch2/catch.hpp>

using xlaunch::launcher::GuardedGroups;

namespace {
struct Fixture {
  std::int32_t groups[8];
  unsigned long long starts[8];
  GuardedGroups list{groups, starts, 8};
};
}  // namespace

TEST_CASE("a group whose leader's pid went to a later process is let be", "[guardian]") {
  Fixture f;
  f.list.remember(100, 5000);           // the worker, read while it ran
  f.list.remember(100, 5000);           // the launcher's copy
  CHECK_FALSE(f.list.reused(0, 5000));  // the worker itself
  CHECK_FALSE(f.list.reused(0, 0));     // no process with that pid: the group may live on
  CHECK(f.list.reused(0, 7000));        // another process has the number
  CHECK(f.list.reused(1, 7000));
}

TEST_CASE(
    "a leader that ended before its registration was read makes any later pid owner "
    "a newcomer",
    "[guardian]") {
  // A short rank (`sh -c '... & exit 0'`) ends before the guardian reads its registration.
  Fixture f;
  f.list.remember(200, 0);
  f.list.remember(200, 0);
  CHECK_FALSE(f.list.reused(0, 0));  // what it left in its group is still killed
  CHECK(f.list.reused(0, 9000));     // a stranger got the number later
}

TEST_CASE("a later worker with a stale group's number takes every copy of it", "[guardian]") {
  Fixture f;
  f.list.remember(300, 1000);  // a group that emptied unseen, never forgotten
  f.list.remember(300, 8000);  // the pid wrapped: a new worker of this job has it now
  CHECK_FALSE(f.list.reused(0, 8000));
  CHECK_FALSE(f.list.reused(1, 8000));
}

TEST_CASE("forget removes every copy and keeps the others' start times", "[guardian]") {
  Fixture f;
  f.list.remember(1, 11);
  f.list.remember(2, 22);
  f.list.remember(1, 11);
  f.list.remember(3, 0);
  f.list.forget(1);
  REQUIRE(f.list.count == 2);
  for (std::size_t i = 0; i < f.list.count; ++i) {
    if (f.groups[i] == 2) CHECK(f.starts[i] == 22);
    if (f.groups[i] == 3) CHECK(f.starts[i] == xlaunch::launcher::kLeaderGone);
  }
  GuardedGroups full{f.groups, f.starts, 2, 2};
  full.remember(4, 44);  // no room: dropped, not written past the end
  CHECK(full.count == 2);
}
