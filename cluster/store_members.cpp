// Elastic jobs through the store: the host reads who arrived, publishes each round's members
// (round/<r>/layout, latest) and the others find themselves in it.
#include <algorithm>

#include "cluster/membership.hpp"
#include "cluster/store_backend_impl.hpp"

namespace xlaunch::cluster {

using StoreClient = rendezvous::StoreClient;

// The host reads arrival records it has not seen; a newcomer that disagrees with the host
// (settings, version) or whose record is malformed is refused at once instead of failing
// the running job later.
void StoreBackend::Impl::poll_arrivals(StoreClient& c) {
  std::lock_guard lock(arr_mu);
  std::erase_if(waiting, [&](int k) {  // withdrew (elastic_withdraw) before it was taken in
    const std::string taken = key(fmt::format("taken/{}", k));
    return c.check({taken}) && !still_waiting(c, k, c.get(taken));
  });
  const auto n = std::min<std::int64_t>(c.add(key("arrivals"), 0), kMaxArrivals);
  for (int k = known + 1; k <= n; ++k) {
    const std::string k_key = key(fmt::format("arrival/{}", k));
    if (!c.check({k_key})) break;  // counted, record not written yet
    known = k;
    if (k == slot) {
      records[k] = me;
      continue;
    }
    std::string refusal;
    try {
      JoinRecord r = decode_join(c.get(k_key), k_key);
      records[k] = r;
      auto check = elastic_layout({me, r}, {slot, k}, "");
      if (auto* problem = std::get_if<JoinProblem>(&check)) refusal = problem->message;
    } catch (const MalformedRecord& e) {
      refusal = e.what();
    }
    if (refusal.empty()) {
      waiting.push_back(k);
    } else {
      c.set(key(fmt::format("refused/{}", k)), refusal);
    }
  }
}

// The host publishes round r's members (or why there is no round) and adopts them.
Membership StoreBackend::Impl::publish_round(StoreClient& c, int r, const std::vector<int>& next) {
  std::vector<JoinRecord> recs;
  {
    std::lock_guard lock(arr_mu);
    for (int k : next) recs.push_back(records.at(k));
    std::erase_if(waiting,
                  [&](int k) { return std::find(next.begin(), next.end(), k) != next.end(); });
  }
  auto decision = elastic_layout(recs, next, o.job_run_id);
  c.set(rkey(r, "layout"), encode_layout(decision));
  c.set(key("latest"), std::to_string(r));
  if (const auto* problem = std::get_if<JoinProblem>(&decision)) throw AgentError(*problem);
  adopt(std::get<Layout>(decision), 0, recs);
  return Membership{layout, 0, r};
}

bool StoreBackend::Impl::still_waiting(StoreClient& c, int k, const std::string& state) {
  if (state.empty() || state == "in") return true;
  if (state != "out") {
    const std::string taken = key(fmt::format("taken/{}", k));
    c.set(key(fmt::format("refused/{}", k)),
          malformed_failure(MalformedRecord(taken, "neither 'in' nor 'out'"), o.run_id).cause);
  }
  return false;
}

bool StoreBackend::Impl::claim_members(StoreClient& c, const std::vector<int>& next) {
  std::lock_guard lock(arr_mu);
  std::vector<int> claimed;
  bool all = true;
  for (int k : next) {
    // Members of earlier rounds were claimed then; only newcomers are claimed now.
    if (std::find(waiting.begin(), waiting.end(), k) == waiting.end()) continue;
    const std::string taken = key(fmt::format("taken/{}", k));
    if (const std::string state = c.compare_set(taken, "", "in"); state == "in") {
      claimed.push_back(k);
    } else if (!still_waiting(c, k, state)) {
      std::erase(waiting, k);
      all = false;
    }
  }
  if (all) return true;
  // No round now: the ones claimed may still withdraw while the members are chosen again.
  for (int k : claimed) c.compare_set(key(fmt::format("taken/{}", k)), "in", "");
  return false;
}

void StoreBackend::Impl::adopt(const Layout& l, int rank, const std::vector<JoinRecord>& recs) {
  std::lock_guard lock(mu);
  layout = l;
  o.machine_rank = rank;
  o.num_machines = static_cast<int>(l.local_processes.size());
  hosts.clear();
  for (const JoinRecord& r : recs) hosts.push_back(r.host);
  lost.clear();
}

// A non-host's place in round r's layout; nullopt when it is not in it.
std::optional<Membership> StoreBackend::Impl::find_me(StoreClient& c, const Layout& l) {
  auto it = std::find(l.slots.begin(), l.slots.end(), slot);
  if (it == l.slots.end()) return std::nullopt;
  std::vector<JoinRecord> recs;
  for (int k : l.slots) {
    const std::string k_key = key(fmt::format("arrival/{}", k));
    recs.push_back(decode_join(c.get(k_key), k_key));
  }
  const int rank = static_cast<int>(it - l.slots.begin());
  adopt(l, rank, recs);
  return Membership{layout, rank};
}

int StoreBackend::Impl::known_now() {
  std::lock_guard lock(arr_mu);
  return known;
}

std::vector<JoinRecord> StoreBackend::Impl::records_of(const std::vector<int>& slots) {
  std::lock_guard lock(arr_mu);
  std::vector<JoinRecord> out;
  for (int k : slots) out.push_back(records.at(k));
  return out;
}

// The host: there is no round r, and every launcher reads why before this one exits.
void StoreBackend::Impl::fail_round(StoreClient& c, int r, const JoinProblem& problem,
                                    bool interrupted) {
  c.set(rkey(r, "layout"), encode_layout(problem));
  c.set(key("latest"), std::to_string(r));
  ack_wait(c, interrupted);
  throw AgentError(problem);
}

// Before the host exits on a problem, the waiting launchers get to read why (not those that
// withdrew: they are gone).
void StoreBackend::Impl::ack_wait(StoreClient& c, bool interrupted) {
  std::vector<std::string> acks;
  try {
    poll_arrivals(c);
    {
      std::lock_guard lock(arr_mu);
      for (int k : waiting) acks.push_back(key(fmt::format("layout_ack/{}", k)));
    }
    wait_for_acks(c, acks, interrupted);
  } catch (const rendezvous::StoreError&) {
  }
}

}  // namespace xlaunch::cluster
