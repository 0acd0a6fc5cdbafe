// The etcd backend's shared state and what every part of it reads (members, layouts,
// failures); the join, the rounds and the monitor have files of their own
// (etcd_backend_impl.hpp).
#include "cluster/etcd_backend.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cluster/blame.hpp"
#include "cluster/etcd_backend_impl.hpp"

namespace xlaunch::cluster {

using namespace etcd;

using std::chrono::milliseconds;

namespace {

std::vector<Endpoint> endpoints_or_usage_error(const std::string& text) {
  try {
    return parse_endpoints(text);
  } catch (const std::invalid_argument& e) {
    throw AgentError(e.what(), 2);
  }
}

}  // namespace

EtcdBackend::Impl::Impl(AgentOptions options, const std::string& endpoints)
    : o(std::move(options)),
      client(endpoints_or_usage_error(endpoints),
             std::clamp(o.heartbeat_timeout / 3, milliseconds(500), milliseconds(5000))),
      interval(std::clamp(o.heartbeat_timeout / 6, milliseconds(100), milliseconds(1000))) {}

std::string EtcdBackend::Impl::host_of(int m) {
  std::lock_guard lock(mu);  // elastic: begin_round replaces the decision
  return cluster::host_of(decision.hosts, m);
}

void EtcdBackend::Impl::notify(int r, const FailureRecord& record) {
  OnStop callback;
  {
    std::lock_guard lock(mu);
    if (reported == r || !on_stop) return;
    reported = r;
    callback = on_stop;
  }
  callback(r, record);
}

std::optional<FailureRecord> EtcdBackend::Impl::fatal_now() {
  std::lock_guard lock(mu);
  return fatal;
}

void EtcdBackend::Impl::set_fatal(const FailureRecord& record) {
  {
    std::lock_guard lock(mu);
    if (!fatal) fatal = record;
  }
  wake.notify_all();
  notify(round.load(), record);
}

FailureRecord EtcdBackend::Impl::lost_record(int m) {
  return lease_lost(m, host_of(m), o.heartbeat_timeout, o.elastic());
}

FailureRecord EtcdBackend::Impl::etcd_lost(const std::string& why) const {
  return etcd_unreachable(rank, o.host, client.endpoints_text(), o.heartbeat_timeout, why);
}

std::set<std::int64_t> EtcdBackend::Impl::alive_leases(std::int64_t* revision) {
  auto members = client.get_prefix(key("members/"));
  if (revision) *revision = members.revision;
  std::set<std::int64_t> out;
  for (const auto& kv : members.kvs)
    if (auto l = lease_of_member_key(o.run_id, kv.key)) out.insert(*l);
  return out;
}

// After a call found etcd unreachable (a timeout on a loaded machine, say): waits one
// interval, or rethrows once etcd has been unreachable for --heartbeat_timeout.
void EtcdBackend::Impl::wait_out_unreachable(std::optional<Steady::time_point>& failing_since) {
  if (!failing_since) failing_since = Steady::now();
  if (Steady::now() - *failing_since >= o.heartbeat_timeout) throw;
  std::unique_lock lock(mu);
  wake.wait_for(lock, interval, [&] { return stopping.load(); });
}

/// Waits up to `timeout` for a change under the job's keys after `revision`.
void EtcdBackend::Impl::wait_change(std::int64_t revision, milliseconds timeout) {
  try {
    client.watch(key(""), revision + 1, std::max(timeout, milliseconds(1)));
  } catch (const Error&) {
    std::unique_lock lock(mu);
    wake.wait_for(lock, std::min(timeout, interval), [&] { return stopping.load(); });
  }
}

Decision EtcdBackend::Impl::decision_now() {
  std::lock_guard lock(mu);
  return decision;
}

/// The registered launchers, by arrival.
std::vector<Member> EtcdBackend::Impl::list_members(std::int64_t* revision) {
  auto listed = client.get_prefix(key("members/"));
  if (revision) *revision = listed.revision;
  std::vector<Member> out = decode_members(o.run_id, listed.kvs);
  std::lock_guard lock(mu);
  for (const Member& m : out) known.emplace(m.lease, m.record);
  std::stable_sort(out.begin(), out.end(), [](const Member& a, const Member& b) {
    return a.create_revision < b.create_revision;
  });
  return out;
}

/// The newest round's layout under round/, and its round; nullopt when none.
std::optional<std::pair<int, Decision>> EtcdBackend::Impl::latest_layout(std::int64_t* revision) {
  auto listed = client.get_prefix(key("round/"));
  if (revision) *revision = listed.revision;
  std::vector<std::string> keys;
  for (const auto& kv : listed.kvs) keys.push_back(kv.key);
  auto r = latest_layout_round(o.run_id, keys);
  if (!r) return std::nullopt;
  if (*r > o.max_restarts) {
    throw MalformedRecord(
        rkey(*r, "layout"),
        fmt::format("round {} of a job with --max_restarts {}", *r, o.max_restarts));
  }
  for (const auto& kv : listed.kvs)
    if (kv.key == rkey(*r, "layout")) return std::pair{*r, decision_at(kv.value, kv.key)};
  return std::nullopt;
}

Decision EtcdBackend::Impl::decision_at(std::string_view text, const std::string& k) const {
  Decision d = decode_decision(text, k);
  check_decision(d, o.elastic() ? 0 : o.num_machines, o.max_machines, k);
  return d;
}

/// Adopts round r's decision; false when this launcher is not in it.
bool EtcdBackend::Impl::adopt(int r, const Decision& d) {
  auto mine = rank_of(d, lease);
  {
    std::lock_guard lock(mu);
    decision = d;
  }
  if (!mine) return false;
  rank = *mine;
  round = r;  // after the decision: the monitor checks newcomers against this round's
  return true;
}

Membership EtcdBackend::Impl::membership(int r) const {
  if (const auto* problem = std::get_if<JoinProblem>(&decision.outcome)) throw AgentError(*problem);
  return Membership{std::get<Layout>(decision.outcome), rank, r};
}

FailureRecord EtcdBackend::Impl::report_failure(int round, const FailureRecord& record) {
  try {
    auto won = client.create(rkey(round, "failure"), cluster::encode(record));
    return won.created ? record : failure_at(won.existing->value, rkey(round, "failure"));
  } catch (const std::exception&) {
    return record;  // etcd is gone: the keeper reports it
  }
}

EtcdBackend::EtcdBackend(AgentOptions options, std::string endpoints, int store_port) {
  impl_ = std::make_unique<Impl>(std::move(options), endpoints);
  impl_->store_port = store_port;
}

EtcdBackend::~EtcdBackend() {
  if (impl_) close(0);
}

int EtcdBackend::store_port() const {
  return impl_->decision.ports.empty() ? 0 : impl_->decision.ports[0];
}

const std::vector<std::string>& EtcdBackend::hosts() const { return impl_->decision.hosts; }

FailureRecord EtcdBackend::report_failure(int round, const FailureRecord& record) {
  return impl_->report_failure(round, record);
}

void EtcdBackend::close(int /*exit_code*/) {
  Impl& s = *impl_;
  stop_monitor();
  if (s.lease != 0) {
    try {
      s.client.revoke(s.lease);
    } catch (const std::exception&) {
      // etcd is gone: the lease expires on its own.
    }
    s.lease = 0;
  }
}

}  // namespace xlaunch::cluster
