// A blocking client for the store (PyTorch TCPStore protocol, 2.2+ dialect with VALIDATE
// and PING). One request in flight per client; not thread-safe: use one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rendezvous/store_error.hpp"

namespace xlaunch::rendezvous {

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  /// How long connect() keeps retrying (backoff with jitter) before it gives up.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};
  /// Default timeout of every blocking call (get, wait) that is given none.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  /// Asked between connect attempts: true ends the retries at once (a launcher's Ctrl-C).
  std::function<bool()> give_up;
};

class StoreClient {
 public:
  /// Connects (retrying refused/unreachable until options.connect_timeout) and does the
  /// VALIDATE + PING handshake. Throws StoreError naming host:port, attempts and cause.
  static StoreClient connect(const ClientOptions& options);

  StoreClient(StoreClient&&) noexcept;
  StoreClient& operator=(StoreClient&&) noexcept;
  ~StoreClient();

  /// Keys are sent exactly as given (no "/" prefix is added). Values are raw bytes.
  void set(std::string_view key, std::string_view value);
  /// Blocks until the key exists (WAIT then GET); throws StoreTimeout after `timeout`.
  std::string get(std::string_view key);
  std::string get(std::string_view key, std::chrono::milliseconds timeout);
  /// Adds to a decimal counter (absent = 0) and returns the new value; add(k, 0) reads it.
  std::int64_t add(std::string_view key, std::int64_t delta);
  /// PyTorch semantics: returns the value stored after the operation.
  std::string compare_set(std::string_view key, std::string_view expected,
                          std::string_view desired);
  /// Blocks until every key exists; throws StoreTimeout after `timeout` (and cancels the
  /// server-side wait so the connection stays usable).
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  void wait(const std::vector<std::string>& keys);
  /// True when every key exists now. Never blocks on the server.
  bool check(const std::vector<std::string>& keys);
  /// True when the key existed.
  bool remove(std::string_view key);
  std::int64_t num_keys();
  std::vector<std::string> multi_get(const std::vector<std::string>& keys);
  void multi_set(const std::vector<std::pair<std::string, std::string>>& pairs);
  void append(std::string_view key, std::string_view value);
  /// Sends PING with a nonce and checks the echo (liveness probe).
  void ping();

  const ClientOptions& options() const;

 private:
  struct Impl;
  explicit StoreClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::rendezvous
