// A rank that dials another address than the store (pure): the seed-style script that sets
// MASTER_PORT itself, so every rank dials a port where nobody listens and hangs silently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xlaunch::diagnose {

/// What one sample shows of a rank that has no connection to the store.
struct DialEvidence {
  int rank = 0;
  /// Endpoints of its TCP sockets in SYN_SENT (a connect the peer does not answer).
  std::vector<std::string> connecting;
  /// Its sockets listed in no socket table: a connect that failed (refused) and is kept
  /// for the next retry, as PyTorch's TCPStore client does between attempts.
  int unlisted_sockets = 0;
  /// MASTER_ADDR / MASTER_PORT the script set itself (xlaunch's sitecustomize notes them).
  std::optional<std::string> script_addr;
  std::optional<std::string> script_port;
};

/// The address the rank dials instead of the store, or nullopt when the evidence does not
/// show one.
std::optional<std::string> wrong_target(const DialEvidence& e, const std::string& store_addr,
                                        std::uint16_t store_port);

/// The message: which rank, which address, where the store is, and the fix.
std::string wrong_address_message(int rank, const std::string& target,
                                  const std::string& store_addr, std::uint16_t store_port,
                                  bool script_set_it);

/// True for "localhost", 127.0.0.0/8 and ::1 (and their IPv4-mapped forms).
bool is_loopback(const std::string& host);

}  // namespace xlaunch::diagnose
