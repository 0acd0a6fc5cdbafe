#include "launcher/stop_request.hpp"

namespace xlaunch::launcher {

StopResponse respond_to_stop(const StopState& state) {
  // First: a signal read after the last worker's end must not start the stop (a timer of
  // --term_timeout with nobody left to wait for, then 128+signal for a job that ended).
  if (state.attempt_done) return StopResponse::after_the_end;
  if (state.interrupted) {
    return state.within_same_request ? StopResponse::same_request : StopResponse::kill_now;
  }
  return state.failing ? StopResponse::hurry_teardown : StopResponse::stop;
}

}  // namespace xlaunch::launcher
