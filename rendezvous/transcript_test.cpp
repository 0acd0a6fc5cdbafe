// Byte sequences recorded from PyTorch 1.13.1 on the wire (tcpstore-protocol.md Appendix A)
// and derived from the 2.x source (Appendix B), replayed through the decoder and the
// store: every reply must match byte for byte. This is how 2.1 and 2.2+ are tested here.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "rendezvous/store_state.hpp"
#include "rendezvous/wire_codec.hpp"

using namespace xlaunch::rendezvous;

namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  int hi = -1;
  for (char c : hex) {
    int v = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (v < 0) continue;  // spaces separate fields
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<char>(hi * 16 + v));
      hi = -1;
    }
  }
  REQUIRE(hi < 0);
  return out;
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// The server's request path without sockets: per-connection decoders over one store.
class Wire {
 public:
  explicit Wire(Dialect legacy_default = Dialect::D0) : legacy_default_(legacy_default) {}

  // Sends `in` (hex) on connection `conn`; returns what that connection receives (hex),
  // including bytes pushed to it by its own requests' effects.
  std::string send(ConnId conn, std::string_view in) {
    auto [it, fresh] = decoders_.try_emplace(conn, CodecLimits{}, legacy_default_);
    RequestDecoder& dec = it->second;
    std::string& buf = buffers_[conn];
    buf += unhex(in);
    std::string reply;
    for (;;) {
      Request r;
      DecodeResult res =
          dec.decode({reinterpret_cast<const std::uint8_t*>(buf.data()), buf.size()}, r);
      if (res.status == DecodeStatus::NeedMore) break;
      if (res.status == DecodeStatus::Malformed) {
        closed_[conn] = dec.error();
        buf.clear();
        break;
      }
      Effects fx;
      std::string error;
      if (!state_.apply(conn, dec.dialect(), r, reply, fx, error)) {
        closed_[conn] = error;
        buf.clear();
        break;
      }
      buf.erase(0, res.size);
      for (ConnId w : fx.woken) pushed_[w] += std::string(1, '\0');
      for (auto& [c, bytes] : fx.notifications) pushed_[c] += *bytes;
    }
    return hex(reply + take_pushed(conn));
  }
  // Bytes pushed to `conn` by other connections' requests (STOP_WAITING, watch events).
  std::string take_pushed(ConnId conn) {
    std::string out = std::move(pushed_[conn]);
    pushed_.erase(conn);
    return out;
  }
  std::string pushed_hex(ConnId conn) { return hex(take_pushed(conn)); }
  bool closed(ConnId conn) const { return closed_.count(conn) > 0; }
  std::string why(ConnId conn) const { return closed_.count(conn) ? closed_.at(conn) : ""; }
  const StoreState& state() const { return state_; }

 private:
  Dialect legacy_default_;
  StoreState state_;
  std::map<ConnId, RequestDecoder> decoders_;
  std::map<ConnId, std::string> buffers_;
  std::map<ConnId, std::string> pushed_;
  std::map<ConnId, std::string> closed_;
};

std::string h(std::string_view s) { return hex(unhex(s)); }

}  // namespace

TEST_CASE("Appendix A: torch 1.13.1 session replayed byte for byte", "[transcript][d0]") {
  Wire w;
  const ConnId c = 1, other = 2, watcher = 3;
  CHECK(w.send(c, "03 0500000000000000 696e69742f 0100000000000000") == h("0100000000000000"));
  CHECK(w.send(other, "03 0500000000000000 696e69742f 0100000000000000") == h("0200000000000000"));
  CHECK(w.send(c, "00 0300000000000000 2f6b31 0200000000000000 7631") == "");
  CHECK(w.send(c, "05 0100000000000000 0300000000000000 2f6b31") == "00");
  CHECK(w.send(c, "02 0300000000000000 2f6b31") == h("0200000000000000 7631"));
  CHECK(w.send(c, "03 0400000000000000 2f637472 0500000000000000") == h("0500000000000000"));
  CHECK(w.send(c, "03 0400000000000000 2f637472 feffffffffffffff") == h("0300000000000000"));
  CHECK(w.send(c, "02 0400000000000000 2f637472") == h("0100000000000000 33"));
  CHECK(w.send(c, "01 0300000000000000 2f6373 0000000000000000 0300000000000000 6e6577") ==
        h("0300000000000000 6e6577"));
  // compare_set("cs","new","x") / ("cs","bad","y") / ("missing","abc","d")
  CHECK(w.send(c, "01 0300000000000000 2f6373 0300000000000000 6e6577 0100000000000000 78") ==
        h("0100000000000000 78"));
  CHECK(w.send(c, "01 0300000000000000 2f6373 0300000000000000 626164 0100000000000000 79") ==
        h("0100000000000000 78"));
  CHECK(
      w.send(c,
             "01 0800000000000000 2f6d697373696e67 0300000000000000 616263 0100000000000000 64") ==
      h("0300000000000000 616263"));
  CHECK(w.send(c, "06") == h("0400000000000000"));  // init/, /k1, /ctr, /cs
  CHECK(w.send(c, "08 0300000000000000 2f6b31") == h("0100000000000000"));
  CHECK(w.send(c, "08 0300000000000000 2f6b31") == h("0000000000000000"));
  // CHECK probes
  CHECK(w.send(c, "00 0300000000000000 2f6b31 0200000000000000 7631") == "");
  CHECK(w.send(c, "04 0200000000000000 0300000000000000 2f6b31 0500000000000000 2f6e6f7065") ==
        "01");
  CHECK(w.send(c, "04 0100000000000000 0300000000000000 2f6b31") == "00");
  CHECK(w.send(c, "04 0000000000000000") == "00");
  // wait(["later","ctr"]) released by another client's SET of /later
  CHECK(w.send(c, "05 0200000000000000 0600000000000000 2f6c61746572 0400000000000000 2f637472") ==
        "");
  CHECK(w.send(other, "00 0600000000000000 2f6c61746572 0100000000000000 31") == "");
  CHECK(w.pushed_hex(c) == "00");
  // wait(["never"]) times out client-side (nothing sent); the later SET still releases it:
  // the stale 00 is the reference's behaviour and is mimicked.
  CHECK(w.send(c, "05 0100000000000000 0600000000000000 2f6e65766572") == "");
  CHECK(w.send(other, "00 0600000000000000 2f6e65766572 0000000000000000") == "");
  CHECK(w.pushed_hex(c) == "00");
  // WATCH_KEY on a 2nd socket, then create / update / delete from another
  CHECK(w.send(watcher, "07 0300000000000000 2f776b") == "03");
  CHECK(w.send(other, "00 0300000000000000 2f776b 0100000000000000 61") == "");
  CHECK(w.pushed_hex(watcher) ==
        h("01 0300000000000000 2f776b 0000000000000000 0100000000000000 61"));
  CHECK(w.send(other, "00 0300000000000000 2f776b 0200000000000000 6262") == "");
  CHECK(w.pushed_hex(watcher) ==
        h("00 0300000000000000 2f776b 0100000000000000 61 0200000000000000 6262"));
  CHECK(w.send(other, "08 0300000000000000 2f776b") == h("0100000000000000"));
  CHECK(w.pushed_hex(watcher) ==
        h("02 0300000000000000 2f776b 0200000000000000 6262 0000000000000000"));
  // SET + GET pipelined in one segment
  CHECK(w.send(c, "00 0300000000000000 2f7070 0100000000000000 7a 02 0300000000000000 2f7070") ==
        h("0100000000000000 7a"));
  CHECK_FALSE(w.closed(c));
}

TEST_CASE("Appendix A: what closes a 1.13 connection", "[transcript][d0]") {
  Wire w;
  SECTION("code 0x0D") {
    w.send(1, "0d");
    CHECK(w.closed(1));
  }
  SECTION("GET of a missing key without WAIT") {
    w.send(1, "02 0300000000000000 2f6e6f");
    CHECK(w.closed(1));
  }
  SECTION("ADD onto v1") {
    w.send(2, "00 0300000000000000 2f6b31 0200000000000000 7631");
    w.send(1, "03 0300000000000000 2f6b31 0100000000000000");
    CHECK(w.closed(1));
    CHECK_FALSE(w.closed(2));
    CHECK(w.state().value("/k1") == "v1");
  }
}

TEST_CASE("init/ counts every client store object", "[transcript][d0]") {
  Wire w;
  CHECK(w.send(1, "03 0500000000000000 696e69742f 0100000000000000") == h("0100000000000000"));
  CHECK(w.send(2, "03 0500000000000000 696e69742f 0100000000000000") == h("0200000000000000"));
  CHECK(w.state().value("init/") == "2");
}

TEST_CASE("Appendix B: 2.2+ handshake, PING, init/, get, CANCEL_WAIT", "[transcript][d2]") {
  Wire w;
  const ConnId c = 1, other = 2;
  CHECK(w.send(c, "00 CEF7853C") == "");
  CHECK(w.send(c, "0D 39300000") == "39300000");  // PING echoes the nonce (pid 12345)
  CHECK(w.send(c, "04 0500000000000000 696e69742f 0100000000000000") == h("0100000000000000"));
  CHECK(w.send(other, "00 CEF7853C 0D 01000000") == "01000000");
  CHECK(w.send(other, "01 0200000000000000 2f6b 0100000000000000 76") == "");  // SET /k v
  CHECK(w.send(c, "06 0100000000000000 0200000000000000 2f6b") == "00");
  CHECK(w.send(c, "03 0200000000000000 2f6b") == h("0100000000000000 76"));
  // wait timeout: CANCEL_WAIT -> 01
  CHECK(w.send(c, "06 0100000000000000 0200000000000000 2f7a") == "");
  CHECK(w.send(c, "0C") == "01");
  CHECK(w.send(other, "01 0200000000000000 2f7a 0000000000000000") == "");
  CHECK(w.pushed_hex(c) == "");  // cancelled: nothing stale arrives
  // raced: STOP_WAITING already queued, then the cancel: the client reads 00 01
  CHECK(w.send(c, "06 0100000000000000 0200000000000000 2f79") == "");
  CHECK(w.send(other, "01 0200000000000000 2f79 0000000000000000") == "");
  std::string stale = w.pushed_hex(c);
  CHECK(stale + w.send(c, "0C") == "0001");
  // GET of a missing key on 2.2+: empty value (libuv behaviour), connection stays
  CHECK(w.send(c, "03 0200000000000000 2f3f") == h("0000000000000000"));
  CHECK_FALSE(w.closed(c));
}

TEST_CASE("2.2+: APPEND, MULTI_*, queues, LIST, DELETE", "[transcript][d2]") {
  Wire w;
  const ConnId c = 1, popper = 2;
  CHECK(w.send(c, "00 CEF7853C") == "");
  CHECK(w.send(popper, "00 CEF7853C") == "");
  CHECK(w.send(c, "09 0200000000000000 2f61 0100000000000000 78") == "");  // APPEND /a x
  CHECK(w.send(c, "09 0200000000000000 2f61 0100000000000000 79") == "");  // APPEND /a y
  // MULTI_SET 2 pairs, MULTI_GET them back
  CHECK(w.send(c,
               "0B 0200000000000000 0200000000000000 2f62 0100000000000000 31 "
               "0200000000000000 2f63 0000000000000000") == "");
  CHECK(w.send(c,
               "0A 0300000000000000 0200000000000000 2f61 0200000000000000 2f62 "
               "0200000000000000 2f63") ==
        h("0200000000000000 7879 0100000000000000 31 0000000000000000"));
  // queue: a blocked pop WAITs on the key; one push wakes exactly one waiter
  CHECK(w.send(popper, "06 0100000000000000 0200000000000000 2f71") == "");
  CHECK(w.send(c, "0F 0200000000000000 2f71") == h("0000000000000000"));     // POP empty -> 0
  CHECK(w.send(c, "0E 0200000000000000 2f71 0200000000000000 6a31") == "");  // PUSH j1
  CHECK(w.pushed_hex(popper) == "00");
  CHECK(w.send(c, "05 0100000000000000 0200000000000000 2f71") == "00");  // CHECK counts queues
  CHECK(w.send(c, "10 0200000000000000 2f71") == h("0100000000000000"));  // LEN
  CHECK(w.send(popper, "0F 0200000000000000 2f71") == h("0100000000000000 0200000000000000 6a31"));
  CHECK(w.send(c, "07") == h("0300000000000000"));  // GETNUMKEYS excludes queues
  CHECK(w.send(c, "08 0200000000000000 2f62") == h("0100000000000000"));  // DELETE /b
  std::string list = w.send(c, "11");
  CHECK(list.substr(0, 16) == h("0200000000000000"));
  CHECK(list.size() == 2 * (8 + 2 * (8 + 2)));
}

TEST_CASE("2.1 (D1) numbering on a legacy connection", "[transcript][d1]") {
  SECTION("pinned by CANCEL_WAIT (11) under the 1.13 default") {
    Wire w;
    CHECK(w.send(1, "00 0200000000000000 2f6b 0100000000000000 76") == "");
    CHECK(w.send(1, "0B") == "01");
    CHECK(w.send(1, "07 0200000000000000 2f6b") == h("0100000000000000"));   // DELETE_KEY
    CHECK(w.send(1, "08 0200000000000000 2f6c 0100000000000000 61") == "");  // APPEND
    CHECK(w.send(1, "09 0100000000000000 0200000000000000 2f6c") == h("0100000000000000 61"));
  }
  SECTION("--legacy_dialect 2.1 from the first request") {
    Wire w(Dialect::D1);
    CHECK(w.send(1, "03 0500000000000000 696e69742f 0100000000000000") == h("0100000000000000"));
    CHECK(w.send(1, "07 0500000000000000 696e69742f") == h("0100000000000000"));
    CHECK(w.send(1, "06") == h("0000000000000000"));
  }
  SECTION("MULTI_GET of a missing key closes (legacy server)") {
    Wire w;
    w.send(1, "09 0100000000000000 0200000000000000 2f7a");
    CHECK(w.closed(1));
  }
}
