// StoreClient: blocking, one request in flight, speaks the 2.2+ dialect (VALIDATE + PING).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "rendezvous/socket_posix.hpp"
#include "rendezvous/store_client.hpp"
#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous {
namespace {

using std::chrono::milliseconds;

// Replies above this are not something our server sends; treat them as corruption.
constexpr std::uint64_t kMaxReplyBytes = std::uint64_t{1} << 32;
constexpr milliseconds kFirstBackoff{10};
constexpr milliseconds kMaxBackoff{1000};
// How long a timed-out wait gives the server to acknowledge CANCEL_WAIT.
constexpr milliseconds kCancelGrace{5000};

// A key in a message: the start of a long one (a message must not grow with the key).
std::string shown_key(std::string_view key) {
  constexpr std::size_t kShown = 200;
  if (key.size() <= kShown) return std::string(key);
  return fmt::format("{}... ({} bytes)", key.substr(0, kShown), key.size());
}

std::string quoted_keys(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size() && i < 4; ++i) {
    out += fmt::format("{}\"{}\"", i ? ", " : "", shown_key(keys[i]));
  }
  if (keys.size() > 4) out += fmt::format(", ... ({} keys)", keys.size());
  return out + "]";
}

// Designated initializers would trip -Wmissing-field-initializers on the vectors.
Request request(Op op, std::string_view key = {}, std::string_view value = {}) {
  Request r;
  r.op = op;
  r.key = key;
  r.value = value;
  return r;
}

std::uint32_t random_u32() {
  static thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  return static_cast<std::uint32_t>(rng());
}

}  // namespace

struct StoreClient::Impl {
  ClientOptions options;
  Socket socket;
  std::string broken;  // non-empty: an earlier failure left the stream out of step
  std::string out;

  std::string where() const { return fmt::format("store {}:{}", options.host, options.port); }

  [[noreturn]] void fail(const std::string& what, const IoStatus& st) {
    broken = fmt::format("{} failed ({})", what, st.describe());
    socket.close();
    std::string msg = fmt::format("{}: {}: {}", where(), what, st.describe());
    if (st.code == IoStatus::Timeout) throw StoreTimeout(msg);
    throw StoreError(msg);
  }

  void check_usable(const std::string& what) {
    if (!broken.empty()) {
      throw StoreError(fmt::format("{}: {}: connection unusable since {}; connect again", where(),
                                   what, broken));
    }
  }

  // Saturating: a huge timeout (INT64_MAX ms, "wait for ever") must not wrap into the past.
  Clock::time_point deadline(milliseconds t) const {
    const Clock::time_point now = Clock::now();
    const auto room = std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - now);
    return t >= room ? Clock::time_point::max() : now + t;
  }

  // Encodes and sends one request (the caller then reads its reply).
  void send(const std::string& what, const Request& r, Clock::time_point dl) {
    check_usable(what);
    out.clear();
    encode_request(out, Dialect::D2, r);
    if (IoStatus st = socket.send_all(out.data(), out.size(), dl); !st.ok()) fail(what, st);
  }

  void recv(const std::string& what, void* p, std::size_t n, Clock::time_point dl) {
    if (IoStatus st = socket.recv_exact(p, n, dl); !st.ok()) fail(what, st);
  }
  std::uint8_t read_u8(const std::string& what, Clock::time_point dl) {
    std::uint8_t v = 0;
    recv(what, &v, 1, dl);
    return v;
  }
  std::int64_t read_i64(const std::string& what, Clock::time_point dl) {
    std::uint8_t b[8];
    recv(what, b, 8, dl);
    return static_cast<std::int64_t>(load_u64(b));
  }
  std::string read_bytes(const std::string& what, Clock::time_point dl) {
    std::uint8_t b[8];
    recv(what, b, 8, dl);
    std::uint64_t len = load_u64(b);
    if (len > kMaxReplyBytes) {
      fail(what, {IoStatus::Error, EPROTO});
    }
    // Grow with the bytes that actually arrive, so a corrupt length cannot make us
    // allocate gigabytes up front.
    constexpr std::size_t kChunk = 1 << 20;
    std::string value;
    while (value.size() < len) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, len - value.size()));
      std::size_t old = value.size();
      value.resize(old + n);
      recv(what, value.data() + old, n, dl);
    }
    return value;
  }

  // Connects and handshakes once; empty string on success, else the cause.
  std::string try_connect(Clock::time_point dl) {
    std::string cause;
    Socket s = Socket::connect(options.host, options.port, dl, cause);
    if (!s.valid()) return cause;
    Request validate = request(Op::Validate);
    validate.word = kValidateMagic;
    Request ping = request(Op::Ping);
    ping.word = random_u32();
    std::string hello;
    encode_request(hello, Dialect::D2, validate);
    encode_request(hello, Dialect::D2, ping);
    if (IoStatus st = s.send_all(hello.data(), hello.size(), dl); !st.ok()) {
      return "handshake: " + st.describe();
    }
    std::uint8_t echo[4];
    if (IoStatus st = s.recv_exact(echo, 4, dl); !st.ok()) {
      // A 1.13-2.1 server reads our VALIDATE as a SET and drops us.
      return fmt::format("handshake: {} (is it a PyTorch store older than 2.2?)", st.describe());
    }
    if (load_u32(echo) != ping.word) return "handshake: PING echo does not match (not a store?)";
    socket = std::move(s);
    return {};
  }
};

StoreClient StoreClient::connect(const ClientOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  const auto start = Clock::now();
  const auto dl = start + options.connect_timeout;
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  milliseconds backoff = kFirstBackoff;
  for (int attempt = 1;; ++attempt) {
    std::string cause = impl->try_connect(dl);
    if (cause.empty()) return StoreClient(std::move(impl));
    auto now = Clock::now();
    if (now >= dl || (options.give_up && options.give_up())) {
      throw StoreError(fmt::format(
          "connect {}:{}: {} after {} attempt{} in {} ms (timeout {} ms); is the store running "
          "and reachable?",
          options.host, options.port, cause, attempt, attempt == 1 ? "" : "s",
          std::chrono::duration_cast<milliseconds>(now - start).count(),
          options.connect_timeout.count()));
    }
    // Exponential backoff with jitter, so many workers do not retry in lockstep.
    auto sleep = std::chrono::duration_cast<milliseconds>(backoff * jitter(rng));
    std::this_thread::sleep_for(std::min<Clock::duration>(sleep, dl - now));
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

StoreClient::StoreClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StoreClient::StoreClient(StoreClient&&) noexcept = default;
StoreClient& StoreClient::operator=(StoreClient&&) noexcept = default;
StoreClient::~StoreClient() = default;

const ClientOptions& StoreClient::options() const { return impl_->options; }

void StoreClient::set(std::string_view key, std::string_view value) {
  std::string what = fmt::format("set \"{}\"", shown_key(key));
  Request r = request(Op::Set, key, value);
  impl_->send(what, r, impl_->deadline(impl_->options.timeout));
}

std::string StoreClient::get(std::string_view key) { return get(key, impl_->options.timeout); }

std::string StoreClient::get(std::string_view key, std::chrono::milliseconds timeout) {
  wait({std::string(key)}, timeout);
  std::string what = fmt::format("get \"{}\"", shown_key(key));
  Request r = request(Op::Get, key);
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send(what, r, dl);
  return impl_->read_bytes(what, dl);
}

std::int64_t StoreClient::add(std::string_view key, std::int64_t delta) {
  std::string what = fmt::format("add \"{}\" {}", shown_key(key), delta);
  Request r = request(Op::Add, key);
  r.delta = delta;
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send(what, r, dl);
  try {
    return impl_->read_i64(what, dl);
  } catch (const StoreTimeout&) {
    throw;
  } catch (const StoreError& e) {
    // The store answers a bad ADD by closing the connection (as PyTorch's does): say the
    // likely reason, rather than only that the connection went.
    throw StoreError(
        fmt::format("{} (a store closes the connection of an ADD to a key that "
                    "holds something other than a 64-bit integer)",
                    e.what()));
  }
}

std::string StoreClient::compare_set(std::string_view key, std::string_view expected,
                                     std::string_view desired) {
  std::string what = fmt::format("compare_set \"{}\"", shown_key(key));
  Request r = request(Op::CompareSet, key, desired);
  r.expected = expected;
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send(what, r, dl);
  return impl_->read_bytes(what, dl);
}

void StoreClient::wait(const std::vector<std::string>& keys) { wait(keys, impl_->options.timeout); }

void StoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::string what = fmt::format("wait {}", quoted_keys(keys));
  Request r = request(Op::Wait);
  r.keys.assign(keys.begin(), keys.end());
  auto dl = impl_->deadline(timeout);
  impl_->send(what, r, dl);
  std::uint8_t reply = 0;
  IoStatus st = impl_->socket.recv_exact(&reply, 1, dl);
  if (st.ok()) {
    if (reply != kStopWaiting) impl_->fail(what, {IoStatus::Error, EPROTO});
    return;
  }
  if (st.code != IoStatus::Timeout) impl_->fail(what, st);
  // Cancel the parked wait so the connection stays in step. The server may have sent
  // STOP_WAITING just before seeing the cancel: then "00 01" arrives.
  Request cancel = request(Op::CancelWait);
  auto cancel_dl = impl_->deadline(kCancelGrace);
  impl_->send(what + " (cancel)", cancel, cancel_dl);
  do {
    reply = impl_->read_u8(what + " (cancel)", cancel_dl);
  } while (reply == kStopWaiting);
  if (reply != kWaitCanceled) impl_->fail(what + " (cancel)", {IoStatus::Error, EPROTO});
  throw StoreTimeout(
      fmt::format("{}: {}: timed out after {} ms", impl_->where(), what, timeout.count()));
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  std::string what = fmt::format("check {}", quoted_keys(keys));
  Request r = request(Op::Check);
  r.keys.assign(keys.begin(), keys.end());
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send(what, r, dl);
  return impl_->read_u8(what, dl) == kCheckReady;
}

bool StoreClient::remove(std::string_view key) {
  std::string what = fmt::format("delete \"{}\"", shown_key(key));
  Request r = request(Op::DeleteKey, key);
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send(what, r, dl);
  return impl_->read_i64(what, dl) == 1;
}

std::int64_t StoreClient::num_keys() {
  Request r = request(Op::NumKeys);
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send("num_keys", r, dl);
  return impl_->read_i64("num_keys", dl);
}

std::vector<std::string> StoreClient::multi_get(const std::vector<std::string>& keys) {
  wait(keys);
  std::string what = fmt::format("multi_get {}", quoted_keys(keys));
  Request r = request(Op::MultiGet);
  r.keys.assign(keys.begin(), keys.end());
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send(what, r, dl);
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) values.push_back(impl_->read_bytes(what, dl));
  return values;
}

void StoreClient::multi_set(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string what = fmt::format("multi_set ({} keys)", pairs.size());
  Request r = request(Op::MultiSet);
  for (const auto& [k, v] : pairs) {
    r.keys.push_back(k);
    r.values.push_back(v);
  }
  impl_->send(what, r, impl_->deadline(impl_->options.timeout));
}

void StoreClient::append(std::string_view key, std::string_view value) {
  std::string what = fmt::format("append \"{}\"", shown_key(key));
  Request r = request(Op::Append, key, value);
  impl_->send(what, r, impl_->deadline(impl_->options.timeout));
}

void StoreClient::ping() {
  Request r = request(Op::Ping);
  r.word = random_u32();
  auto dl = impl_->deadline(impl_->options.timeout);
  impl_->send("ping", r, dl);
  std::uint8_t echo[4];
  impl_->recv("ping", echo, 4, dl);
  if (load_u32(echo) != r.word) impl_->fail("ping", {IoStatus::Error, EPROTO});
}

}  // namespace xlaunch::rendezvous
