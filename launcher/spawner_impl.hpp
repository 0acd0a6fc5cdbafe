// What the spawner's two sides share (internal to launcher/): spawn_client_posix.cpp forks
// the spawner and talks to it; spawner_posix.cpp is the spawner.
#pragma once

#include <sys/types.h>

namespace xlaunch::launcher {

/// The descriptors that travel with a request, in this order; the run's PID namespace is
/// the fourth when the request says so.
inline constexpr int kRequestFds = 3;
inline constexpr int kMaxRequestFds = 4;

/// The spawner's whole life: serves requests on `socket` until it closes, then exits.
/// `launcher` is the pid of the process that forked it.
[[noreturn]] void spawner_main(int socket, pid_t launcher);

}  // namespace xlaunch::launcher
