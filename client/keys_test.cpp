// Key naming and the NCCL id record (pure).
#include "client/keys.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "client/net.hpp"

using namespace xlaunch::detail;

TEST_CASE("library keys live under one prefix per run and attempt", "[client][keys]") {
  CHECK(key_prefix("job7", 0) == "xlaunch/client/job7/attempt_0/");
  CHECK(key_prefix("job7", 3) == "xlaunch/client/job7/attempt_3/");
  CHECK(world_counter_key("xlaunch/client/job7/attempt_3/", 2) ==
        "xlaunch/client/job7/attempt_3/worlds/rank_2");
  CHECK(world_prefix("xlaunch/client/job7/attempt_3/", 2) ==
        "xlaunch/client/job7/attempt_3/world_2/");
  Keys keys{key_prefix("job7", 1)};
  std::set<std::string> all;
  for (std::uint64_t g = 0; g < 3; ++g) {
    for (const std::string& key : {keys.barrier_arrived(g), keys.barrier_done(g), keys.nccl_id(g),
                                   keys.nccl_comm(g), keys.gloo(g)}) {
      CHECK_THAT(key, Catch::StartsWith("xlaunch/client/job7/attempt_1/"));
      all.insert(key);
    }
  }
  CHECK(all.size() == 15);  // no two steps share a key
  CHECK(keys.barrier_arrived(2) == "xlaunch/client/job7/attempt_1/barrier/2/arrived");
  CHECK(keys.nccl_comm(0) == "xlaunch/client/job7/attempt_1/nccl_comm/0/");
}

TEST_CASE("different attempts never share keys", "[client][keys]") {
  Keys first{key_prefix("r", 0)};
  Keys second{key_prefix("r", 1)};
  CHECK(first.barrier_done(0) != second.barrier_done(0));
  CHECK(first.nccl_id(0) != second.nccl_id(0));
}

TEST_CASE("NCCL id records round-trip, NUL bytes included", "[client][keys]") {
  std::string bytes(128, '\0');
  bytes[5] = 'x';
  bytes[127] = '\xff';
  IdRecord decoded = decode_id_record(encode_id_record(IdOk{bytes}), 128);
  REQUIRE(std::holds_alternative<IdOk>(decoded));
  CHECK(std::get<IdOk>(decoded).bytes == bytes);

  decoded = decode_id_record(encode_id_record(IdFailed{"ncclGetUniqueId failed"}), 128);
  REQUIRE(std::holds_alternative<IdFailed>(decoded));
  CHECK(std::get<IdFailed>(decoded).message == "ncclGetUniqueId failed");
}

TEST_CASE("malformed NCCL id records are failures, not ids", "[client][keys]") {
  for (std::string value : {std::string(), std::string("K") + std::string(12, 'a'),
                            std::string("Z") + std::string(128, 'a')}) {
    IdRecord decoded = decode_id_record(value, 128);
    REQUIRE(std::holds_alternative<IdFailed>(decoded));
    CHECK_THAT(std::get<IdFailed>(decoded).message, Catch::Contains("malformed"));
  }
}

TEST_CASE("loopback hosts are recognised", "[client][net]") {
  CHECK(is_loopback_host("localhost"));
  CHECK(is_loopback_host("127.0.0.1"));
  CHECK(is_loopback_host("127.1.2.3"));
  CHECK(is_loopback_host("::1"));
  CHECK(is_loopback_host("[::1]"));
  CHECK_FALSE(is_loopback_host("10.0.0.1"));
  CHECK_FALSE(is_loopback_host("node127"));
}

TEST_CASE("the local address towards loopback is loopback", "[client][net]") {
  std::optional<std::string> address = local_address_towards("127.0.0.1", 29500);
  REQUIRE(address);
  CHECK(*address == "127.0.0.1");
  CHECK_FALSE(local_address_towards("no-such-host.invalid", 1));
}
