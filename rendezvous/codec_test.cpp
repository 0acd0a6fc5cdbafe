// The wire codec on its own: every request in every dialect, truncation at every byte,
// one byte at a time, pipelining, absurd lengths, unknown codes, dialect detection.
#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "rendezvous/wire_codec.hpp"

using namespace xlaunch::rendezvous;

namespace {

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string u64(std::uint64_t v) {
  std::string s;
  put_u64(s, v);
  return s;
}

std::string str(std::string_view v) {
  std::string s;
  put_bytes(s, v);
  return s;
}

std::string validate() { return std::string("\x00\xCE\xF7\x85\x3C", 5); }

// A sample of every op with arguments that exercise each field.
std::vector<Request> samples() {
  std::vector<Request> out;
  auto add = [&](Op op) -> Request& {
    out.emplace_back();
    out.back().op = op;
    return out.back();
  };
  Request& set = add(Op::Set);
  set.key = "/k1";
  set.value = std::string_view("v\0x", 3);
  Request& cas = add(Op::CompareSet);
  cas.key = "/cs";
  cas.expected = "";
  cas.value = "new";
  add(Op::Get).key = "/k1";
  Request& a = add(Op::Add);
  a.key = "init/";
  a.delta = -2;
  add(Op::Check).keys = {"/a", "", "/c"};
  add(Op::Wait).keys = {"/later", "/ctr"};
  add(Op::NumKeys);
  add(Op::WatchKey).key = "/wk";
  add(Op::DeleteKey).key = "/k1";
  Request& ap = add(Op::Append);
  ap.key = "/log";
  ap.value = "more";
  add(Op::MultiGet).keys = {"/m1", "/m2"};
  Request& ms = add(Op::MultiSet);
  ms.keys = {"/m1", "/m2"};
  ms.values = {"x", ""};
  add(Op::CancelWait);
  add(Op::Ping).word = 0x12345678;
  Request& qp = add(Op::QueuePush);
  qp.key = "/q";
  qp.value = "item";
  add(Op::QueuePop).key = "/q";
  add(Op::QueueLen).key = "/q";
  add(Op::List);
  add(Op::Wait).keys = {};
  return out;
}

void require_same(const Request& a, const Request& b) {
  REQUIRE(a.op == b.op);
  CHECK(a.key == b.key);
  CHECK(a.value == b.value);
  CHECK(a.expected == b.expected);
  CHECK(a.delta == b.delta);
  CHECK(a.word == b.word);
  CHECK(a.keys == b.keys);
  CHECK(a.values == b.values);
}

// A decoder already past detection for dialect d.
RequestDecoder decoder_for(Dialect d, CodecLimits limits = {}) {
  RequestDecoder dec(limits, d == Dialect::D1 ? Dialect::D1 : Dialect::D0);
  if (d == Dialect::D2) {
    Request r;
    std::string v = validate();
    REQUIRE(dec.decode(bytes(v), r).status == DecodeStatus::Complete);
    REQUIRE(dec.dialect() == Dialect::D2);
  }
  return dec;
}

}  // namespace

TEST_CASE("every request round-trips in every dialect that has it", "[codec]") {
  for (Dialect d : {Dialect::D0, Dialect::D1, Dialect::D2}) {
    for (const Request& sample : samples()) {
      if (!code_for_op(d, sample.op) || sample.op == Op::Validate) continue;
      INFO(dialect_name(d) << " " << op_name(sample.op));
      std::string wire;
      encode_request(wire, d, sample);
      RequestDecoder dec = decoder_for(d);
      Request got;
      DecodeResult res = dec.decode(bytes(wire), got);
      REQUIRE(res.status == DecodeStatus::Complete);
      CHECK(res.size == wire.size());
      require_same(got, sample);
    }
  }
}

TEST_CASE("truncated at every byte: NeedMore with an honest size hint", "[codec]") {
  for (Dialect d : {Dialect::D0, Dialect::D1, Dialect::D2}) {
    for (const Request& sample : samples()) {
      if (!code_for_op(d, sample.op)) continue;
      std::string wire;
      encode_request(wire, d, sample);
      INFO(dialect_name(d) << " " << op_name(sample.op) << " " << wire.size() << " bytes");
      for (std::size_t n = 0; n < wire.size(); ++n) {
        RequestDecoder dec = decoder_for(d);
        Request got;
        DecodeResult res = dec.decode(bytes(wire.substr(0, n)), got);
        INFO("prefix " << n);
        REQUIRE(res.status == DecodeStatus::NeedMore);
        CHECK(res.size > n);
        CHECK(res.size <= wire.size());
      }
    }
  }
}

TEST_CASE("pipelined requests, fed one byte at a time or all at once", "[codec]") {
  for (Dialect d : {Dialect::D0, Dialect::D1, Dialect::D2}) {
    std::string stream = d == Dialect::D2 ? validate() : std::string();
    std::vector<Request> expected;
    if (d == Dialect::D2) {
      expected.emplace_back();
      expected.back().op = Op::Validate;
      expected.back().word = kValidateMagic;
    }
    for (const Request& s : samples()) {
      // WATCH_KEY pins a legacy connection to 1.13, so D1's stream must not contain it.
      if (!code_for_op(d, s.op) || s.op == Op::Validate) continue;
      encode_request(stream, d, s);
      expected.push_back(s);
    }
    INFO(dialect_name(d));
    SECTION("one byte at a time") {
      RequestDecoder dec({}, d == Dialect::D1 ? Dialect::D1 : Dialect::D0);
      std::string buf;
      std::size_t next = 0, need = 1;
      Request got;
      for (char c : stream) {
        buf.push_back(c);
        if (buf.size() < need) continue;
        DecodeResult res = dec.decode(bytes(buf), got);
        REQUIRE(res.status != DecodeStatus::Malformed);
        if (res.status == DecodeStatus::NeedMore) {
          need = res.size;
          continue;
        }
        REQUIRE(res.size == buf.size());  // never completes before its last byte
        REQUIRE(next < expected.size());
        require_same(got, expected[next++]);
        buf.clear();
        need = 1;
      }
      CHECK(next == expected.size());
      CHECK(buf.empty());
    }
    SECTION("all in one segment") {
      RequestDecoder dec({}, d == Dialect::D1 ? Dialect::D1 : Dialect::D0);
      std::size_t pos = 0, next = 0;
      Request got;
      while (pos < stream.size()) {
        DecodeResult res = dec.decode(bytes(stream).subspan(pos), got);
        REQUIRE(res.status == DecodeStatus::Complete);
        require_same(got, expected[next++]);
        pos += res.size;
      }
      CHECK(next == expected.size());
    }
  }
}

TEST_CASE("dialect detection on the first bytes", "[codec][dialect]") {
  Request r;
  SECTION("VALIDATE + magic is 2.2+") {
    RequestDecoder dec;
    std::string v = validate();
    CHECK(dec.decode(bytes(v.substr(0, 1)), r).size == 5);
    DecodeResult res = dec.decode(bytes(v), r);
    CHECK(res.status == DecodeStatus::Complete);
    CHECK(r.op == Op::Validate);
    CHECK(dec.dialect() == Dialect::D2);
    // 0x0D is PING there.
    std::string ping("\x0d\x01\x02\x03\x04", 5);
    CHECK(dec.decode(bytes(ping), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::Ping);
  }
  SECTION("a legacy SET starting with 00 is not a handshake") {
    RequestDecoder dec;
    std::string set = std::string(1, '\0') + str("/k") + str("v");
    DecodeResult res = dec.decode(bytes(set), r);
    REQUIRE(res.status == DecodeStatus::Complete);
    CHECK(r.op == Op::Set);
    CHECK(r.key == "/k");
    CHECK(dec.dialect() == Dialect::Legacy);
  }
  SECTION("1.13 first request (ADD init/) is legacy; 7 and 8 follow the default") {
    RequestDecoder dec;
    std::string add = std::string(1, '\x03') + str("init/") + u64(1);
    REQUIRE(dec.decode(bytes(add), r).status == DecodeStatus::Complete);
    CHECK(dec.dialect() == Dialect::Legacy);
    std::string del = std::string(1, '\x08') + str("/k");
    REQUIRE(dec.decode(bytes(del), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::DeleteKey);
    std::string watch = std::string(1, '\x07') + str("/k");
    REQUIRE(dec.decode(bytes(watch), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::WatchKey);
    CHECK(dec.dialect() == Dialect::D0);  // pinned: WATCH_KEY exists only in 1.13
    std::string mget = std::string(1, '\x09') + u64(0);
    CHECK(dec.decode(bytes(mget), r).status == DecodeStatus::Malformed);
    CHECK_THAT(dec.error(), Catch::Contains("0x09") && Catch::Contains("1.13"));
  }
  SECTION("9, 10 or 11 pin a legacy connection to 2.1") {
    RequestDecoder dec;
    std::string cancel(1, '\x0b');
    REQUIRE(dec.decode(bytes(cancel), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::CancelWait);
    CHECK(dec.dialect() == Dialect::D1);
    std::string del = std::string(1, '\x07') + str("/k");
    REQUIRE(dec.decode(bytes(del), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::DeleteKey);
    std::string app = std::string(1, '\x08') + str("/k") + str("v");
    REQUIRE(dec.decode(bytes(app), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::Append);
  }
  SECTION("--legacy_dialect 2.1 reads 7 and 8 the 2.1 way from the start") {
    RequestDecoder dec({}, Dialect::D1);
    std::string del = std::string(1, '\x07') + str("/k");
    REQUIRE(dec.decode(bytes(del), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::DeleteKey);
    std::string app = std::string(1, '\x08') + str("/k") + str("v");
    REQUIRE(dec.decode(bytes(app), r).status == DecodeStatus::Complete);
    CHECK(r.op == Op::Append);
    CHECK(dec.dialect() == Dialect::D1);
  }
  SECTION("incomplete requests do not move the dialect") {
    RequestDecoder dec;
    std::string partial = std::string(1, '\x09') + u64(1);
    CHECK(dec.decode(bytes(partial), r).status == DecodeStatus::NeedMore);
    CHECK(dec.dialect() == Dialect::Undetected);
  }
}

TEST_CASE("unknown command codes per dialect are malformed", "[codec][dialect]") {
  Request r;
  for (int code = 0; code < 256; ++code) {
    std::string wire(1, static_cast<char>(code));
    wire += std::string(64, '\0');  // enough zeros for any fixed-size argument
    for (Dialect d : {Dialect::D0, Dialect::D1, Dialect::D2}) {
      RequestDecoder dec = decoder_for(d);
      if (d != Dialect::D2) {
        // Pin the legacy connection first (WATCH_KEY -> 1.13, CANCEL_WAIT -> 2.1).
        std::string pin =
            d == Dialect::D0 ? std::string(1, '\x07') + str("/w") : std::string(1, '\x0b');
        REQUIRE(dec.decode(bytes(pin), r).status == DecodeStatus::Complete);
        REQUIRE(dec.dialect() == d);
      }
      bool defined = op_for_code(d, static_cast<std::uint8_t>(code)).has_value() &&
                     !(d == Dialect::D2 && code == 0);
      INFO(dialect_name(d) << " code " << code);
      CHECK((dec.decode(bytes(wire), r).status != DecodeStatus::Malformed) == defined);
    }
  }
  // Legacy, not yet pinned: 12 and up are unknown to both 1.13 and 2.1.
  for (int code = 12; code < 256; ++code) {
    RequestDecoder dec;
    std::string wire(1, static_cast<char>(code));
    wire += std::string(32, '\0');
    CHECK(dec.decode(bytes(wire), r).status == DecodeStatus::Malformed);
  }
}

TEST_CASE("handshake with a wrong magic or a second VALIDATE", "[codec][dialect]") {
  Request r;
  SECTION("wrong magic reads as a legacy SET with an absurd key length") {
    RequestDecoder dec;
    std::string wire("\x00\xCE\xF7\x85\x3D\x00\x00\x00\x00", 9);
    CHECK(dec.decode(bytes(wire), r).status == DecodeStatus::Malformed);
    CHECK_THAT(dec.error(), Catch::Contains("max_key_bytes"));
  }
  SECTION("magic as the first byte (pre-release 2.2)") {
    RequestDecoder dec;
    std::string wire("\xCE\xF7\x85\x3C\x01", 5);
    CHECK(dec.decode(bytes(wire), r).status == DecodeStatus::Malformed);
  }
  SECTION("VALIDATE again later") {
    RequestDecoder dec = decoder_for(Dialect::D2);
    std::string v = validate();
    CHECK(dec.decode(bytes(v), r).status == DecodeStatus::Malformed);
    CHECK_THAT(dec.error(), Catch::Contains("first request"));
  }
}

TEST_CASE("absurd lengths are rejected before any allocation", "[codec][limits]") {
  CodecLimits lim;
  lim.max_key_bytes = 16;
  lim.max_value_bytes = 32;
  lim.max_keys_per_request = 4;
  lim.max_request_bytes = 1024;
  Request r;
  auto malformed = [&](Dialect d, const std::string& wire) {
    RequestDecoder dec = decoder_for(d, lim);
    return dec.decode(bytes(wire), r).status == DecodeStatus::Malformed;
  };
  const std::string set(1, '\x00'), get(1, '\x02'), wait(1, '\x05');
  for (std::uint64_t len :
       {std::uint64_t{17}, std::uint64_t{1} << 32, std::uint64_t{1} << 63, ~std::uint64_t{0}}) {
    INFO("length " << len);
    CHECK(malformed(Dialect::D0, get + u64(len)));
    CHECK(malformed(Dialect::D0, wait + u64(1) + u64(len)));
    CHECK(malformed(Dialect::D0, wait + u64(len)));  // key count
    if (len > 32) CHECK(malformed(Dialect::D0, set + str("/k") + u64(len)));
  }
  // Exactly at the limits is fine.
  CHECK_FALSE(malformed(Dialect::D0, get + str(std::string(16, 'k'))));
  CHECK_FALSE(malformed(Dialect::D0, set + str("k") + str(std::string(32, 'v'))));
  CHECK_FALSE(malformed(Dialect::D0, wait + u64(4)));
  CHECK(malformed(Dialect::D0, wait + u64(5)));
  // MULTI_SET count: negative and too many.
  const std::string mset(1, '\x0b');
  CHECK(malformed(Dialect::D2, mset + u64(~std::uint64_t{0})));
  CHECK(malformed(Dialect::D2, mset + u64(5)));
  // Many in-limit keys that add up past max_request_bytes.
  lim.max_keys_per_request = 1000;
  std::string many = wait + u64(1000);
  for (int i = 0; i < 100; ++i) many += str(std::string(16, 'k'));
  CHECK(malformed(Dialect::D0, many));
  // The error names the limit.
  RequestDecoder dec = decoder_for(Dialect::D0, lim);
  std::string huge = get + u64(~std::uint64_t{0});
  dec.decode(bytes(huge), r);
  CHECK_THAT(dec.error(), Catch::Contains("GET") && Catch::Contains("max_key_bytes"));
}

TEST_CASE("encoding an op the dialect lacks throws", "[codec]") {
  Request r;
  r.op = Op::Ping;
  std::string out;
  CHECK_THROWS_AS(encode_request(out, Dialect::D0, r), std::invalid_argument);
  r.op = Op::WatchKey;
  CHECK_THROWS_AS(encode_request(out, Dialect::D2, r), std::invalid_argument);
}

TEST_CASE("code tables match tcpstore-protocol.md section 2", "[dialect]") {
  CHECK(code_for_op(Dialect::D0, Op::WatchKey) == 7);
  CHECK(code_for_op(Dialect::D0, Op::DeleteKey) == 8);
  CHECK(code_for_op(Dialect::D1, Op::DeleteKey) == 7);
  CHECK(code_for_op(Dialect::D1, Op::CancelWait) == 11);
  CHECK(code_for_op(Dialect::D2, Op::Validate) == 0);
  CHECK(code_for_op(Dialect::D2, Op::Set) == 1);
  CHECK(code_for_op(Dialect::D2, Op::CancelWait) == 12);
  CHECK(code_for_op(Dialect::D2, Op::Ping) == 13);
  CHECK(code_for_op(Dialect::D2, Op::QueuePush) == 14);
  CHECK(code_for_op(Dialect::D2, Op::List) == 17);
  CHECK_FALSE(op_for_code(Dialect::D2, 18));
  for (int c = 0; c <= 6; ++c) {
    CHECK(op_for_code(Dialect::D0, c) == op_for_code(Dialect::D1, c));
    CHECK(op_for_code(Dialect::D1, c) == op_for_code(Dialect::D2, c + 1));
  }
}

namespace {

// List requests (CHECK, WAIT, MULTI_GET, MULTI_SET) of `n` keys in every dialect that has them.
std::vector<Request> list_samples(std::vector<std::string>& storage, std::size_t n) {
  storage.clear();
  storage.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) storage.push_back("/key/" + std::to_string(i));
  for (std::size_t i = 0; i < n; ++i) storage.push_back(i % 3 == 0 ? "" : "v" + std::to_string(i));
  std::vector<Request> out;
  for (Op op : {Op::Check, Op::Wait, Op::MultiGet, Op::MultiSet}) {
    Request& r = out.emplace_back();
    r.op = op;
    for (std::size_t i = 0; i < n; ++i) {
      r.keys.emplace_back(storage[i]);
      if (op == Op::MultiSet) r.values.emplace_back(storage[n + i]);
    }
  }
  return out;
}

// Decodes `wire[0, cut)` for each cut in turn, then all of it, each time from a fresh copy
// (the bytes move, as a growing connection buffer's do), resuming; checks every step
// against a decoder that restarts, and returns the final result.
DecodeResult decode_in_pieces(RequestDecoder& dec, RequestDecoder& ref, const std::string& wire,
                              const std::vector<std::size_t>& cuts, Request& got) {
  Request expected;
  DecodeResult res;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(wire.size());
  for (std::size_t end : ends) {
    std::vector<std::uint8_t> copy(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(end));
    res = dec.decode(copy, got, Resume::SamePrefix);
    DecodeResult want = ref.decode(copy, expected, Resume::No);
    REQUIRE(res.status == want.status);
    REQUIRE(res.size == want.size);
    if (res.status != DecodeStatus::NeedMore) {
      // `got` points into `copy`: compare before it goes.
      require_same(got, expected);
      return res;
    }
  }
  return res;
}

}  // namespace

TEST_CASE("a list request split at every point decodes as the whole buffer does",
          "[codec][resume]") {
  std::vector<std::string> storage;
  for (Dialect d : {Dialect::D0, Dialect::D1, Dialect::D2}) {
    for (const Request& sample : list_samples(storage, 3)) {
      if (!code_for_op(d, sample.op)) continue;
      std::string wire;
      encode_request(wire, d, sample);
      INFO(dialect_name(d) << " " << op_name(sample.op) << " " << wire.size() << " bytes");
      for (std::size_t i = 0; i <= wire.size(); ++i) {
        for (std::size_t j = i; j <= wire.size(); ++j) {
          INFO("cut at " << i << " and " << j);
          RequestDecoder dec = decoder_for(d), ref = decoder_for(d);
          Request got;
          DecodeResult res = decode_in_pieces(dec, ref, wire, {i, j}, got);
          REQUIRE(res.status == DecodeStatus::Complete);
          CHECK(res.size == wire.size());
          // The dialect moved on only now (D1's list codes pin a legacy connection).
          CHECK(dec.dialect() == ref.dialect());
        }
      }
      // One byte at a time, then the next request on the same decoder.
      RequestDecoder dec = decoder_for(d), ref = decoder_for(d);
      std::vector<std::size_t> every(wire.size());
      for (std::size_t i = 0; i < wire.size(); ++i) every[i] = i;
      Request got;
      REQUIRE(decode_in_pieces(dec, ref, wire, every, got).status == DecodeStatus::Complete);
      REQUIRE(decode_in_pieces(dec, ref, wire, {1, 9, 20}, got).status == DecodeStatus::Complete);
    }
  }
}

TEST_CASE("a list request trickled in small pieces has each field read once", "[codec][resume]") {
  constexpr std::size_t kKeys = 4000;
  std::vector<std::string> storage;
  for (const Request& sample : list_samples(storage, kKeys)) {
    INFO(op_name(sample.op));
    std::string wire;
    encode_request(wire, Dialect::D2, sample);
    const bool pairs = sample.op == Op::MultiSet;
    // Command byte, count, and a length and the bytes of each key (and value).
    const std::uint64_t fields = 2 + (pairs ? 4 : 2) * kKeys;
    auto trickle = [&](Resume resume, std::uint64_t& read, std::size_t& hint_after_count) {
      RequestDecoder dec = decoder_for(Dialect::D2);
      const std::uint64_t before = dec.fields_read();
      std::vector<std::uint8_t> buf;
      Request got;
      DecodeResult res;
      // 5 bytes per piece, decoding every time whatever the hint says (the worst case).
      for (std::size_t pos = 0; pos < wire.size(); pos += 5) {
        std::size_t end = std::min(wire.size(), pos + 5);
        buf.insert(buf.end(), wire.begin() + static_cast<std::ptrdiff_t>(pos),
                   wire.begin() + static_cast<std::ptrdiff_t>(end));
        buf.shrink_to_fit();  // move the bytes on every call
        res = dec.decode(buf, got, resume);
        if (end == 10) hint_after_count = res.size;
        if (end < wire.size()) REQUIRE(res.status == DecodeStatus::NeedMore);
      }
      REQUIRE(res.status == DecodeStatus::Complete);
      CHECK(res.size == wire.size());
      require_same(got, sample);
      read = dec.fields_read() - before;
    };
    std::uint64_t resumed = 0, restarted = 0;
    std::size_t hint = 0, hint_restarted = 0;
    trickle(Resume::SamePrefix, resumed, hint);
    CHECK(resumed == fields);
    // Every remaining key still owes its 8-byte length (16 per MULTI_SET pair).
    CHECK(hint == 1 + 8 + (pairs ? 16 : 8) * kKeys);
    // Restarting reads the whole prefix again on every piece.
    trickle(Resume::No, restarted, hint_restarted);
    CHECK(restarted > 100 * fields);
    CHECK(hint_restarted == hint);
  }
}

TEST_CASE("resuming is safe: another buffer, errors and limits", "[codec][resume]") {
  std::vector<std::string> storage;
  std::vector<Request> lists = list_samples(storage, 3);
  const Request& mget = lists[2];
  std::string wire;
  encode_request(wire, Dialect::D2, mget);
  Request got;
  SECTION("a buffer that is visibly another request is read from its first byte") {
    RequestDecoder dec = decoder_for(Dialect::D2);
    REQUIRE(dec.decode(bytes(wire.substr(0, 20)), got, Resume::SamePrefix).status ==
            DecodeStatus::NeedMore);
    std::string check;
    encode_request(check, Dialect::D2, lists[0]);
    DecodeResult res = dec.decode(bytes(check), got, Resume::SamePrefix);
    REQUIRE(res.status == DecodeStatus::Complete);
    require_same(got, lists[0]);
    // And a shorter buffer than last time.
    REQUIRE(dec.decode(bytes(wire.substr(0, 30)), got, Resume::SamePrefix).status ==
            DecodeStatus::NeedMore);
    REQUIRE(dec.decode(bytes(wire.substr(0, 12)), got, Resume::SamePrefix).status ==
            DecodeStatus::NeedMore);
    res = dec.decode(bytes(wire), got, Resume::SamePrefix);
    REQUIRE(res.status == DecodeStatus::Complete);
    require_same(got, mget);
  }
  SECTION("Resume::No drops what a previous call read") {
    RequestDecoder dec = decoder_for(Dialect::D2);
    REQUIRE(dec.decode(bytes(wire.substr(0, 30)), got, Resume::SamePrefix).status ==
            DecodeStatus::NeedMore);
    std::string other = wire;
    other[other.size() - 1] = 'X';  // same start, so only Resume::No tells them apart
    REQUIRE(dec.decode(bytes(other), got, Resume::No).status == DecodeStatus::Complete);
    CHECK(got.keys.back() == "/key/X");
  }
  SECTION("a bad length later in a resumed list: the same error as in one piece") {
    CodecLimits lim;
    lim.max_key_bytes = 8;
    std::string bad = wire.substr(0, 9) + str("/k") + u64(9) + std::string(9, 'x') + str("/z");
    RequestDecoder whole = decoder_for(Dialect::D2, lim), pieces = decoder_for(Dialect::D2, lim);
    REQUIRE(whole.decode(bytes(bad), got).status == DecodeStatus::Malformed);
    REQUIRE(pieces.decode(bytes(bad.substr(0, 15)), got, Resume::SamePrefix).status ==
            DecodeStatus::NeedMore);
    REQUIRE(pieces.decode(bytes(bad), got, Resume::SamePrefix).status == DecodeStatus::Malformed);
    CHECK(pieces.error() == whole.error());
    CHECK_THAT(pieces.error(), Catch::Contains("MULTI_GET") && Catch::Contains("max_key_bytes"));
    // Nothing is left to resume: the same bytes fail the same way.
    REQUIRE(pieces.decode(bytes(bad), got, Resume::SamePrefix).status == DecodeStatus::Malformed);
  }
  SECTION("a count whose least size exceeds max_request_bytes is refused at once") {
    CodecLimits lim;
    lim.max_request_bytes = 1024;
    RequestDecoder dec = decoder_for(Dialect::D2, lim);
    std::string head = wire.substr(0, 1) + u64(127);  // 9 + 127 * 8 = 1025 bytes at least
    REQUIRE(dec.decode(bytes(head), got, Resume::SamePrefix).status == DecodeStatus::Malformed);
    CHECK_THAT(dec.error(), Catch::Contains("request exceeds 1024 bytes (max_request_bytes)"));
    head = wire.substr(0, 1) + u64(126);  // 1017: may still arrive
    CHECK(dec.decode(bytes(head), got, Resume::SamePrefix).size == 1017);
  }
}
