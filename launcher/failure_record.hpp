// Why a round of the job failed: the supervisor makes one for a local failure, and the
// multi-machine agent (cluster/agent.hpp) shares it so that every launcher prints the same.
#pragma once

#include <string>

namespace xlaunch::launcher {

/// Why a round of the job failed, as every launcher prints it.
struct FailureRecord {
  int machine_rank = 0;  // -1: no machine to blame
  std::string host;
  int rank = -1;            // global worker rank, -1 when no worker is to blame
  int exit_code = 1;        // what every launcher exits with
  bool restartable = true;  // false for an interrupted or lost launcher
  std::string cause;        // "exited with code 7", "launcher interrupted by SIGINT", ...
  /// One line: "machine 1 (hostB), rank 3: exited with code 7"; the cause alone without a
  /// machine.
  std::string describe() const;
};

}  // namespace xlaunch::launcher
