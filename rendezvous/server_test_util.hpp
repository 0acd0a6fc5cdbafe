// What the store server's tests share: a started server on a free loopback port, a raw
// connection for bytes the client library never sends, and request encoders.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "rendezvous/socket_posix.hpp"
#include "rendezvous/store_client.hpp"
#include "rendezvous/store_server.hpp"
#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous::testing {

using namespace std::chrono_literals;

struct Fixture {
  explicit Fixture(ServerOptions options = {})
      : server(ListeningSocket::bind("127.0.0.1", 0), std::move(options)) {
    server.start();
  }
  ClientOptions opts(std::chrono::milliseconds timeout = 10s) const {
    ClientOptions o;
    o.host = "127.0.0.1";
    o.port = server.port();
    o.connect_timeout = 10s;
    o.timeout = timeout;
    return o;
  }
  StoreClient client(std::chrono::milliseconds timeout = 10s) const {
    return StoreClient::connect(opts(timeout));
  }
  StoreServer server;
};

// A raw connection for speaking bytes the client library never sends.
struct Raw {
  explicit Raw(std::uint16_t port) {
    std::string cause;
    sock = Socket::connect("127.0.0.1", port, Clock::now() + 10s, cause);
    REQUIRE(sock.valid());
  }
  void send(const std::string& bytes) {
    REQUIRE(sock.send_all(bytes.data(), bytes.size(), Clock::now() + 10s).ok());
  }
  std::string recv(std::size_t n) {
    std::string out(n, '\0');
    IoStatus st = sock.recv_exact(out.data(), n, Clock::now() + 10s);
    REQUIRE(st.ok());
    return out;
  }
  // True when the server closed the connection (EOF or reset) before 10 s.
  bool closed_by_server() {
    char c;
    IoStatus st = sock.recv_exact(&c, 1, Clock::now() + 10s);
    return st.code == IoStatus::Eof || st.code == IoStatus::Error;
  }
  Socket sock;
};

inline std::string req(Dialect d, Op op, std::string_view key = {}, std::string_view value = {}) {
  Request r;
  r.op = op;
  r.key = key;
  r.value = value;
  std::string out;
  encode_request(out, d, r);
  return out;
}

inline std::string add_req(Dialect d, std::string_view key, std::int64_t delta) {
  Request r;
  r.op = Op::Add;
  r.key = key;
  r.delta = delta;
  std::string out;
  encode_request(out, d, r);
  return out;
}

// The 2.2+ handshake: a VALIDATE with the magic word, encoded.
inline std::string validate_req() {
  Request v;
  v.op = Op::Validate;
  v.word = kValidateMagic;
  std::string out;
  encode_request(out, Dialect::D2, v);
  return out;
}

inline std::string i64_bytes(std::int64_t v) {
  std::string s;
  put_i64(s, v);
  return s;
}

// Polls (no timing assumption) until `done` holds.
template <class Pred>
void wait_until(Pred done) {
  while (!done()) std::this_thread::sleep_for(1ms);
}

}  // namespace xlaunch::rendezvous::testing
