#include "rendezvous/pending_bytes.hpp"

#include <catch2/catch.hpp>
#include <string>

using xlaunch::rendezvous::PendingBytes;

namespace {
std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}
std::string text(std::span<const std::uint8_t> b) { return {b.begin(), b.end()}; }
}  // namespace

TEST_CASE("PendingBytes: nothing kept means the fresh bytes, uncopied", "[pending]") {
  PendingBytes p;
  std::string fresh = "abc";
  auto data = p.with(bytes(fresh));
  CHECK(data.data() == bytes(fresh).data());
  p.keep_rest(data, 3);
  CHECK(p.empty());
}

TEST_CASE("PendingBytes: an incomplete tail is kept and read first next time", "[pending]") {
  PendingBytes p;
  std::string first = "req1re";
  auto data = p.with(bytes(first));
  p.keep_rest(data, 4);  // "req1" handled, "re" incomplete
  CHECK_FALSE(p.empty());
  std::string second = "q2req";
  data = p.with(bytes(second));
  CHECK(text(data) == "req2req");
  p.keep_rest(data, 4);  // keeping from its own buffer must not read overwritten bytes
  CHECK(text(p.with(bytes(std::string("3")))) == "req3");
}

TEST_CASE("PendingBytes: keeping the whole of its own buffer changes nothing", "[pending]") {
  PendingBytes p;
  std::string a = "abc", b = "def";
  p.keep_rest(p.with(bytes(a)), 0);
  auto data = p.with(bytes(b));
  p.keep_rest(data, 0);
  CHECK(text(p.with({})) == "abcdef");
}

TEST_CASE("PendingBytes: once a split request is handled, nothing is held", "[pending]") {
  PendingBytes p;
  std::string head(64 * 1024, 'a'), tail(64 * 1024, 'b');
  p.keep_rest(p.with(bytes(head)), 0);  // the request's first half
  CHECK(p.capacity() >= head.size());
  auto data = p.with(bytes(tail));
  p.keep_rest(data, data.size());  // handled whole
  CHECK(p.empty());
  CHECK(p.capacity() == 0);
}
