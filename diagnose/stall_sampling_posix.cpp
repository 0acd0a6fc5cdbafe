// Each second: every rank's process tree (CPU time, I/O, liveness, sockets), the run's other
// processes and the store traffic, fed to the stall detector; and the dial check, for a rank
// connected to no store.
#include <sstream>

#include "config/regular_file.hpp"
#include "diagnose/stacks_site.hpp"
#include "diagnose/stall_dial.hpp"
#include "diagnose/stall_monitor_impl.hpp"

namespace xlaunch::diagnose {
namespace {

constexpr int kDialTicks = 3;  // samples in a row before "keeps dialing" is said

}  // namespace

std::optional<std::pair<std::string, std::string>> StallMonitor::Impl::script_address(
    const RankInfo& r) const {
  if (stacks_dir.empty()) return std::nullopt;
  // The rank writes it: read only as a regular file, and a few lines at most.
  const auto text = config::read_regular_text(notes_file(stacks_dir, r.rank, r.own_pid), 64 << 10);
  if (!text) return std::nullopt;
  std::pair<std::string, std::string> out;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MASTER_ADDR=", 0) == 0) out.first = line.substr(12);
    if (line.rfind("MASTER_PORT=", 0) == 0) out.second = line.substr(12);
  }
  return out;
}

void StallMonitor::Impl::tick() {
  // By address and port: a client from another host may use the same port number as a rank.
  std::map<std::pair<std::string, std::uint16_t>, const rendezvous::StoreServer::ClientInfo*>
      by_peer;
  std::vector<rendezvous::StoreServer::ClientInfo> clients;
  if (store_clients) clients = store_clients();
  for (const auto& c : clients) {
    // /proc/net shows an IPv4-mapped address as IPv4, as getnameinfo does not.
    std::string_view addr = c.peer_addr;
    if (addr.starts_with("::ffff:") && addr.find('.') != std::string_view::npos) {
      addr.remove_prefix(7);
    }
    by_peer[{std::string(addr), c.peer_port}] = &c;
  }
  std::optional<SocketTables> tables;
  std::vector<RankActivity> activity;
  std::vector<long> roots;
  for (auto& [local, r] : ranks) {
    if (r.started && r.alive) roots.push_back(r.pid);
  }
  const RunSample run = sample_run(roots, run_scope);
  std::size_t next = 0;
  for (auto& [local, r] : ranks) {
    if (!r.started) continue;
    r.waiting_keys.clear();
    r.connecting.clear();
    if (r.alive) {
      const TreeSample& tree = run.ranks[next++];
      r.stopped = tree.alive && tree.stopped;
      if (tree.alive) {
        r.cpu_seconds = tree.cpu_seconds;
        r.io_bytes = tree.io_bytes;
        if (!tables) tables = read_socket_tables(r.pid);
        sample_sockets(r, tree, *tables, by_peer);
      }
    }
    activity.push_back({r.rank, r.alive, r.cpu_seconds, r.lines, r.store_requests, r.io_bytes});
  }
  // A helper that left its rank's tree (`nohup cmd &`) is the run's work too.
  activity.push_back({kOtherProcesses, true, run.others.cpu_seconds, 0, 0, run.others.io_bytes});
  if (detector && !collecting && detector->update(std::chrono::steady_clock::now(), activity)) {
    const double window =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - detector->quiet_since())
            .count();
    collect_stacks(
        [this, window](std::vector<RankStacks> stacks) { report_stall(window, stacks); });
  }
}

void StallMonitor::Impl::sample_sockets(
    RankInfo& r, const TreeSample& tree, const SocketTables& tables,
    const std::map<std::pair<std::string, std::uint16_t>,
                   const rendezvous::StoreServer::ClientInfo*>& by_peer) {
  bool to_store = false;
  std::uint64_t requests = 0;
  int unlisted = 0;
  for (unsigned long inode : tree.socket_inodes) {
    if (!tables.listed.contains(inode)) ++unlisted;
  }
  for (const SocketEntry& e : tables.inet) {
    if (!tree.socket_inodes.contains(e.inode)) continue;
    if (e.state == kTcpSynSent) r.connecting.push_back(endpoint(e.remote_addr, e.remote_port));
    if (e.state != kTcpEstablished || e.remote_port != store_port) continue;
    to_store = true;
    if (auto c = by_peer.find({e.local_addr, e.local_port}); c != by_peer.end()) {
      requests += c->second->requests;
      r.waiting_keys.insert(r.waiting_keys.end(), c->second->waiting.begin(),
                            c->second->waiting.end());
    }
  }
  r.store_requests = requests;
  check_dialing(r, to_store, unlisted);
}

void StallMonitor::Impl::check_dialing(RankInfo& r, bool to_store, int unlisted) {
  if (to_store) {
    r.dial_ticks = 0;
    r.dial_target.reset();
    return;
  }
  DialEvidence e;
  e.rank = r.rank;
  e.connecting = r.connecting;
  e.unlisted_sockets = unlisted;
  if (auto script = script_address(r)) {
    if (!script->first.empty()) e.script_addr = script->first;
    if (!script->second.empty()) e.script_port = script->second;
  }
  const auto target = wrong_target(e, store_addr, store_port);
  r.dial_target = target;
  if (!target) {
    r.dial_ticks = 0;
    return;
  }
  if (++r.dial_ticks < kDialTicks || r.dial_reported) return;
  r.dial_reported = true;
  const std::string text = wrong_address_message(r.rank, *target, store_addr, store_port,
                                                 e.script_addr || e.script_port);
  out.say(text);
  out.log(text);
}

}  // namespace xlaunch::diagnose
