#include "launcher/failure_record.hpp"

#include <fmt/format.h>

namespace xlaunch::launcher {

std::string FailureRecord::describe() const {
  if (machine_rank < 0) return cause;  // no machine to blame (a malformed record, say)
  if (rank >= 0)
    return fmt::format("machine {} ({}), rank {}: {}", machine_rank, host, rank, cause);
  return fmt::format("machine {} ({}): {}", machine_rank, host, cause);
}

}  // namespace xlaunch::launcher
