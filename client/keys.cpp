#include "client/keys.hpp"

#include <fmt/core.h>

namespace xlaunch::detail {

std::string key_prefix(std::string_view run_id, int restart_count) {
  return fmt::format("xlaunch/client/{}/attempt_{}/", run_id, restart_count);
}

std::string world_counter_key(std::string_view attempt_prefix, int rank) {
  return fmt::format("{}worlds/rank_{}", attempt_prefix, rank);
}

std::string world_prefix(std::string_view attempt_prefix, std::int64_t number) {
  return fmt::format("{}world_{}/", attempt_prefix, number);
}

std::string Keys::barrier_arrived(std::uint64_t generation) const {
  return fmt::format("{}barrier/{}/arrived", prefix, generation);
}

std::string Keys::barrier_done(std::uint64_t generation) const {
  return fmt::format("{}barrier/{}/done", prefix, generation);
}

std::string Keys::nccl_id(std::uint64_t generation) const {
  return fmt::format("{}nccl_id/{}", prefix, generation);
}

std::string Keys::nccl_comm(std::uint64_t generation) const {
  return fmt::format("{}nccl_comm/{}/", prefix, generation);
}

std::string Keys::gloo(std::uint64_t generation) const {
  return fmt::format("{}gloo/{}/", prefix, generation);
}

std::string encode_id_record(const IdRecord& record) {
  if (const auto* ok = std::get_if<IdOk>(&record)) return "K" + ok->bytes;
  return "E" + std::get<IdFailed>(record).message;
}

IdRecord decode_id_record(std::string_view value, std::size_t id_size) {
  if (!value.empty() && value.front() == 'K' && value.size() == id_size + 1) {
    return IdOk{std::string(value.substr(1))};
  }
  if (!value.empty() && value.front() == 'E') return IdFailed{std::string(value.substr(1))};
  return IdFailed{
      fmt::format("malformed NCCL id record ({} bytes) in the store: another "
                  "program may be using xlaunch's keys",
                  value.size())};
}

}  // namespace xlaunch::detail
