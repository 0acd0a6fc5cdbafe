// Orphan containment: how xlaunch makes sure no descendant of a worker outlives the job,
// even one that left its process group (setsid, daemons) or a SIGKILLed launcher. The pure
// parts: the XLAUNCH_CONTAINMENT setting, /proc parsing, the choice and its description.
// containment_posix.cpp probes the machine and sets a mechanism up, guardian_posix.cpp runs
// the guardian, cgroup_posix.cpp handles the run's cgroup.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/containment_setting.hpp"

namespace xlaunch::launcher {

/// Best first: a cgroup v2 per run (every descendant inherits it; cgroup.kill), a PID
/// namespace whose init is the guardian (the kernel kills every member when it exits), or
/// the workers' process groups (descendants that leave their group can escape).
enum class Containment { Cgroup, PidNamespace, ProcessGroup };

/// "cgroup", "pid-namespace", "process-group".
std::string_view to_string(Containment mechanism);

/// What XLAUNCH_CONTAINMENT asks for, parsed in config/.
using config::ContainmentRequest;
using config::kContainmentVariable;

/// The mechanisms to try, in order: auto tries all (process groups always work); a forced
/// one only itself.
std::vector<Containment> containment_candidates(ContainmentRequest request);

/// The cgroup v2 path from /proc/self/cgroup text (the "0::/path" line); nullopt on a
/// cgroup-v1-only system.
std::optional<std::string> cgroup2_path(std::string_view proc_self_cgroup);

/// One line of /proc/self/mountinfo, the parts that matter here (escapes such as \040
/// decoded).
struct MountInfo {
  std::string root;         // the mounted directory inside its file system
  std::string mount_point;  // where it is mounted
  std::string fs_type;
};
std::optional<MountInfo> parse_mountinfo_line(std::string_view line);

/// The directory of cgroup `path` (from cgroup2_path) under the first cgroup2 mount whose
/// root contains it; nullopt when no cgroup2 mount shows it (none mounted, or the path is
/// outside this cgroup namespace: "/../x").
std::optional<std::string> cgroup_directory(std::string_view mountinfo, std::string_view path);

/// The name of a run's cgroup: unique per launcher and run.
std::string run_cgroup_name(long launcher_pid, unsigned long long random);

/// What probing found for one mechanism: `works`, and `detail` = where (a cgroup
/// directory) or why not.
struct ContainmentProbe {
  Containment mechanism = Containment::ProcessGroup;
  bool works = false;
  std::string detail;
};

/// The mechanism for `request` given the probes (untried mechanisms count as unavailable);
/// nullopt when the forced one does not work.
std::optional<Containment> choose_containment(ContainmentRequest request,
                                              const std::vector<ContainmentProbe>& probes);

/// The exit-2 message when a forced mechanism does not work: names the variable and why.
std::string unavailable_message(ContainmentRequest request,
                                const std::vector<ContainmentProbe>& probes);

/// The one-line note printed when auto falls back to process groups.
std::string fallback_note(const std::vector<ContainmentProbe>& probes);

/// Probes every mechanism without changing anything (containment_posix.cpp): creates and
/// removes a test cgroup, and tries a PID namespace in a child process.
std::vector<ContainmentProbe> probe_containment();

/// The `xlaunch env` line: the mechanism a launch would use, and why not the better ones.
std::string describe_containment(ContainmentRequest request,
                                 const std::vector<ContainmentProbe>& probes);

}  // namespace xlaunch::launcher
