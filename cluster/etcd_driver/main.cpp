// xlaunch-etcd-driver: the etcd client from the command line, for the integration tests
// (tests/integration/test_etcd_*.py) and for looking at a job's keys by hand. Not installed.
//
//   xlaunch-etcd-driver ENDPOINTS get KEY | get-prefix PREFIX | put KEY VALUE
//                       create KEY VALUE | grant TTL | keepalive ID | revoke ID
//                       watch PREFIX REVISION TIMEOUT_MS
//                       hold KEY VALUE TTL   (lease, key on it, keepalive every TTL/3 s)
//   xlaunch-etcd-driver ENDPOINTS member RUN_ID MACHINES RANK HOST LOCAL OUTCOME HEARTBEAT_S
//     one launcher's side of the etcd join (RANK -1: by arrival), then one round whose
//     workers end with OUTCOME: ok, fail (exit 7), wait (until the job stops the round);
//     prints "joined rank=R world=W hosts=..." and "verdict ok" or "verdict <failure>";
//     exits 0, the failure's code, or the join error's code.
// Prints one line per result; exit 0, 1 for an etcd error (message on stderr), 2 for usage.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cluster/etcd_backend.hpp"
#include "cluster/etcd_client.hpp"

using namespace xlaunch::cluster::etcd;

namespace {

long long number(const char* text) {
  long long out = 0;
  std::string_view s(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size())
    throw std::invalid_argument(std::string("not a number: ") + text);
  return out;
}

int member(char** argv) {
  xlaunch::cluster::AgentOptions o;
  o.job_run_id = std::string("run-") + argv[6];
  o.run_id = argv[3];
  o.num_machines = static_cast<int>(number(argv[4]));
  o.machine_rank = static_cast<int>(number(argv[5]));
  o.host = argv[6];
  o.pid = static_cast<long>(getpid());
  o.local_processes = static_cast<int>(number(argv[7]));
  o.version = "test";
  o.rdzv_timeout = std::chrono::seconds(120);
  o.heartbeat_timeout = std::chrono::seconds(number(argv[9]));
  const std::string outcome = argv[8];
  try {
    xlaunch::cluster::EtcdBackend backend(o, argv[1], 20000 + static_cast<int>(getpid() % 10000));
    xlaunch::cluster::Membership m = backend.join();
    std::string hosts;
    for (const auto& h : backend.hosts()) hosts += (hosts.empty() ? "" : ",") + h;
    std::cout << "joined rank=" << m.machine_rank << " world=" << m.layout.world_size()
              << " offset=" << m.layout.rank_offset(m.machine_rank) << " hosts=" << hosts
              << " run=" << m.layout.run_id << " store_port=" << backend.store_port() << std::endl;
    std::mutex mu;
    std::condition_variable cv;
    std::optional<xlaunch::cluster::FailureRecord> stopped;
    backend.start_monitor([&](int, const xlaunch::cluster::FailureRecord& r) {
      std::lock_guard lock(mu);
      stopped = r;
      cv.notify_all();
    });
    std::optional<xlaunch::cluster::FailureRecord> local;
    if (outcome == "fail") {
      local = xlaunch::cluster::FailureRecord{
          m.machine_rank,      o.host, m.layout.rank_offset(m.machine_rank), 7, true,
          "exited with code 7"};
    } else if (outcome == "wait") {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return stopped.has_value(); });
      std::cout << "stopped by " << stopped->describe() << std::endl;
    }
    auto verdict = backend.finish_round(0, local);
    backend.close(verdict ? verdict->exit_code : 0);
    if (!verdict) {
      std::cout << "verdict ok" << std::endl;
      return 0;
    }
    std::cout << "verdict " << verdict->describe() << std::endl;
    return verdict->exit_code;
  } catch (const xlaunch::cluster::AgentError& e) {
    std::cerr << "xlaunch-etcd-driver: " << e.what() << "\n";
    return e.exit_code();
  }
}

void print(const KeyValue& kv) {
  std::cout << kv.key << "=" << kv.value << " lease=" << kv.lease
            << " create_revision=" << kv.create_revision << "\n";
}

int run(int argc, char** argv) {
  if (argc < 3) throw std::invalid_argument("usage: xlaunch-etcd-driver ENDPOINTS COMMAND ARGS");
  Client client(parse_endpoints(argv[1]), std::chrono::seconds(3));
  std::string command = argv[2];
  if (command == "member") {
    if (argc != 10) throw std::invalid_argument("member takes 7 arguments");
    return member(argv);
  }
  auto need = [&](int n) {
    if (argc != 3 + n)
      throw std::invalid_argument(command + " takes " + std::to_string(n) + " arguments");
  };
  if (command == "get" || command == "get-prefix") {
    need(1);
    auto r = command == "get" ? client.get(argv[3]) : client.get_prefix(argv[3]);
    std::cout << "revision=" << r.revision << "\n";
    for (const auto& kv : r.kvs) print(kv);
  } else if (command == "put") {
    need(2);
    std::cout << "revision=" << client.put(argv[3], argv[4]) << "\n";
  } else if (command == "create") {
    need(2);
    auto r = client.create(argv[3], argv[4]);
    std::cout << (r.created ? "created" : "exists") << "\n";
    if (r.existing) print(*r.existing);
  } else if (command == "grant") {
    need(1);
    auto lease = client.grant_lease(number(argv[3]));
    std::cout << "lease=" << lease.id << " ttl=" << lease.ttl << "\n";
  } else if (command == "keepalive") {
    need(1);
    std::cout << "ttl=" << client.keep_alive(number(argv[3])) << "\n";
  } else if (command == "revoke") {
    need(1);
    client.revoke(number(argv[3]));
    std::cout << "revoked\n";
  } else if (command == "watch") {
    need(3);
    auto r = client.watch(argv[3], number(argv[4]), std::chrono::milliseconds(number(argv[5])));
    for (const auto& e : r.events) {
      std::cout << (e.deleted ? "DELETE " : "PUT ");
      print(e.kv);
    }
    std::cout << "next_revision=" << r.next_revision << "\n";
  } else if (command == "hold") {
    need(3);
    const auto ttl = number(argv[5]);
    auto lease = client.grant_lease(ttl);
    client.put(argv[3], argv[4], lease.id);
    std::cout << "holding lease=" << lease.id << std::endl;
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ttl * 1000 / 3));
      try {
        if (client.keep_alive(lease.id) == 0) throw Error("the lease expired", false);
      } catch (const Error& e) {
        if (!e.unreachable()) throw;  // a member lost or an election: the next beat may do
        std::cerr << "xlaunch-etcd-driver: " << e.what() << std::endl;
      }
    }
  } else {
    throw std::invalid_argument("unknown command " + command);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "xlaunch-etcd-driver: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "xlaunch-etcd-driver: " << e.what() << "\n";
    return 1;
  }
}
