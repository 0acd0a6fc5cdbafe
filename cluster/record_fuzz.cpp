// libFuzzer target: arbitrary bytes through every decoder of the launchers' records (store
// and etcd), checking their contract: a decoder either throws MalformedRecord naming the key,
// or returns a record within the bounds record_codec.hpp promises, which encodes and decodes
// back to itself. Built only with XLAUNCH_FUZZ (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cluster/etcd_layout.hpp"
#include "cluster/record_codec.hpp"

using namespace xlaunch::cluster;

namespace {

constexpr std::string_view kKey = "xlaunch/fuzz/record";

void check(bool ok) {
  if (!ok) std::abort();
}

bool printable(std::string_view text, bool lines) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 || u == 0x7f) && !(lines && c == '\n')) return false;
  }
  return true;
}

void check_join(const JoinRecord& r) {
  check(r.machine_rank >= -1 && r.machine_rank < kMaxMachines);
  check(r.local_processes >= 1 && r.local_processes <= kMaxLocalProcesses);
  check(r.pid >= 0);
  check(printable(r.host, false) && printable(r.version, false));
  const JoinRecord back = decode_join(encode(r), kKey);
  check(back.machine_rank == r.machine_rank && back.host == r.host && back.pid == r.pid &&
        back.local_processes == r.local_processes && back.version == r.version &&
        back.settings == r.settings);
}

void check_layout(const std::variant<Layout, JoinProblem>& decision) {
  if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
    check(problem->exit_code >= 1 && problem->exit_code <= 255);
    check(printable(problem->message, true));
  } else {
    const Layout& l = std::get<Layout>(decision);
    check(!l.local_processes.empty() && l.local_processes.size() <= kMaxMachines);
    for (int n : l.local_processes) check(n >= 1 && n <= kMaxLocalProcesses);
    check(l.world_size() >= 1);
    check(l.slots.empty() || l.slots.size() == l.local_processes.size());
  }
  const auto back = decode_layout(encode_layout(decision), kKey);
  check(back.index() == decision.index());
}

void check_failure(const FailureRecord& f) {
  check(f.machine_rank >= -1 && f.machine_rank < kMaxMachines && f.rank >= -1);
  check(f.exit_code >= 0 && f.exit_code <= 255);
  check(printable(f.host, false) && printable(f.cause, false));
  check(decode_failure(encode(f), kKey).describe() == f.describe());
}

// Runs one decoder; a refusal must name the key.
template <class Decode>
void attempt(Decode decode) {
  try {
    decode();
  } catch (const MalformedRecord& e) {
    check(e.key() == kKey && !e.problem().empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Byte 0 picks the decoder; the rest is the value as read from the store or etcd.
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0:
      attempt([&] { check_join(decode_join(text, kKey)); });
      break;
    case 1:
      attempt([&] { check_layout(decode_layout(text, kKey)); });
      break;
    case 2:
      attempt([&] { check_failure(decode_failure(text, kKey)); });
      break;
    case 3:
      attempt([&] {
        if (auto f = decode_verdict(text, kKey)) check_failure(*f);
      });
      break;
    case 4:
      attempt([&] {
        etcd::Member m;
        etcd::decode_member(text, kKey, m);
        check_join(m.record);
        check(m.store_port >= 1 && m.store_port <= 65535);
      });
      break;
    case 5:
      attempt([&] {
        const etcd::Decision d = etcd::decode_decision(text, kKey);
        check_layout(d.outcome);
        if (const auto* l = std::get_if<Layout>(&d.outcome)) {
          check(d.leases.size() == l->local_processes.size() && d.hosts.size() == d.leases.size());
        }
        check(etcd::decode_decision(etcd::encode(d), kKey).leases == d.leases);
      });
      break;
    default:
      attempt([&] { check(decode_count(text, -5, 5, kKey) >= -5); });
      attempt([&] { check(printable(decode_message(text, kKey), true)); });
      break;
  }
  return 0;
}
