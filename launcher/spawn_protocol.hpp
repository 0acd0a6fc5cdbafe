// What the launcher and its spawner (spawner_posix.cpp) say to each other, and what a new
// worker tells the launcher when it could not run its program. Pure: the bytes only; the
// descriptors travel beside them (SCM_RIGHTS) and the sockets are the spawner's business.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::launcher {

/// One worker to start. Its stdout and stderr and the write end of its start-status pipe
/// travel beside the request as descriptors, and a fourth when a flag asks for it: the run's
/// PID namespace (`enter_pid_namespace`) or the guardian's socket (`register_group`).
struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0]: the absolute path executed
  std::vector<std::string> envp;  // "KEY=VALUE"
  std::string cgroup_procs;       // the run's cgroup.procs, which the child joins; "" for none
  bool enter_pid_namespace = false;
  bool born_in_cgroup = false;  // the child is born in cgroup_procs' cgroup, else it moves there
  // The child sends its process group's id to the guardian before it runs its program: a
  // group registered only once the launcher reads the answer could start descendants that a
  // SIGKILLed launcher leaves running.
  bool register_group = false;
};

/// A request's frame header: a magic number and the size of the body after it.
inline constexpr std::uint32_t kSpawnMagic = 0x58535057;  // "XSPW"
inline constexpr std::size_t kSpawnHeaderSize = 8;
/// The largest body accepted: several times what execve takes (ARG_MAX is 2 MiB here).
inline constexpr std::uint32_t kMaxSpawnBody = 16u << 20;

/// Header and body of `request`, ready to send.
std::string encode_spawn_request(const SpawnRequest& request);
/// The body size a header announces; nullopt when it is not a spawn request's header or
/// announces more than kMaxSpawnBody.
std::optional<std::uint32_t> decode_spawn_header(std::string_view header);
/// The request in a body; nullopt when it is malformed (counts and strings disagree, an
/// empty argv, a relative program path).
std::optional<SpawnRequest> decode_spawn_body(std::string_view body);

/// The spawner's answer, 8 bytes: the new worker's pid, or a failure's errno.
struct SpawnReply {
  std::int32_t pid = 0;    // > 0 when a process was made
  std::int32_t error = 0;  // errno when not
};
inline constexpr std::size_t kSpawnReplySize = 8;
std::string encode_spawn_reply(const SpawnReply& reply);
std::optional<SpawnReply> decode_spawn_reply(std::string_view bytes);

/// Where a new worker failed before it ran its program.
enum class StartStage : std::int32_t { join_cgroup = 1, redirect = 2, exec = 3 };

/// What the worker writes into its start-status pipe when it fails (the pipe is
/// close-on-exec: end of file without bytes means the program runs).
struct StartFailure {
  StartStage stage = StartStage::exec;
  int error = 0;  // errno
};
inline constexpr std::size_t kStartFailureSize = 8;
/// nullopt when the bytes are not one whole StartFailure.
std::optional<StartFailure> decode_start_failure(std::string_view bytes);

/// The rank's report line for `failure` ("could not execute /x/prog: No such file or
/// directory"), and the exit code it stands for: 127 when the program is missing, 126 when
/// it cannot be executed, 1 for the other stages.
std::string describe_start_failure(const StartFailure& failure, const std::string& program,
                                   const std::string& cgroup_procs);
int start_failure_exit_code(const StartFailure& failure);

}  // namespace xlaunch::launcher
