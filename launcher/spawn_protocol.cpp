// Both ends of every message run on this machine: integers go in native byte order.
#include "launcher/spawn_protocol.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "launcher/exit_status.hpp"

namespace xlaunch::launcher {
namespace {

void put_u32(std::string& out, std::uint32_t value) {
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  out.append(bytes, 4);
}

std::uint32_t get_u32(std::string_view bytes, std::size_t at) {
  std::uint32_t value = 0;
  std::memcpy(&value, bytes.data() + at, 4);
  return value;
}

// Body: argc, envc, flags, then cgroup_procs, argv and envp as NUL-terminated strings.
constexpr std::size_t kCounts = 12;
constexpr std::uint32_t kEnterPidNamespace = 1;
constexpr std::uint32_t kBornInCgroup = 2;
constexpr std::uint32_t kRegisterGroup = 4;

}  // namespace

std::string encode_spawn_request(const SpawnRequest& request) {
  std::string body;
  put_u32(body, static_cast<std::uint32_t>(request.argv.size()));
  put_u32(body, static_cast<std::uint32_t>(request.envp.size()));
  put_u32(body, (request.enter_pid_namespace ? kEnterPidNamespace : 0) |
                    (request.born_in_cgroup ? kBornInCgroup : 0) |
                    (request.register_group ? kRegisterGroup : 0));
  auto put_string = [&body](const std::string& s) {
    body.append(s.data(), ::strnlen(s.data(), s.size()));  // execve stops at a NUL anyway
    body.push_back('\0');
  };
  put_string(request.cgroup_procs);
  for (const std::string& arg : request.argv) put_string(arg);
  for (const std::string& entry : request.envp) put_string(entry);
  std::string frame;
  frame.reserve(kSpawnHeaderSize + body.size());
  put_u32(frame, kSpawnMagic);
  put_u32(frame, static_cast<std::uint32_t>(body.size()));
  return frame + body;
}

std::optional<std::uint32_t> decode_spawn_header(std::string_view header) {
  if (header.size() != kSpawnHeaderSize || get_u32(header, 0) != kSpawnMagic) return std::nullopt;
  const std::uint32_t size = get_u32(header, 4);
  if (size < kCounts || size > kMaxSpawnBody) return std::nullopt;
  return size;
}

std::optional<SpawnRequest> decode_spawn_body(std::string_view body) {
  if (body.size() < kCounts) return std::nullopt;
  const std::uint32_t argc = get_u32(body, 0);
  const std::uint32_t envc = get_u32(body, 4);
  const std::uint32_t flags = get_u32(body, 8);
  // Each string takes at least its NUL: counts beyond the bytes are lies, refused before
  // anything is reserved for them.
  if (argc == 0 || argc > body.size() || envc > body.size() ||
      (flags & ~(kEnterPidNamespace | kBornInCgroup | kRegisterGroup))) {
    return std::nullopt;
  }
  std::string_view rest = body.substr(kCounts);
  auto next = [&rest](std::string& out) {
    const std::size_t end = rest.find('\0');
    if (end == std::string_view::npos) return false;
    out.assign(rest.substr(0, end));
    rest.remove_prefix(end + 1);
    return true;
  };
  SpawnRequest request;
  request.enter_pid_namespace = (flags & kEnterPidNamespace) != 0;
  request.born_in_cgroup = (flags & kBornInCgroup) != 0;
  request.register_group = (flags & kRegisterGroup) != 0;
  // One fourth descriptor at most.
  if (request.enter_pid_namespace && request.register_group) return std::nullopt;
  if (!next(request.cgroup_procs)) return std::nullopt;
  if (request.born_in_cgroup && request.cgroup_procs.empty()) return std::nullopt;
  request.argv.resize(argc);
  for (std::string& arg : request.argv) {
    if (!next(arg)) return std::nullopt;
  }
  request.envp.resize(envc);
  for (std::string& entry : request.envp) {
    if (!next(entry)) return std::nullopt;
  }
  if (!rest.empty() || request.argv.front().empty() || request.argv.front()[0] != '/') {
    return std::nullopt;
  }
  return request;
}

std::string encode_spawn_reply(const SpawnReply& reply) {
  std::string bytes;
  put_u32(bytes, static_cast<std::uint32_t>(reply.pid));
  put_u32(bytes, static_cast<std::uint32_t>(reply.error));
  return bytes;
}

std::optional<SpawnReply> decode_spawn_reply(std::string_view bytes) {
  if (bytes.size() != kSpawnReplySize) return std::nullopt;
  SpawnReply reply{static_cast<std::int32_t>(get_u32(bytes, 0)),
                   static_cast<std::int32_t>(get_u32(bytes, 4))};
  if ((reply.pid > 0) == (reply.error != 0) || reply.pid < 0 || reply.error < 0) {
    return std::nullopt;  // exactly one of the two
  }
  return reply;
}

std::optional<StartFailure> decode_start_failure(std::string_view bytes) {
  if (bytes.size() != kStartFailureSize) return std::nullopt;
  const auto stage = static_cast<std::int32_t>(get_u32(bytes, 0));
  const auto error = static_cast<std::int32_t>(get_u32(bytes, 4));
  if (stage < 1 || stage > 3 || error <= 0) return std::nullopt;
  return StartFailure{static_cast<StartStage>(stage), error};
}

std::string describe_start_failure(const StartFailure& failure, const std::string& program,
                                   const std::string& cgroup_procs) {
  const std::string why = std::generic_category().message(failure.error);
  switch (failure.stage) {
    case StartStage::join_cgroup:
      return fmt::format("could not join the run's cgroup ({}): {}", cgroup_procs, why);
    case StartStage::redirect:
      return fmt::format("could not connect its stdout and stderr: {}", why);
    case StartStage::exec:
      break;
  }
  return fmt::format("could not execute {}: {}", program, why);
}

int start_failure_exit_code(const StartFailure& failure) {
  if (failure.stage != StartStage::exec) return exit_status::kFailure;
  return failure.error == ENOENT ? exit_status::kNotFound : exit_status::kCannotExecute;
}

}  // namespace xlaunch::launcher
