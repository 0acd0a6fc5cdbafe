#include "diagnose/stacks_registry.hpp"

#include <catch2/catch.hpp>

#include "diagnose/stacks_site.hpp"

using namespace xlaunch::diagnose;

TEST_CASE("the launcher registry folder follows XDG_RUNTIME_DIR, else /tmp per user", "[stacks]") {
  CHECK(registry_dir({{"XDG_RUNTIME_DIR", "/run/user/1000"}}, 1000) == "/run/user/1000/xlaunch");
  CHECK(registry_dir({{"XDG_RUNTIME_DIR", ""}}, 1000) == "/tmp/xlaunch-1000");
  CHECK(registry_dir({}, 0) == "/tmp/xlaunch-0");
}

TEST_CASE("dump files are per rank and per process", "[stacks]") {
  CHECK(stacks_file("/t/stacks", 3, 4242) == "/t/stacks/rank_3.4242.stacks");
  CHECK(notes_file("/t/stacks", 3, 4242) == "/t/stacks/rank_3.4242.env");
  CHECK(stacks_signal() > 31);  // a real-time signal: never SIGUSR1/SIGUSR2
  const std::string_view site = sitecustomize_text();
  CHECK(site.find("faulthandler.register(int(signum), file=dump, all_threads=True)") !=
        std::string_view::npos);
  CHECK(site.find("import sitecustomize") != std::string_view::npos);  // chains
}
