// What the spawner's two sides share (internal to launcher/): spawn_client_posix.cpp forks
// the spawner and talks to it; spawner_posix.cpp is the spawner.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

#include "launcher/spawn_protocol.hpp"

namespace xlaunch::launcher {

/// The descriptors that travel with a request, in this order; the run's PID namespace is
/// the fourth when the request says so.
inline constexpr int kRequestFds = 3;
inline constexpr int kMaxRequestFds = 4;

/// Sends a request frame with its descriptors; false when the peer is gone or the deadline
/// (monotonic_ms) passed. The preloading template speaks the same protocol.
bool send_spawn_request(int socket, std::string_view frame, const int* fds, int fd_count,
                        long deadline_ms);
/// Reads `size` bytes; false when the peer is gone or the deadline (monotonic_ms) passed.
bool receive_exactly(int socket, char* data, std::size_t size, long deadline_ms);
/// The peer's answer; nullopt when it is gone, garbled or late.
std::optional<SpawnReply> receive_spawn_reply(int socket, long deadline_ms);

/// The spawner's whole life: serves requests on `socket` until it closes, then exits.
/// `launcher` is the pid of the process that forked it.
[[noreturn]] void spawner_main(int socket, pid_t launcher);

}  // namespace xlaunch::launcher
