#include "launcher/containment.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch::launcher;

namespace {

// This machine's hybrid layout (v1 controllers plus cgroup2 at /sys/fs/cgroup/unified).
constexpr std::string_view kHybridMountinfo =
    "24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

constexpr std::string_view kHybridCgroup =
    "9:name=systemd:/\n"
    "4:memory:/process_api/6b01\n"
    "0::/\n";

ContainmentProbe probe(Containment m, bool works, std::string detail) {
  return ContainmentProbe{m, works, std::move(detail)};
}

}  // namespace

TEST_CASE("auto tries the best mechanism first; a forced one only itself", "[containment]") {
  CHECK(containment_candidates(ContainmentRequest::Auto) ==
        std::vector{Containment::Cgroup, Containment::PidNamespace, Containment::ProcessGroup});
  CHECK(containment_candidates(ContainmentRequest::PidNamespace) ==
        std::vector{Containment::PidNamespace});
  CHECK(to_string(Containment::Cgroup) == "cgroup");
  CHECK(to_string(Containment::PidNamespace) == "pid-namespace");
  CHECK(to_string(Containment::ProcessGroup) == "process-group");
}

TEST_CASE("the cgroup v2 path comes from the 0:: line", "[containment]") {
  CHECK(cgroup2_path(kHybridCgroup) == "/");
  CHECK(cgroup2_path("0::/user.slice/user-1000.slice/session-2.scope\n") ==
        "/user.slice/user-1000.slice/session-2.scope");
  CHECK(cgroup2_path("0::/a:b\n") == "/a:b");           // a ':' in the path is kept
  CHECK_FALSE(cgroup2_path("4:memory:/x\n1:cpu:/\n"));  // v1 only
  CHECK_FALSE(cgroup2_path(""));
}

TEST_CASE("mountinfo lines: optional fields, escapes, malformed lines", "[containment]") {
  auto m = parse_mountinfo_line(
      "41 31 0:38 /sub /sys/fs/cgroup/my\\040dir rw,relatime shared:9 master:2 - cgroup2 cgroup2 "
      "rw");
  REQUIRE(m);
  CHECK(m->root == "/sub");
  CHECK(m->mount_point == "/sys/fs/cgroup/my dir");
  CHECK(m->fs_type == "cgroup2");
  CHECK_FALSE(parse_mountinfo_line("41 31 0:38 / /x rw"));
  CHECK_FALSE(parse_mountinfo_line(""));
}

TEST_CASE("the launcher's cgroup directory under the cgroup2 mount", "[containment]") {
  // Hybrid: cgroup2 at /sys/fs/cgroup/unified.
  CHECK(cgroup_directory(kHybridMountinfo, "/") == "/sys/fs/cgroup/unified");
  CHECK(cgroup_directory(kHybridMountinfo, "/a/b") == "/sys/fs/cgroup/unified/a/b");
  // Unified: cgroup2 at /sys/fs/cgroup.
  constexpr std::string_view unified =
      "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  CHECK(cgroup_directory(unified, "/user.slice/x.scope") == "/sys/fs/cgroup/user.slice/x.scope");
  // A bind mount of a sub-tree (containers): its root is stripped.
  constexpr std::string_view bound =
      "600 500 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
  CHECK(cgroup_directory(bound, "/docker/abc") == "/sys/fs/cgroup");
  CHECK(cgroup_directory(bound, "/docker/abc/job") == "/sys/fs/cgroup/job");
  CHECK_FALSE(cgroup_directory(bound, "/docker/abcd"));  // a prefix, not an ancestor
  CHECK_FALSE(cgroup_directory(bound, "/other"));
  // Outside the cgroup namespace, or nothing mounted.
  CHECK_FALSE(cgroup_directory(unified, "/../../init.scope"));
  CHECK_FALSE(cgroup_directory("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", "/"));
}

TEST_CASE("run cgroup names are unique per launcher and run", "[containment]") {
  CHECK(run_cgroup_name(4242, 0xdeadbeefcafeull) == "xlaunch-4242-beefcafe");
  CHECK(run_cgroup_name(7, 1) == "xlaunch-7-00000001");
}

TEST_CASE("choosing: auto takes the best that works, forced ones fail loudly", "[containment]") {
  const std::vector<ContainmentProbe> both = {
      probe(Containment::Cgroup, true, "/sys/fs/cgroup/unified"),
      probe(Containment::PidNamespace, true, "")};
  const std::vector<ContainmentProbe> no_cgroup = {
      probe(Containment::Cgroup, false, "cannot create /sys/fs/cgroup/x: Read-only file system"),
      probe(Containment::PidNamespace, true, "")};
  const std::vector<ContainmentProbe> neither = {
      probe(Containment::Cgroup, false, "no cgroup2 file system in /proc/self/mountinfo"),
      probe(Containment::PidNamespace, false, "unshare(CLONE_NEWPID): Operation not permitted")};

  CHECK(choose_containment(ContainmentRequest::Auto, both) == Containment::Cgroup);
  CHECK(choose_containment(ContainmentRequest::Auto, no_cgroup) == Containment::PidNamespace);
  CHECK(choose_containment(ContainmentRequest::Auto, neither) == Containment::ProcessGroup);
  CHECK(choose_containment(ContainmentRequest::Auto, {}) == Containment::ProcessGroup);
  CHECK(choose_containment(ContainmentRequest::PidNamespace, both) == Containment::PidNamespace);
  CHECK(choose_containment(ContainmentRequest::ProcessGroup, both) == Containment::ProcessGroup);
  CHECK_FALSE(choose_containment(ContainmentRequest::Cgroup, no_cgroup));
  CHECK_FALSE(choose_containment(ContainmentRequest::PidNamespace, neither));

  CHECK(unavailable_message(ContainmentRequest::Cgroup, no_cgroup) ==
        "XLAUNCH_CONTAINMENT=cgroup, but cgroup containment is not possible here: cannot "
        "create /sys/fs/cgroup/x: Read-only file system");
  CHECK_THAT(unavailable_message(ContainmentRequest::PidNamespace, {}),
             Catch::Contains("XLAUNCH_CONTAINMENT=pidns") && Catch::Contains("not tried"));

  CHECK_THAT(fallback_note(neither), Catch::Contains("falls back to process groups") &&
                                         Catch::Contains("Operation not permitted") &&
                                         Catch::Contains("no cgroup2 file system"));

  CHECK(describe_containment(ContainmentRequest::Auto, both) ==
        "cgroup under /sys/fs/cgroup/unified (XLAUNCH_CONTAINMENT=auto; pid-namespace: "
        "available)");
  CHECK(describe_containment(ContainmentRequest::Auto, neither) ==
        "process-group (XLAUNCH_CONTAINMENT=auto; cgroup: no cgroup2 file system in "
        "/proc/self/mountinfo; pid-namespace: unshare(CLONE_NEWPID): Operation not permitted)");
  CHECK_THAT(describe_containment(ContainmentRequest::Cgroup, neither),
             Catch::StartsWith("none: XLAUNCH_CONTAINMENT=cgroup, but") &&
                 Catch::EndsWith("(xlaunch launch exits 2)"));
}
