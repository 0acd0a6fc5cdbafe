#include "rendezvous/pending_budget.hpp"

namespace xlaunch::rendezvous {

void PendingBudget::set(ConnId conn, std::size_t bytes) {
  auto it = held_.find(conn);
  if (it != held_.end()) {
    if (it->second == bytes) return;
    total_ -= it->second;
    by_size_.erase({it->second, conn});
    if (bytes == 0) {
      held_.erase(it);
      return;
    }
    it->second = bytes;
  } else {
    if (bytes == 0) return;
    held_.emplace(conn, bytes);
  }
  total_ += bytes;
  by_size_.emplace(bytes, conn);
}

std::optional<PendingBudget::Holder> PendingBudget::largest() const {
  if (by_size_.empty()) return std::nullopt;
  const auto& [bytes, conn] = *by_size_.rbegin();
  return Holder{conn, bytes};
}

}  // namespace xlaunch::rendezvous
