// The launcher's signals other than the stop signals (docs/launch.md, "Signals"): those
// --signals_to_handle names (SIGUSR1 before a SLURM time limit, say) are forwarded to every
// worker and the job goes on; SIGUSR1 and SIGUSR2 not named are only noted, so that a
// scheduler's warning does not end the launcher and with it the job.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>

#include "launcher/console.hpp"
#include "launcher/report.hpp"
#include "launcher/supervisor_impl.hpp"

namespace xlaunch::launcher {
namespace {

constexpr int kNotedSignals[] = {SIGUSR1, SIGUSR2};

bool forwarded(const LaunchPlan& plan, int signal) {
  return std::ranges::find(plan.forwarded_signals, signal) != plan.forwarded_signals.end();
}

}  // namespace

void Supervisor::Impl::add_other_signals() {
  for (int signal : plan.forwarded_signals) other_signals.add(signal);
  for (int signal : kNotedSignals) {
    if (!forwarded(plan, signal)) other_signals.add(signal);
  }
}

void Supervisor::Impl::watch_other_signals() {
  other_signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (forwarded(plan, signal)) {
      forward_signal(signal);
    } else {
      say("xlaunch: {}: not forwarded to the workers (name it in --signals_to_handle to "
          "forward it)\n",
          signal_name(signal));
      files.log(fmt::format("received {}: not forwarded (not in --signals_to_handle)",
                            signal_name(signal)));
    }
    if (!attempt_done) watch_other_signals();
  });
}

void Supervisor::Impl::forward_signal(int signal) {
  int sent = 0;
  for (Worker& worker : workers) {
    // To the worker process only, not its group: its DataLoader workers and helpers would
    // end on a signal they do not handle. A worker not reaped yet keeps its pid.
    if (!worker.running) continue;
    if (::kill(static_cast<pid_t>(worker.outcome.pid), signal) == 0) ++sent;
  }
  say("xlaunch: {}: forwarded to every worker ({})\n", signal_name(signal), sent);
  files.log(fmt::format("received {}: forwarded to {} worker(s)", signal_name(signal), sent));
}

void Supervisor::Impl::ignore_other_signals() {
  // Once the workers are gone, a late one must not end the launcher (the default action of
  // most of them) while it writes the run's summary.
  boost::system::error_code ignored;
  other_signals.clear(ignored);
  for (int signal : plan.forwarded_signals) ::signal(signal, SIG_IGN);
  for (int signal : kNotedSignals) ::signal(signal, SIG_IGN);
}

}  // namespace xlaunch::launcher
