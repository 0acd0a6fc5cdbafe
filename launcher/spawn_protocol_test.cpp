#include "launcher/spawn_protocol.hpp"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>

using namespace xlaunch::launcher;

namespace {

std::string body_of(const std::string& frame) { return frame.substr(kSpawnHeaderSize); }

std::string u32(std::uint32_t value) {
  std::string bytes(4, '\0');
  std::memcpy(bytes.data(), &value, 4);
  return bytes;
}

std::string failure_bytes(std::int32_t stage, std::int32_t error) {
  return u32(static_cast<std::uint32_t>(stage)) + u32(static_cast<std::uint32_t>(error));
}

}  // namespace

TEST_CASE("a spawn request survives the trip", "[spawn]") {
  const SpawnRequest request{{"/usr/bin/python3", "-u", "train.py", ""},
                             {"RANK=0", "EMPTY=", "PATH=/usr/bin:/bin"},
                             "/sys/fs/cgroup/xlaunch-1-2/cgroup.procs",
                             true};
  const std::string frame = encode_spawn_request(request);
  REQUIRE(decode_spawn_header(frame.substr(0, kSpawnHeaderSize)) == frame.size() - 8);
  const std::optional<SpawnRequest> back = decode_spawn_body(body_of(frame));
  REQUIRE(back);
  CHECK(back->argv == request.argv);
  CHECK(back->envp == request.envp);
  CHECK(back->cgroup_procs == request.cgroup_procs);
  CHECK(back->enter_pid_namespace);
  CHECK_FALSE(back->born_in_cgroup);
}

TEST_CASE("a child to be born in the cgroup says so, and needs the cgroup", "[spawn]") {
  SpawnRequest request{{"/bin/true"}, {}, "/sys/fs/cgroup/xlaunch-1-2/cgroup.procs", false, true};
  std::optional<SpawnRequest> back = decode_spawn_body(body_of(encode_spawn_request(request)));
  REQUIRE(back);
  CHECK(back->born_in_cgroup);
  CHECK_FALSE(back->enter_pid_namespace);
  request.cgroup_procs.clear();
  CHECK_FALSE(decode_spawn_body(body_of(encode_spawn_request(request))));
  // A flag this version does not know is refused, not ignored.
  std::string body = body_of(encode_spawn_request({{"/bin/true"}, {}, "", false, false}));
  body.replace(8, 4, u32(8));
  CHECK_FALSE(decode_spawn_body(body));
}

TEST_CASE("a child that registers its group says so, and enters no namespace", "[spawn]") {
  SpawnRequest request{{"/bin/true"}, {}, "", false, false, true};
  std::optional<SpawnRequest> back = decode_spawn_body(body_of(encode_spawn_request(request)));
  REQUIRE(back);
  CHECK(back->register_group);
  CHECK_FALSE(back->enter_pid_namespace);
  // Both would need a fourth descriptor: which one it is would be a guess.
  request.enter_pid_namespace = true;
  CHECK_FALSE(decode_spawn_body(body_of(encode_spawn_request(request))));
}

TEST_CASE("a request with no environment and no cgroup is fine", "[spawn]") {
  const std::string frame = encode_spawn_request({{"/bin/true"}, {}, "", false});
  const std::optional<SpawnRequest> back = decode_spawn_body(body_of(frame));
  REQUIRE(back);
  CHECK(back->argv == std::vector<std::string>{"/bin/true"});
  CHECK(back->envp.empty());
  CHECK(back->cgroup_procs.empty());
  CHECK_FALSE(back->enter_pid_namespace);
}

TEST_CASE("a string with a NUL inside is cut there, as execve would", "[spawn]") {
  const std::string frame =
      encode_spawn_request({{"/bin/echo", std::string("a\0b", 3)}, {}, "", false});
  const std::optional<SpawnRequest> back = decode_spawn_body(body_of(frame));
  REQUIRE(back);
  CHECK(back->argv[1] == "a");
}

TEST_CASE("broken frames are refused", "[spawn]") {
  const std::string frame = encode_spawn_request({{"/bin/true", "x"}, {"A=1"}, "", false});
  const std::string header = frame.substr(0, kSpawnHeaderSize);
  const std::string body = body_of(frame);
  CHECK_FALSE(decode_spawn_header("XSPW"));                              // short
  CHECK_FALSE(decode_spawn_header(u32(0x12345678) + header.substr(4)));  // wrong magic
  CHECK_FALSE(decode_spawn_header(header.substr(0, 4) + u32(kMaxSpawnBody + 1)));
  CHECK_FALSE(decode_spawn_header(header.substr(0, 4) + u32(3)));    // smaller than its counts
  CHECK_FALSE(decode_spawn_body(body.substr(0, body.size() - 1)));   // last NUL missing
  CHECK_FALSE(decode_spawn_body(body + "extra"));                    // bytes after the strings
  CHECK_FALSE(decode_spawn_body(u32(99) + body.substr(4)));          // more args than strings
  CHECK_FALSE(decode_spawn_body(u32(0xFFFFFFFF) + body.substr(4)));  // a count past the bytes
  CHECK_FALSE(decode_spawn_body(body.substr(0, 8) + u32(2) + body.substr(12)));  // unknown flag
  CHECK_FALSE(decode_spawn_body(""));
}

TEST_CASE("the program must be an absolute path, and argv not empty", "[spawn]") {
  CHECK_FALSE(decode_spawn_body(body_of(encode_spawn_request({{"true"}, {}, "", false}))));
  CHECK_FALSE(decode_spawn_body(body_of(encode_spawn_request({{""}, {}, "", false}))));
  CHECK_FALSE(decode_spawn_body(body_of(encode_spawn_request({{}, {"A=1"}, "", false}))));
}

TEST_CASE("the spawner's reply is a pid or an errno", "[spawn]") {
  CHECK(decode_spawn_reply(encode_spawn_reply({1234, 0}))->pid == 1234);
  CHECK(decode_spawn_reply(encode_spawn_reply({0, EAGAIN}))->error == EAGAIN);
  CHECK_FALSE(decode_spawn_reply(encode_spawn_reply({1234, EAGAIN})));  // both
  CHECK_FALSE(decode_spawn_reply(encode_spawn_reply({0, 0})));          // neither
  CHECK_FALSE(decode_spawn_reply(encode_spawn_reply({-5, 0})));
  CHECK_FALSE(decode_spawn_reply("1234"));
}

TEST_CASE("a start failure names the stage, the program and the errno", "[spawn]") {
  const auto missing = decode_start_failure(failure_bytes(3, ENOENT));
  REQUIRE(missing);
  CHECK(describe_start_failure(*missing, "/opt/train", "") ==
        "could not execute /opt/train: No such file or directory");
  CHECK(start_failure_exit_code(*missing) == 127);

  const auto not_executable = decode_start_failure(failure_bytes(3, ENOEXEC));
  REQUIRE(not_executable);
  CHECK(start_failure_exit_code(*not_executable) == 126);

  const auto cgroup = decode_start_failure(failure_bytes(1, EACCES));
  REQUIRE(cgroup);
  CHECK(describe_start_failure(*cgroup, "/opt/train", "/sys/fs/cgroup/x/cgroup.procs") ==
        "could not join the run's cgroup (/sys/fs/cgroup/x/cgroup.procs): Permission denied");
  CHECK(start_failure_exit_code(*cgroup) == 1);

  CHECK(describe_start_failure(*decode_start_failure(failure_bytes(2, EBADF)), "/p", "") ==
        "could not connect its stdout and stderr: Bad file descriptor");
}

TEST_CASE("bytes that are no start failure are not taken for one", "[spawn]") {
  CHECK_FALSE(decode_start_failure(""));
  CHECK_FALSE(decode_start_failure("abc"));
  CHECK_FALSE(decode_start_failure(failure_bytes(4, ENOENT)));  // no such stage
  CHECK_FALSE(decode_start_failure(failure_bytes(3, 0)));       // no errno
  CHECK_FALSE(decode_start_failure(failure_bytes(3, ENOENT) + "x"));
}
