#include "diagnose/stall_detect.hpp"

namespace xlaunch::diagnose {

bool StallDetector::update(TimePoint now, const std::vector<RankActivity>& ranks) {
  bool progress = !started_;
  const double elapsed = started_ ? std::chrono::duration<double>(now - last_).count() : 0;
  for (const RankActivity& r : ranks) {
    auto prev = previous_.find(r.rank);
    if (prev == previous_.end()) {
      progress = true;  // a new rank (a restart): a fresh start
    } else if (r.output_lines != prev->second.output_lines ||
               r.store_requests != prev->second.store_requests ||
               r.cpu_seconds - prev->second.cpu_seconds > kBusyFraction * elapsed ||
               (r.io_bytes > prev->second.io_bytes &&
                static_cast<double>(r.io_bytes - prev->second.io_bytes) >
                    kIoBytesPerSecond * elapsed)) {
      progress = true;
    }
    cpu_now_[r.rank] = r.cpu_seconds;
  }
  previous_.clear();
  for (const RankActivity& r : ranks) previous_[r.rank] = r;
  started_ = true;
  last_ = now;
  if (progress) {
    quiet_since_ = now;
    reported_ = false;
    cpu_at_start_ = cpu_now_;
    return false;
  }
  if (reported_ || timeout_.count() <= 0 || now - quiet_since_ < timeout_) return false;
  reported_ = true;
  return true;
}

double StallDetector::cpu_in_window(int rank) const {
  auto start = cpu_at_start_.find(rank);
  auto now = cpu_now_.find(rank);
  if (start == cpu_at_start_.end() || now == cpu_now_.end()) return 0;
  return now->second - start->second;
}

}  // namespace xlaunch::diagnose
