// What a World owns, shared by the files that implement its operations (world.cpp,
// nccl.cpp, gloo.cpp, c_api.cpp). Internal: not installed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "client/identity.hpp"
#include "client/keys.hpp"
#include "rendezvous/store_client.hpp"
#include "xlaunch/xlaunch.hpp"

namespace xlaunch::detail {

struct WorldState {
  Identity id;
  WorldOptions options;
  Keys keys;
  rendezvous::StoreClient client;
  // One counter per kind of collective call; ranks make them in the same order.
  std::uint64_t barriers = 0;
  std::uint64_t nccl_ids = 0;
  std::uint64_t nccl_comms = 0;
  std::uint64_t gloo_contexts = 0;

  WorldState(Identity identity, WorldOptions opts, rendezvous::StoreClient store,
             std::string prefix)
      : id(std::move(identity)), options(opts), keys{std::move(prefix)}, client(std::move(store)) {}

  /// An Error with this rank's context.
  Error error(ErrorKind kind, std::string_view operation, std::string cause,
              std::string_view hint = {}) const {
    return make_error(kind, &id, operation, std::move(cause), hint);
  }

  /// Runs a store call, turning StoreTimeout/StoreError into Error(timeout/store).
  template <class F>
  auto store_call(std::string_view operation, F&& call) -> decltype(call()) {
    try {
      return call();
    } catch (const rendezvous::StoreTimeout& e) {
      throw error(ErrorKind::timeout, operation, e.what(),
                  "a peer rank may have died or not reached this call; see the launcher's "
                  "report, or raise XLAUNCH_CLIENT_TIMEOUT");
    } catch (const rendezvous::StoreError& e) {
      throw error(ErrorKind::store, operation, e.what(),
                  "is the launcher (MASTER_ADDR:MASTER_PORT) still running?");
    }
  }
};

/// Constructs Worlds from state (from_env, the unit tests).
class WorldAccess {
 public:
  static World make(std::unique_ptr<WorldState> state) { return World(std::move(state)); }
  static WorldState& state(World& world) { return *world.state_; }
};

/// Connects to id.master_addr:master_port and builds the World (from_env after parsing).
World connect_world(Identity id, const WorldOptions& options);

/// A barrier that also agrees on failure: every rank reports `local_error` (nullopt when it
/// is fine) under `root`; returns the first failure any rank reported, or nullopt when all
/// succeeded. A rank with a local error returns it at once without waiting for the others,
/// and never lets a store failure hide it.
std::optional<std::string> agree(WorldState& state, const std::string& root,
                                 std::optional<std::string> local_error,
                                 std::chrono::milliseconds timeout, std::string_view operation);

}  // namespace xlaunch::detail
