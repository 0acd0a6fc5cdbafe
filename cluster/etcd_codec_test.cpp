#include "cluster/etcd_codec.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <random>

using namespace xlaunch::cluster::etcd;
namespace json = boost::json;

// Replies below were captured from Debian's etcd 3.4.23 (curl against its gateway).
namespace {
constexpr const char* kHeader =
    R"("header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
    R"("revision":"5","raft_term":"2"})";

std::string with_header(const std::string& rest) { return "{" + std::string(kHeader) + rest + "}"; }
}  // namespace

TEST_CASE("endpoints: host:port lists, default port, http:// accepted", "[etcd]") {
  auto one = parse_endpoints("127.0.0.1:23790");
  REQUIRE(one.size() == 1);
  CHECK(one[0].host == "127.0.0.1");
  CHECK(one[0].port == 23790);
  auto many = parse_endpoints("http://a:1, b ,[::1]:3");
  REQUIRE(many.size() == 3);
  CHECK(many[0].text() == "a:1");
  CHECK(many[1].text() == "b:2379");
  CHECK(many[2].host == "::1");
  CHECK(many[2].text() == "[::1]:3");
}

TEST_CASE("endpoints: bad entries are named", "[etcd]") {
  CHECK_THROWS_WITH(parse_endpoints(""), Catch::Contains("empty"));
  CHECK_THROWS_WITH(parse_endpoints("a:1,"), Catch::Contains("empty host"));
  CHECK_THROWS_WITH(parse_endpoints("a:0"),
                    Catch::Contains("'a:0'") && Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(parse_endpoints("a:99999"), Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(parse_endpoints("a:"), Catch::Contains("empty port"));
  CHECK_THROWS_WITH(parse_endpoints("a:x"), Catch::Contains("port"));
  CHECK_THROWS_WITH(parse_endpoints("::1:5"), Catch::Contains("brackets"));
  CHECK_THROWS_WITH(parse_endpoints("https://a:1"), Catch::Contains("https"));
  CHECK_THROWS_WITH(parse_endpoints("[::1"), Catch::Contains("']'"));
}

TEST_CASE("base64 round-trips every length and byte", "[etcd]") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("a/x") == "YS94");
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); n += 7) {
    auto part = all.substr(0, n);
    CHECK(base64_decode(base64_encode(part)) == part);
  }
  CHECK(base64_decode("aGVsbG8=") == std::string("hello"));
}

TEST_CASE("base64: malformed text is refused", "[etcd]") {
  CHECK_FALSE(base64_decode("abc"));       // not a multiple of 4
  CHECK_FALSE(base64_decode("ab!d"));      // not in the alphabet
  CHECK_FALSE(base64_decode("a=bc"));      // padding in the middle
  CHECK_FALSE(base64_decode("ab=c"));      // '=' then a character
  CHECK_FALSE(base64_decode("Zg==Zg=="));  // padding before the end
  CHECK_FALSE(base64_decode("Z==="));      // one character carries no byte
}

TEST_CASE("prefix_end increments the last byte below 0xff", "[etcd]") {
  CHECK(prefix_end("a/") == "a0");
  CHECK(prefix_end("xlaunch/run/") == "xlaunch/run0");
  CHECK(prefix_end(std::string("a\xff", 2)) == "b");
  CHECK(prefix_end(std::string("\xff\xff", 2)) == std::string(1, '\0'));
  CHECK(prefix_end("") == std::string(1, '\0'));
}

TEST_CASE("request bodies: keys and values base64, integers as strings", "[etcd]") {
  CHECK(json::parse(range_request("a/x", false)) == json::parse(R"({"key":"YS94"})"));
  CHECK(json::parse(range_request("a/", true)) ==
        json::parse(R"({"key":"YS8=","range_end":"YTA="})"));
  CHECK(json::parse(put_request("a/x", "v", 0)) == json::parse(R"({"key":"YS94","value":"dg=="})"));
  CHECK(json::parse(put_request("a/x", "v", 42)) ==
        json::parse(R"({"key":"YS94","value":"dg==","lease":"42"})"));
  CHECK(json::parse(lease_grant_request(10)) == json::parse(R"({"TTL":"10"})"));
  CHECK(json::parse(lease_id_request(7587851)) == json::parse(R"({"ID":"7587851"})"));
  CHECK(json::parse(watch_request("a/", 0)) ==
        json::parse(R"({"create_request":{"key":"YS8=","range_end":"YTA="}})"));
  CHECK(
      json::parse(watch_request("a/", 9)) ==
      json::parse(R"({"create_request":{"key":"YS8=","range_end":"YTA=","start_revision":"9"}})"));
  CHECK(json::parse(delete_request("a/", true)) ==
        json::parse(R"({"key":"YS8=","range_end":"YTA="})"));
}

TEST_CASE("create is one txn: create_revision == 0 then put, else range", "[etcd]") {
  CHECK(json::parse(create_request("a/x", "v", 5)) == json::parse(R"({
    "compare":[{"key":"YS94","target":"CREATE","result":"EQUAL","create_revision":"0"}],
    "success":[{"request_put":{"key":"YS94","value":"dg==","lease":"5"}}],
    "failure":[{"request_range":{"key":"YS94"}}]})"));
}

TEST_CASE("range replies: revision and key-values, empty when no key", "[etcd]") {
  auto r = decode_range(with_header(
      R"(,"kvs":[{"key":"YS94","create_revision":"2","mod_revision":"3","version":"1",)"
      R"("value":"aGVsbG8=","lease":"77"},{"key":"YS95","create_revision":"4","mod_revision":"4"}],)"
      R"("count":"2")"));
  CHECK(r.revision == 5);
  REQUIRE(r.kvs.size() == 2);
  CHECK(r.kvs[0].key == "a/x");
  CHECK(r.kvs[0].value == "hello");
  CHECK(r.kvs[0].create_revision == 2);
  CHECK(r.kvs[0].mod_revision == 3);
  CHECK(r.kvs[0].lease == 77);
  CHECK(r.kvs[1].value == "");  // an empty value is left out of the JSON
  CHECK(decode_range(with_header("")).kvs.empty());
}

TEST_CASE("create replies: succeeded, or the existing value", "[etcd]") {
  auto made = decode_create(with_header(
      R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"5"}}}])"));
  CHECK(made.created);
  CHECK(made.revision == 5);
  CHECK_FALSE(made.existing);
  auto taken = decode_create(with_header(
      R"(,"responses":[{"response_range":{"header":{"revision":"4"},"kvs":[{"key":"YS94",)"
      R"("create_revision":"2","mod_revision":"2","version":"1","value":"aGVsbG8="}],"count":"1"}}])"));
  CHECK_FALSE(taken.created);
  REQUIRE(taken.existing);
  CHECK(taken.existing->value == "hello");
}

TEST_CASE("lease replies", "[etcd]") {
  auto grant = decode_lease_grant(with_header(R"(,"ID":"2324035573537583636","TTL":"7")"));
  CHECK(grant.id == 2324035573537583636);
  CHECK(grant.ttl == 7);
  CHECK_THROWS_AS(decode_lease_grant(with_header(R"(,"TTL":"7")")), ReplyError);
  CHECK(decode_keepalive(R"({"result":{)" + std::string(kHeader) + R"(,"ID":"9","TTL":"10"}})") ==
        10);
  // An expired lease: etcd answers with the ID and no TTL.
  CHECK(decode_keepalive(R"({"result":{)" + std::string(kHeader) + R"(,"ID":"1"}})") == 0);
  CHECK(decode_revision(with_header("")) == 5);
}

TEST_CASE("watch stream messages: created, events, cancel", "[etcd]") {
  auto created = decode_watch(R"({"result":{)" + std::string(kHeader) + R"(,"created":true}})");
  CHECK(created.created);
  CHECK(created.revision == 5);
  CHECK(created.events.empty());
  auto events = decode_watch(
      R"({"result":{"header":{"revision":"9"},"events":[{"kv":{"key":"YS94","create_revision":"2",)"
      R"("mod_revision":"8","value":"dg=="}},{"type":"DELETE","kv":{"key":"YS95","mod_revision":"9"}}]}})");
  REQUIRE(events.events.size() == 2);
  CHECK_FALSE(events.events[0].deleted);
  CHECK(events.events[0].kv.key == "a/x");
  CHECK(events.events[0].kv.mod_revision == 8);
  CHECK(events.events[1].deleted);
  CHECK(events.events[1].kv.key == "a/y");
  auto canceled = decode_watch(
      R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"-1"}})");
  CHECK(canceled.canceled);
  CHECK(canceled.compact_revision == -1);
}

TEST_CASE("errors etcd reports are ReplyErrors with its text", "[etcd]") {
  const std::string lease_gone =
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})";
  CHECK_THROWS_WITH(decode_revision(lease_gone), Catch::Contains("requested lease not found"));
  CHECK_THROWS_WITH(
      decode_watch(R"({"error":{"grpc_code":14,"http_code":503,"message":"no leader"}})"),
      Catch::Contains("no leader"));
  CHECK(error_text(lease_gone) == "etcdserver: requested lease not found");
  CHECK(error_text("404 page not found\n") == "404 page not found");
  CHECK(error_text(std::string(1000, 'x')).size() == 200);
}

TEST_CASE("malformed replies are ReplyErrors naming the problem", "[etcd]") {
  CHECK_THROWS_WITH(decode_range("not json"), Catch::Contains("not JSON"));
  CHECK_THROWS_WITH(decode_range("[1]"), Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(decode_range(R"({"kvs":[{"key":"!!!!"}]})"), Catch::Contains("base64"));
  CHECK_THROWS_WITH(decode_range(R"({"kvs":{}})"), Catch::Contains("not a list"));
  CHECK_THROWS_WITH(decode_range(R"({"kvs":[{"create_revision":"x"}]})"),
                    Catch::Contains("create_revision") && Catch::Contains("integer"));
  CHECK_THROWS_WITH(decode_create(R"({"succeeded":"yes"})"), Catch::Contains("bool"));
  CHECK_THROWS_WITH(decode_range(R"({"header":[]})"), Catch::Contains("header"));
  // Integers may come as JSON numbers too.
  CHECK(decode_revision(R"({"header":{"revision":12}})") == 12);
}

TEST_CASE("decoders survive arbitrary and mutated input", "[etcd]") {
  const std::string samples[] = {
      with_header(R"(,"kvs":[{"key":"YS94","create_revision":"2","value":"aGVsbG8="}])"),
      R"({"result":{"header":{"revision":"9"},"events":[{"type":"DELETE","kv":{"key":"YS95"}}]}})",
      with_header(R"(,"responses":[{"response_range":{"kvs":[{"key":"YS94"}]}}])"),
  };
  std::mt19937 random(20261123);
  for (int i = 0; i < 3000; ++i) {
    std::string text = samples[i % 3];
    for (int m = 0; m < 3; ++m) {
      std::size_t at = random() % text.size();
      switch (random() % 3) {
        case 0:
          text[at] = static_cast<char>(random() % 256);
          break;
        case 1:
          text.erase(at, 1 + random() % 8);
          break;
        default:
          text.insert(at, text.substr(random() % text.size(), random() % 12));
          break;
      }
      if (text.empty()) text = "{";
    }
    for (auto decode : {+[](std::string_view t) { (void)decode_range(t); },
                        +[](std::string_view t) { (void)decode_watch(t); },
                        +[](std::string_view t) { (void)decode_create(t); },
                        +[](std::string_view t) { (void)decode_keepalive(t); },
                        +[](std::string_view t) { (void)error_text(t); }}) {
      try {
        decode(text);
      } catch (const ReplyError&) {
        // the only failure allowed
      }
    }
  }
}
