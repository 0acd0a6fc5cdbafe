// World and Store: identity accessors, the store wrapper and barriers.
#include <fmt/core.h>

#include <algorithm>

#include "client/world_state.hpp"
#include "rendezvous/wire_codec.hpp"

namespace xlaunch {

Error::Error(ErrorKind kind, int rank, const std::string& message, std::string cause)
    : std::runtime_error(message), kind_(kind), rank_(rank), cause_(std::move(cause)) {}

// ---- Store

namespace {

// The launcher's store closes a connection whose request is over its limits (a SET has no
// reply, so the caller would learn of it only at its next call, on a connection that is then
// gone): such a request is refused here, and the World stays usable.
constexpr std::size_t kMaxKeyBytes = rendezvous::CodecLimits{}.max_key_bytes;
constexpr std::size_t kMaxValueBytes = rendezvous::CodecLimits{}.max_value_bytes;

void check_sizes(const detail::WorldState& state, std::string_view operation, std::string_view key,
                 std::string_view value = {}) {
  if (key.size() > kMaxKeyBytes) {
    throw state.error(ErrorKind::invalid_argument, operation,
                      fmt::format("a key of {} bytes; the store takes keys of up to {}", key.size(),
                                  kMaxKeyBytes));
  }
  if (value.size() > kMaxValueBytes) {
    throw state.error(ErrorKind::invalid_argument, operation,
                      fmt::format("a value of {} bytes; the store takes values of up to {}",
                                  value.size(), kMaxValueBytes),
                      "keep large data out of the store (a file every rank can read)");
  }
}

}  // namespace

void Store::set(std::string_view key, std::string_view value) {
  check_sizes(*state_, "store.set", key, value);
  state_->store_call("store.set", [&] { state_->client.set(key, value); });
}

std::string Store::get(std::string_view key) { return get(key, timeout()); }

std::string Store::get(std::string_view key, std::chrono::milliseconds timeout) {
  check_sizes(*state_, "store.get", key);
  return state_->store_call("store.get", [&] { return state_->client.get(key, timeout); });
}

std::int64_t Store::add(std::string_view key, std::int64_t delta) {
  check_sizes(*state_, "store.add", key);
  return state_->store_call("store.add", [&] { return state_->client.add(key, delta); });
}

void Store::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  for (const std::string& key : keys) check_sizes(*state_, "store.wait", key);
  state_->store_call("store.wait", [&] { state_->client.wait(keys, timeout); });
}

void Store::wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }

bool Store::check(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) check_sizes(*state_, "store.check", key);
  return state_->store_call("store.check", [&] { return state_->client.check(keys); });
}

bool Store::remove(std::string_view key) {
  check_sizes(*state_, "store.remove", key);
  return state_->store_call("store.remove", [&] { return state_->client.remove(key); });
}

std::chrono::milliseconds Store::timeout() const { return state_->options.timeout; }

// ---- World

World::World(std::unique_ptr<detail::WorldState> state)
    : state_(std::move(state)), store_(state_.get()) {}

World::World(World&& other) noexcept : state_(std::move(other.state_)), store_(state_.get()) {}

World& World::operator=(World&& other) noexcept {
  state_ = std::move(other.state_);
  store_.state_ = state_.get();
  return *this;
}

World::~World() = default;

World World::from_env(const WorldOptions& options) {
  return detail::connect_world(detail::parse_identity(detail::process_env()), options);
}

int World::rank() const { return state_->id.rank; }
int World::size() const { return state_->id.size; }
int World::local_rank() const { return state_->id.local_rank; }
int World::local_size() const { return state_->id.local_size; }
int World::node_rank() const { return state_->id.node_rank; }
int World::cuda_device() const { return state_->id.local_rank; }
const std::string& World::run_id() const { return state_->id.run_id; }
int World::restart_count() const { return state_->id.restart_count; }
const std::string& World::key_prefix() const { return state_->keys.prefix; }
Store& World::store() { return store_; }

void World::barrier() { barrier(state_->options.timeout); }

void World::barrier(std::chrono::milliseconds timeout) {
  detail::WorldState& st = *state_;
  const std::uint64_t generation = st.barriers++;
  const std::string arrived = st.keys.barrier_arrived(generation);
  const std::string done = st.keys.barrier_done(generation);
  const std::string operation = fmt::format("barrier #{}", generation);
  st.store_call(operation, [&] {
    if (st.client.add(arrived, 1) == st.id.size) {
      st.client.set(done, "1");
      // Every rank has left the previous barrier once all have reached this one, so its
      // keys can go: the store holds two keys per World, however many barriers run.
      if (generation > 0) {
        st.client.remove(st.keys.barrier_arrived(generation - 1));
        st.client.remove(st.keys.barrier_done(generation - 1));
      }
    }
    try {
      st.client.wait({done}, timeout);
    } catch (const rendezvous::StoreTimeout&) {
      std::int64_t count = st.client.add(arrived, 0);
      throw st.error(
          ErrorKind::timeout, operation,
          fmt::format("{} of {} ranks arrived within {} ms", count, st.id.size, timeout.count()),
          "a rank died or is stuck before this barrier; see the launcher's report");
    }
  });
}

namespace detail {

World connect_world(Identity id, const WorldOptions& options) {
  WorldOptions effective = options;
  if (id.timeout) {
    // One knob for a job that must fail fast: it bounds connecting too.
    effective.timeout = *id.timeout;
    effective.connect_timeout = std::min(effective.connect_timeout, *id.timeout);
  }
  rendezvous::ClientOptions client_options;
  client_options.host = id.master_addr;
  client_options.port = id.master_port;
  client_options.connect_timeout = effective.connect_timeout;
  client_options.timeout = effective.timeout;
  try {
    rendezvous::StoreClient client = rendezvous::StoreClient::connect(client_options);
    // The n-th World a rank makes in this attempt meets the other ranks' n-th: its barriers
    // and ids must not find the keys an earlier World left (`sh -c './prep && ./train'`).
    const std::string attempt = key_prefix(id.run_id, id.restart_count);
    const std::int64_t number = client.add(world_counter_key(attempt, id.rank), 1);
    return WorldAccess::make(std::make_unique<WorldState>(
        std::move(id), effective, std::move(client), world_prefix(attempt, number)));
  } catch (const rendezvous::StoreError& e) {
    throw make_error(ErrorKind::store, &id, "World::from_env", e.what(),
                     "MASTER_ADDR:MASTER_PORT must be the launcher's store; is it running?");
  }
}

std::optional<std::string> agree(WorldState& st, const std::string& root,
                                 std::optional<std::string> local_error,
                                 std::chrono::milliseconds timeout, std::string_view operation) {
  const std::string arrived = root + "arrived";
  const std::string ready = root + "ready";
  const std::string failed = root + "error";
  if (local_error) {
    try {
      st.client.set(failed, fmt::format("rank {}: {}", st.id.rank, *local_error));
      if (st.client.add(arrived, 1) == st.id.size) st.client.set(ready, "1");
    } catch (const rendezvous::StoreError&) {
      // The local failure is what the user must see; the peers time out on their own.
    }
    return local_error;
  }
  return st.store_call(operation, [&]() -> std::optional<std::string> {
    if (st.client.add(arrived, 1) == st.id.size) st.client.set(ready, "1");
    st.client.wait({ready}, timeout);
    if (st.client.check({failed})) return st.client.get(failed, timeout);
    return std::nullopt;
  });
}

}  // namespace detail
}  // namespace xlaunch
