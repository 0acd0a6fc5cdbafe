#include "diagnose/stacks_registry.hpp"

#include <signal.h>
#include <sys/un.h>

#include <catch2/catch.hpp>

#include "diagnose/stacks_site.hpp"

using namespace xlaunch::diagnose;

TEST_CASE("the launcher registry folder follows XDG_RUNTIME_DIR, else /tmp per user", "[stacks]") {
  CHECK(registry_dir({{"XDG_RUNTIME_DIR", "/run/user/1000"}}, 1000) == "/run/user/1000/xlaunch");
  CHECK(registry_dir({{"XDG_RUNTIME_DIR", ""}}, 1000) == "/tmp/xlaunch-1000");
  CHECK(registry_dir({}, 0) == "/tmp/xlaunch-0");
}

TEST_CASE("a runtime folder is used only when private: the user's, 0700, no link", "[stacks]") {
  FolderFacts mine{true, false, true, 1000, 0700};
  CHECK_FALSE(runtime_dir_problem("/r/xlaunch", mine, 1000));
  CHECK_FALSE(runtime_dir_problem("/r/xlaunch", FolderFacts{}, 1000));  // made on demand
  FolderFacts link = mine;
  link.is_symlink = true;
  link.is_directory = false;
  CHECK(runtime_dir_problem("/r/xlaunch", link, 1000) ==
        "/r/xlaunch is a symbolic link; remove it, or set XDG_RUNTIME_DIR to a private folder");
  FolderFacts theirs = mine;
  theirs.owner = 1001;
  CHECK(runtime_dir_problem("/r/xlaunch", theirs, 1000)
            ->starts_with("/r/xlaunch belongs to uid 1001, not to you (uid 1000)"));
  FolderFacts open = mine;
  open.mode = 0755;
  CHECK(runtime_dir_problem("/r/xlaunch", open, 1000)
            ->starts_with("/r/xlaunch has mode 0755, not 0700"));
  FolderFacts file = mine;
  file.is_directory = false;
  CHECK(runtime_dir_problem("/r/xlaunch", file, 1000)->starts_with("/r/xlaunch is not a folder"));
}

TEST_CASE("a run's socket is named after its id, shortened when too long", "[stacks]") {
  CHECK(socket_path("/run/user/1000/xlaunch", "20261123-223621-3b45a1") ==
        "/run/user/1000/xlaunch/20261123-223621-3b45a1.sock");
  const std::string a(128, 'a');
  const std::string b = std::string(127, 'a') + "b";
  const std::string pa = socket_path("/run/user/1000/xlaunch", a);
  const std::string pb = socket_path("/run/user/1000/xlaunch", b);
  CHECK(pa.size() < sizeof(sockaddr_un{}.sun_path));
  CHECK(pa != pb);  // the hash tells long ids apart
  CHECK(pa.starts_with("/run/user/1000/xlaunch/aaaa"));
  CHECK(pa.ends_with(".sock"));
  CHECK(pa == socket_path("/run/user/1000/xlaunch", a));  // `xlaunch stacks ID` finds it
  CHECK(std::string(unix_address(pa)->sun_path) == pa);
  CHECK_FALSE(unix_address("/run/user/1000/xlaunch/" + a));  // too long for an address
}

TEST_CASE("dump files are per rank and per process, on a signal others ignore", "[stacks]") {
  CHECK(stacks_file("/t/stacks", 3, 4242) == "/t/stacks/rank_3.4242.stacks");
  CHECK(notes_file("/t/stacks", 3, 4242) == "/t/stacks/rank_3.4242.env");
  CHECK(descriptor_file("/t/stacks", 3, 4242) == "/t/stacks/rank_3.4242.fd");
  // Ignored by default: harmless to a process that no longer handles it. Never SIGUSR1/2.
  CHECK(stacks_signal() == SIGURG);
  const std::string site = sitecustomize_text(4321);
  CHECK(site.find("os.getppid() in (4321, 0) and os.getpgrp() == os.getpid()") !=
        std::string::npos);  // ranks only
  CHECK(site.find("faulthandler.register(int(signum), file=dump, all_threads=True)") !=
        std::string::npos);
  CHECK(site.find("fcntl.F_DUPFD_CLOEXEC, 960") != std::string::npos);
  CHECK(site.find("import sitecustomize") != std::string::npos);  // chains
}
