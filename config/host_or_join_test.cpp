// torchrun's c10d host fallback, as the settings decide it: a launcher that hosts the store
// only because --rdzv_endpoint names this machine may join instead; one told to host
// (is_host=true) or given --node_rank may not (job/store_hosting.cpp acts on it).
#include <catch2/catch.hpp>

#include "config/join_settings.hpp"
#include "config/launch_rules.hpp"

using namespace xlaunch::config;

namespace {

bool local(const std::string&) { return true; }

JoinSettings decided(Settings s) {
  Resolved r;
  r.settings = std::move(s);
  apply_launch_rules(r, local);
  return join_settings(r.settings);
}

Settings c10d(std::optional<int> machines, std::optional<int> min, std::optional<int> max) {
  Settings s;
  s.rdzv_backend = "c10d";
  s.rdzv_endpoint = "127.0.0.1:29611";
  s.num_machines = machines;
  s.min_machines = min;
  s.max_machines = max;
  return s;
}

}  // namespace

TEST_CASE("the endpoint's host may join instead of hosting: fixed and elastic jobs", "[rules]") {
  CHECK(decided(c10d(2, std::nullopt, std::nullopt)).host_or_join);
  const JoinSettings elastic = decided(c10d(std::nullopt, 1, 2));
  CHECK(elastic.host_or_join);
  CHECK(elastic.hosts_elastic_store);
}

TEST_CASE("is_host=true, --node_rank, one machine and etcd never fall back to joining", "[rules]") {
  Settings told = c10d(2, std::nullopt, std::nullopt);
  told.rdzv_is_host = true;
  CHECK_FALSE(decided(told).host_or_join);
  Settings ranked = c10d(2, std::nullopt, std::nullopt);
  ranked.machine_rank = 0;
  CHECK_FALSE(decided(ranked).host_or_join);
  CHECK_FALSE(decided(c10d(1, std::nullopt, std::nullopt)).host_or_join);
  Settings etcd = c10d(2, std::nullopt, std::nullopt);
  etcd.rdzv_backend = "etcd";
  CHECK_FALSE(decided(etcd).host_or_join);
}

TEST_CASE("the guess survives a merge under a cluster manager's settings", "[rules]") {
  Settings guessed;
  guessed.rdzv_host_guessed = true;
  CHECK(merge(Settings{}, guessed).rdzv_host_guessed == true);
}
