// The join through machine 0's store: every launcher takes an arrival slot and writes its
// record; machine 0 decides the layout (fixed jobs) or round 0's members (elastic jobs), and
// the others read it.
#include <algorithm>

#include "cluster/blame.hpp"
#include "cluster/membership.hpp"
#include "cluster/seconds.hpp"
#include "cluster/store_backend_impl.hpp"
#include "config/text.hpp"
#include "launcher/console.hpp"

namespace xlaunch::cluster {

using launcher::say;
using rendezvous::StoreError;
using rendezvous::StoreTimeout;
using StoreClient = rendezvous::StoreClient;
using Steady = std::chrono::steady_clock;

namespace {

// "machine 2", or "this machine" for one whose rank the join decides.
std::string machine_name(int machine_rank) {
  return machine_rank >= 0 ? fmt::format("machine {}", machine_rank) : "this machine";
}

std::chrono::milliseconds remaining(Steady::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()),
                  std::chrono::milliseconds(1));
}

// The longest a wait of the join lasts before it looks for a stop signal again.
constexpr std::chrono::milliseconds kJoinSlice{200};
// How long a launcher leaving for a stop signal waits for the others to read why (they look
// every kJoinSlice), and how long an interrupted newcomer that the host claimed waits for the
// round that takes it in (published right after the claim).
constexpr std::chrono::milliseconds kInterruptedWait{1000};

}  // namespace

Membership StoreBackend::join() {
  Impl& s = *impl_;
  const auto deadline = Steady::now() + s.o.rdzv_timeout;
  try {
    s.register_arrival();
  } catch (const Impl::Interrupted& stop) {  // no record written yet: nobody to tell
    throw AgentError(join_interrupted(s.o.record(), stop.signal));
  }
  Membership m = s.elastic() ? s.elastic_join() : s.fixed_join(deadline);
  s.stop_checks = false;  // from here on, a stop signal is the supervisor's
  return m;
}

void StoreBackend::Impl::check_stop() const {
  if (const std::optional<int> signal = stop_signal()) throw Interrupted{*signal};
}

bool StoreBackend::Impl::wait_join_key(StoreClient& c, const std::string& k,
                                       const std::string& watch, Steady::time_point deadline) {
  for (;;) {
    check_stop();
    if (!watch.empty() && c.check({watch})) return false;
    try {
      c.wait({k}, std::min(remaining(deadline), kJoinSlice));
      return true;
    } catch (const StoreTimeout&) {
      if (Steady::now() >= deadline) throw;
    }
  }
}

void StoreBackend::Impl::register_arrival() {
  const std::string counter = key("arrivals");
  try {
    client = connect(o.rdzv_timeout, /*interruptible=*/true);
    me = o.record();
    const std::int64_t k = client->add(counter, 1);
    slot = static_cast<int>(decode_count(std::to_string(k), 1, kMaxArrivals, counter));
    client->set(key(fmt::format("arrival/{}", slot)), encode(me));
  } catch (const MalformedRecord& e) {
    throw AgentError(malformed_failure(e, o.run_id).cause, 1);
  } catch (const StoreError& e) {
    check_stop();  // the connect gave up for it
    if (auto malformed = malformed_counter(counter)) {
      throw AgentError(malformed_failure(*malformed, o.run_id).cause, 1);
    }
    throw AgentError(
        fmt::format("{}: cannot reach machine 0's store at {}:{} within --rdzv_timeout "
                    "{:g}s: {}; check that machine 0's launcher runs, --main_process_ip/port, "
                    "and the firewall",
                    machine_name(o.machine_rank), o.store_host, o.store_port,
                    seconds(o.rdzv_timeout), e.what()),
        1);
  }
}

Membership StoreBackend::Impl::fixed_join(Steady::time_point deadline) {
  std::variant<Layout, JoinProblem> decision;
  std::vector<JoinRecord> arrivals;
  std::vector<std::string> keys;
  try {
    try {
      decision = o.machine_rank == 0 ? decide_job(deadline, arrivals, keys)
                                     : follow_job(deadline, arrivals, keys);
    } catch (const Interrupted& stop) {
      decision = withdraw(stop.signal, deadline, arrivals, keys);
    }
    if (const auto* problem = std::get_if<JoinProblem>(&decision)) throw AgentError(*problem);
    layout = std::get<Layout>(decision);
    check_fixed_layout(layout, o.num_machines, key("layout"));
    hosts = hosts_by_rank(layout, arrivals, keys);
  } catch (const StoreTimeout&) {
    throw AgentError(fmt::format("{}: machine 0 did not announce the job within "
                                 "--rdzv_timeout {:g}s",
                                 machine_name(o.machine_rank), seconds(o.rdzv_timeout)),
                     1);
  } catch (const StoreError& e) {
    throw AgentError(
        fmt::format("{}: lost machine 0's store at {}:{} while joining: {}",
                    machine_name(o.machine_rank), o.store_host, o.store_port, e.what()),
        1);
  } catch (const MalformedRecord& e) {
    throw AgentError(
        fmt::format("{}: {}", machine_name(o.machine_rank), malformed_failure(e, o.run_id).cause),
        1);
  }
  if (o.machine_rank < 0) {  // a launcher without a rank takes the one its arrival got
    if (slot > o.num_machines) {
      throw AgentError(fmt::format("the {}-machine job formed without this launcher: {} "
                                   "launchers joined before it",
                                   o.num_machines, o.num_machines),
                       2);
    }
    o.machine_rank = arrivals.at(slot - 1).machine_rank;
  }
  if (slot > o.num_machines) {
    // The job formed without this launcher: an earlier one has its machine rank. Only this
    // one stops; the running job goes on (as through etcd: a re-submitted step must not end
    // it).
    std::optional<JoinRecord> holder;
    for (const JoinRecord& r : arrivals)
      if (r.machine_rank == o.machine_rank) holder = r;
    throw AgentError(late_duplicate(me, holder, o.run_id));
  }
  return Membership{layout, o.machine_rank};
}

// Machine 0: the first num_machines arrivals make the job, or the problem everyone prints
// (a malformed arrival record too). A launcher that withdraws meanwhile writes the layout
// first: then that one stands.
std::variant<Layout, JoinProblem> StoreBackend::Impl::decide_job(Steady::time_point deadline,
                                                                 std::vector<JoinRecord>& arrivals,
                                                                 std::vector<std::string>& keys) {
  const std::string layout_key = key("layout");
  bool complete = true;
  std::optional<JoinProblem> malformed;
  for (int k = 1; k <= o.num_machines && !malformed; ++k) {
    const std::string k_key = key(fmt::format("arrival/{}", k));
    try {
      if (!wait_join_key(*client, k_key, layout_key, deadline)) {
        return follow_standing_layout(deadline, arrivals, keys);
      }
    } catch (const StoreTimeout&) {
      complete = false;
      break;
    }
    try {
      arrivals.push_back(decode_join(client->get(k_key), k_key));
      keys.push_back(k_key);
    } catch (const MalformedRecord& e) {
      malformed = JoinProblem{1, malformed_failure(e, o.run_id).cause};
    }
  }
  std::vector<int> unwritten;
  if (!complete && !malformed) unwritten = read_later_arrivals(arrivals);
  if (complete && !malformed) assign_unclaimed_ranks(arrivals, o.num_machines);
  auto decision = malformed  ? std::variant<Layout, JoinProblem>(*malformed)
                  : complete ? decide_layout(arrivals, o.num_machines, o.total_processes)
                             : std::variant<Layout, JoinProblem>(missing_machines(
                                   arrivals, o.num_machines, o.rdzv_timeout, unwritten));
  // One job, one run id: machine 0's (the others' random ones are dropped).
  if (auto* decided = std::get_if<Layout>(&decision)) decided->run_id = o.job_run_id;
  const std::string ours = encode_layout(decision);
  if (client->compare_set(layout_key, "", ours) != ours) {
    return follow_standing_layout(deadline, arrivals, keys);
  }
  if (std::holds_alternative<JoinProblem>(decision)) arrivals_ack_wait(false);
  return decision;
}

// After the join timed out waiting for slot arrivals.size() + 1: if a client took that slot
// (the counter says so) and never wrote it, the slots taken from there on. Records found in
// later ones are added to `arrivals`, for the report: a machine that came after the empty
// slot did join.
std::vector<int> StoreBackend::Impl::read_later_arrivals(std::vector<JoinRecord>& arrivals) {
  constexpr std::int64_t kMostSlotsRead = 64;  // a report, not a scan of a flooded counter
  const auto first = static_cast<std::int64_t>(arrivals.size()) + 1;
  // Read, not ADDed: an ADD on a counter someone made no number would cost the connection.
  const std::string counter = key("arrivals");
  if (!client->check({counter})) return {};
  std::optional<std::int64_t> taken;
  try {
    taken = decode_count(client->get(counter), 0, kMaxArrivals, counter);
  } catch (const MalformedRecord&) {
    return {};  // not a count: the usual report
  }
  // Nobody took it (a machine did not come), or its record came just now: the usual report.
  if (*taken < first || client->check({key(fmt::format("arrival/{}", first))})) return {};
  std::vector<int> unwritten{static_cast<int>(first)};
  for (std::int64_t k = first + 1; k <= std::min(*taken, first + kMostSlotsRead); ++k) {
    const std::string k_key = key(fmt::format("arrival/{}", k));
    if (!client->check({k_key})) {
      unwritten.push_back(static_cast<int>(k));
      continue;
    }
    try {
      arrivals.push_back(decode_join(client->get(k_key), k_key));
    } catch (const MalformedRecord&) {  // someone else's writing: not a launcher that joined
    }
  }
  return unwritten;
}

void StoreBackend::Impl::arrivals_ack_wait(bool interrupted) {
  std::vector<std::string> acks;
  const auto arrived = std::clamp<std::int64_t>(client->add(key("arrivals"), 0), 0, kMaxArrivals);
  for (int k = 1; k <= arrived; ++k)
    if (k != slot) acks.push_back(key(fmt::format("layout_ack/{}", k)));
  wait_for_acks(*client, acks, interrupted);
}

std::variant<Layout, JoinProblem> StoreBackend::Impl::follow_standing_layout(
    Steady::time_point deadline, std::vector<JoinRecord>& arrivals,
    std::vector<std::string>& keys) {
  arrivals.clear();  // what this launcher read before is follow_job's to read again
  keys.clear();
  auto decision = follow_job(deadline, arrivals, keys);
  // A layout that stood before machine 0's is a withdrawal's: the job ends for an interrupt.
  if (o.machine_rank == 0 && std::holds_alternative<JoinProblem>(decision)) {
    arrivals_ack_wait(true);
  }
  return decision;
}

// Like torchrun's agent closing the rendezvous on a signal, but with the reason: every
// launcher that joined prints it and exits 128+signal. Lost to a layout written first, the
// signal waits for the supervisor (the job formed) or the layout's problem ends this one too.
std::variant<Layout, JoinProblem> StoreBackend::Impl::withdraw(int signal,
                                                               Steady::time_point deadline,
                                                               std::vector<JoinRecord>& arrivals,
                                                               std::vector<std::string>& keys) {
  stop_checks = false;
  const JoinProblem problem = join_interrupted(me, signal);
  const std::string ours = encode_layout(problem);
  if (client->compare_set(key("layout"), "", ours) != ours) {
    return follow_standing_layout(deadline, arrivals, keys);
  }
  if (o.machine_rank == 0) {
    arrivals_ack_wait(true);
  } else {
    client->set(key(fmt::format("layout_ack/{}", slot)), "1");  // machine 0 waits for it
  }
  return problem;
}

// The others: machine 0's answer, and the records of the machines in the job.
std::variant<Layout, JoinProblem> StoreBackend::Impl::follow_job(Steady::time_point deadline,
                                                                 std::vector<JoinRecord>& arrivals,
                                                                 std::vector<std::string>& keys) {
  // Machine 0 answers at its own deadline; allow for the launchers' different start times.
  const std::string layout_key = key("layout");
  wait_join_key(*client, layout_key, "", deadline + o.heartbeat_timeout);
  auto decision = decode_layout(client->get(layout_key), layout_key);
  if (const auto* layout = std::get_if<Layout>(&decision)) {
    // Machine 0 wrote every arrival it names before the layout: one missing is not its.
    check_fixed_layout(*layout, o.num_machines, layout_key);
    for (int k = 1; k <= o.num_machines; ++k) {
      keys.push_back(key(fmt::format("arrival/{}", k)));
      if (!client->check({keys.back()})) {
        throw MalformedRecord(layout_key, fmt::format("no arrival record {}", keys.back()));
      }
      arrivals.push_back(decode_join(client->get(keys.back()), keys.back()));
    }
    assign_unclaimed_ranks(arrivals, o.num_machines);  // as machine 0 did
  }
  client->set(key(fmt::format("layout_ack/{}", slot)), "1");
  return decision;
}

Membership StoreBackend::Impl::elastic_join() {
  try {
    try {
      return o.machine_rank == 0 ? elastic_host_first_round(*client)
                                 : elastic_wait_for_round(*client, 0);
    } catch (const Interrupted& stop) {
      stop_checks = false;
      if (o.machine_rank == 0) fail_round(*client, 0, join_interrupted(me, stop.signal), true);
      return elastic_withdraw(stop.signal);
    }
  } catch (const StoreError& e) {
    throw AgentError(fmt::format("lost machine 0's store at {}:{} while joining: {}", o.store_host,
                                 o.store_port, e.what()),
                     1);
  } catch (const MalformedRecord& e) {
    throw AgentError(malformed_failure(e, o.run_id).cause, 1);
  }
}

Membership StoreBackend::Impl::elastic_host_first_round(StoreClient& c) {
  const auto deadline = Steady::now() + o.rdzv_timeout;
  LastCall last_call(o.min_machines, o.last_call_timeout);
  bool told = false;
  for (;;) {
    check_stop();
    poll_arrivals(c);
    int arrived = 0;
    {
      std::lock_guard lock(arr_mu);
      arrived = 1 + static_cast<int>(waiting.size());
    }
    last_call.count(arrived, Steady::now());
    if (first_round_ready(arrived, o.min_machines, o.max_machines, last_call.over(Steady::now()))) {
      std::vector<int> next;
      {
        std::lock_guard lock(arr_mu);
        next = next_members({slot}, {}, waiting, o.max_machines);
      }
      if (claim_members(c, next)) return publish_round(c, 0, next);
      continue;  // one withdrew: count again
    }
    if (last_call.open() && !told) {
      told = true;
      say("xlaunch: {} of {}..{} machines joined; waiting up to {:g}s (last call) for more\n",
          arrived, o.min_machines, o.max_machines, seconds(o.last_call_timeout));
    }
    if (!last_call.open() && Steady::now() >= deadline) {  // MIN in: the last call ends it
      std::vector<JoinRecord> in;
      {
        std::lock_guard lock(arr_mu);
        in.push_back(me);
        for (int k : waiting) in.push_back(records.at(k));
      }
      fail_round(c, 0, too_few_to_start(in, o.min_machines, o.rdzv_timeout));
    }
    try {
      c.wait({key(fmt::format("arrival/{}", known_now() + 1))}, std::min(interval, kJoinSlice));
    } catch (const StoreTimeout&) {
    }
  }
}

// A non-host waits to be taken into a round: the first one formed with it in.
Membership StoreBackend::Impl::elastic_wait_for_round(StoreClient& c, int from_round) {
  // The host may wait --rdzv_timeout for MIN, then the last call: allow for both.
  const auto deadline = Steady::now() + o.rdzv_timeout + o.last_call_timeout + o.heartbeat_timeout;
  int target = from_round;
  for (;;) {
    check_stop();
    beat(c);  // alive while waiting
    if (auto m = look_for_round(c, target)) return *m;
    if (Steady::now() >= deadline) {
      throw AgentError(fmt::format("machine (slot {}) was not taken into the job within "
                                   "--rdzv_timeout {:g}s: it runs with its maximum of "
                                   "machines, or has no restarts left to re-form with",
                                   slot, seconds(o.rdzv_timeout)),
                       1);
    }
    try {
      c.wait({rkey(target, "layout")}, std::min(interval, kJoinSlice));
    } catch (const StoreTimeout&) {
    }
  }
}

std::optional<Membership> StoreBackend::Impl::look_for_round(StoreClient& c, int& target) {
  const std::string refused = key(fmt::format("refused/{}", slot));
  if (c.check({refused})) {
    throw AgentError(
        fmt::format("the job refused this machine: {}", decode_message(c.get(refused), refused)),
        2);
  }
  if (const std::string closed = key("closed"); c.check({closed})) {
    throw AgentError(fmt::format("the job ended (exit code {}) before this machine was "
                                 "taken in",
                                 decode_count(c.get(closed), 0, 255, closed)),
                     1);
  }
  if (const std::string latest = key("latest"); c.check({latest})) {
    target =
        std::max(target, static_cast<int>(decode_count(c.get(latest), 0, o.max_restarts, latest)));
  }
  for (;; ++target) {  // a round formed without this launcher: the next may take it
    const std::string round_layout = rkey(target, "layout");
    if (!c.check({round_layout})) return std::nullopt;
    auto decision = decode_layout(c.get(round_layout), round_layout);
    if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
      c.set(key(fmt::format("layout_ack/{}", slot)), "1");
      throw AgentError(*problem);
    }
    check_elastic_layout(std::get<Layout>(decision), o.max_machines, round_layout);
    if (auto m = find_me(c, std::get<Layout>(decision))) {
      round = target;
      m->round = target;
      return m;
    }
  }
}

// Not yet taken in, this launcher leaves alone: the job goes on without it. Claimed by the
// host first, it waits for the round that takes it in (then it is in the job, and the signal
// waits for the supervisor), or for the claim to be dropped (the host chose again); a claim
// that no round follows soon (a value another program wrote) does not keep it.
Membership StoreBackend::Impl::elastic_withdraw(int signal) {
  const std::string taken = key(fmt::format("taken/{}", slot));
  const auto give_up = Steady::now() + kInterruptedWait;
  int target = 0;
  for (;;) {
    const std::string state = client->compare_set(taken, "", "out");
    if (state == "out") throw AgentError(join_interrupted(me, signal));
    if (state != "in") throw MalformedRecord(taken, "neither 'in' nor 'out'");
    beat(*client);
    if (auto m = look_for_round(*client, target)) return *m;
    if (Steady::now() >= give_up) throw AgentError(join_interrupted(me, signal));
    try {
      client->wait({rkey(target, "layout")}, kJoinSlice);
    } catch (const StoreTimeout&) {
    }
  }
}

void StoreBackend::Impl::wait_for_acks(StoreClient& c, const std::vector<std::string>& acks,
                                       bool interrupted) {
  // Live launchers look every kJoinSlice: after an interrupt, a short wait reaches them all,
  // and a launcher that died is not waited for long.
  const auto limit =
      interrupted ? std::min(o.heartbeat_timeout, kInterruptedWait) : o.heartbeat_timeout;
  const auto deadline = Steady::now() + limit;
  while (!acks.empty()) {
    try {
      c.wait(acks, std::min(remaining(deadline), kJoinSlice));
      return;
    } catch (const StoreTimeout&) {
    }
    // A Ctrl-C (not the one this launcher is leaving for) ends the wait too.
    if (Steady::now() >= deadline || (!interrupted && stop_signal())) {
      return;
    }
  }
}

}  // namespace xlaunch::cluster
