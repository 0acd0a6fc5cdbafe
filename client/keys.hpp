// The store keys this library uses, all under one prefix per run and attempt so they
// never collide with a user's keys, PyTorch's, or a previous attempt's. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace xlaunch::detail {

/// "xlaunch/client/<run_id>/attempt_<restart_count>/".
std::string key_prefix(std::string_view run_id, int restart_count);

/// The counter of Worlds `rank` made in an attempt: "<attempt_prefix>worlds/rank_<rank>".
std::string world_counter_key(std::string_view attempt_prefix, int rank);

/// The keys of a rank's `number`-th World (1 for the first): "<attempt_prefix>world_<n>/".
/// Every rank's n-th World meets the others' n-th, as PyTorch's process groups do.
std::string world_prefix(std::string_view attempt_prefix, std::int64_t number);

/// Key names for each collective step; `generation` counts calls of that kind, which every
/// rank makes in the same order.
struct Keys {
  std::string prefix;

  /// Counter of ranks that reached barrier `generation`.
  std::string barrier_arrived(std::uint64_t generation) const;
  /// Set by the last rank to arrive; everyone waits for it.
  std::string barrier_done(std::uint64_t generation) const;
  /// The unique id record of nccl_unique_id() call `generation` (see IdRecord).
  std::string nccl_id(std::uint64_t generation) const;
  /// Root of the keys of nccl_comm() call `generation`: id, arrived, ready, error.
  std::string nccl_comm(std::uint64_t generation) const;
  /// Prefix under which Gloo's own rendezvous keys of gloo_context() call `generation` go.
  std::string gloo(std::uint64_t generation) const;
};

/// What rank 0 publishes for the others: the NCCL id, or why it could not make one, so a
/// failure there does not leave the other ranks waiting until their timeout.
struct IdOk {
  std::string bytes;
};
struct IdFailed {
  std::string message;
};
using IdRecord = std::variant<IdOk, IdFailed>;

/// 'K' + id bytes, or 'E' + message.
std::string encode_id_record(const IdRecord& record);
/// Inverse of encode_id_record; a malformed value (wrong tag, wrong id size) is IdFailed.
IdRecord decode_id_record(std::string_view value, std::size_t id_size);

}  // namespace xlaunch::detail
