// The stall monitor's set-up (the sitecustomize folder, the `xlaunch stacks` socket), its
// timer, the stall report, and what the supervisor calls.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/absolute_path.hpp"
#include "diagnose/stacks_site.hpp"
#include "diagnose/stacks_target.hpp"
#include "diagnose/stall_monitor_impl.hpp"

namespace xlaunch::diagnose {
namespace {

constexpr auto kTick = std::chrono::seconds(1);

bool write_whole(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

StallMonitor::Impl::Impl(asio::io_context& i, Options o, Output w, StoreClients s, StallMonitor* m)
    : io(i), options(std::move(o)), out(std::move(w)), store_clients(std::move(s)), self(m) {
  if (options.python_stacks && options.python_ranks) make_python_dir();
  run_scope = {options.run_cgroup_procs, static_cast<long>(::getpid()), options.guardian_pid};
  channel.emplace(io, options.registry_dir, options.run_id,
                  [this](StacksChannel::Reply reply) { on_stacks_request(std::move(reply)); });
  if (channel->folder_refused()) {
    out.say(fmt::format("xlaunch: warning: `xlaunch stacks` cannot reach this job: {}\n",
                        channel->problem()));
  } else if (!channel->problem().empty()) {
    // Most often another launcher of the same run id here (a job step that reuses
    // $SLURM_JOB_ID, machines of one job tried out on one host): it answers instead.
    out.say(fmt::format("xlaunch: note: `xlaunch stacks {}` reaches another launcher, not "
                        "this one: {}\n",
                        options.run_id, channel->problem()));
  }
  if (!channel->problem().empty()) out.log("xlaunch stacks: " + channel->problem());
}

StallMonitor::Impl::~Impl() {
  channel.reset();
  if (temp_dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(temp_dir, ec);
}

void StallMonitor::Impl::make_python_dir() {
  // Absolute, as the workers get paths in it (PYTHONPATH, XLAUNCH_STACKS_DIR). The pid: on
  // one host, the machines of a job share its run id.
  const std::string folder = config::temp_root();
  const std::string prefix = fmt::format("xlaunch-stacks-{}-{}-", options.run_id, ::getpid());
  if (options.before_temp_dir) options.before_temp_dir(folder, prefix);
  std::string pattern = fmt::format("{}/{}XXXXXX", folder, prefix);
  if (::mkdtemp(pattern.data()) == nullptr) {
    out.log(fmt::format("python stacks off: cannot create {}: {}", pattern, std::strerror(errno)));
    return;
  }
  temp_dir = pattern;
  python_dir = temp_dir + "/python";
  stacks_dir = temp_dir + "/stacks";
  // A scratch file in a new private folder, read by no one before the workers start and
  // gone with the run: written once, without the fsync and rename of a user's file.
  const std::string site = python_dir + "/sitecustomize.py";
  int fd = -1;
  if (::mkdir(python_dir.c_str(), 0777) != 0 || ::mkdir(stacks_dir.c_str(), 0777) != 0 ||
      (fd = ::open(site.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0 ||
      !write_whole(fd, sitecustomize_text(::getpid()))) {
    out.log(fmt::format("python stacks off: cannot write {}: {}", site, std::strerror(errno)));
    python_dir.clear();
    stacks_dir.clear();
  }
  if (fd >= 0) ::close(fd);
}

void StallMonitor::Impl::arm_tick() {
  tick_timer.expires_after(kTick);
  tick_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !active) return;
    // A diagnosis must not end the run it watches: a sample that fails is logged, once, and
    // the next one tried.
    try {
      tick();
    } catch (const std::exception& e) {
      if (!tick_failed) out.log(fmt::format("stall monitor: a sample failed: {}", e.what()));
      tick_failed = true;
    }
    arm_tick();
  });
}

RankStallState StallMonitor::Impl::state_of(const RankInfo& r) const {
  RankStallState s;
  s.rank = r.rank;
  s.pid = r.pid;
  s.alive = r.alive;
  s.stopped = r.alive && r.stopped;
  s.ended = r.ended;
  s.ended_at = r.ended_at;
  s.last_line = r.last_line;
  s.last_output = r.last_output;
  s.waiting_keys = r.waiting_keys;
  s.dialing = r.connecting;
  // A refused connect has no SYN_SENT row: the target found by the dial check.
  if (r.dial_target &&
      std::find(s.dialing.begin(), s.dialing.end(), *r.dial_target) == s.dialing.end()) {
    s.dialing.push_back(*r.dial_target);
  }
  if (detector) s.cpu_seconds = detector->cpu_in_window(r.rank);
  return s;
}

void StallMonitor::Impl::report_stall(double window, const std::vector<RankStacks>& stacks) {
  if (!active) return;
  StallReport report;
  report.window_seconds = window;
  report.at = Clock::now();
  for (const auto& [local, r] : ranks) {
    if (r.started) report.ranks.push_back(state_of(r));
  }
  report.stacks = group_stacks(stacks);
  const std::string text = format_stall_report(report);
  out.say(text);
  out.log(text);
  last_stall_json = diagnose::stall_json(report);
  if (options.stop_on_stall && self->on_stall_stop) self->on_stall_stop();
}

StallMonitor::StallMonitor(boost::asio::io_context& io, Options options, Output output,
                           StoreClients store_clients)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(output),
                                   std::move(store_clients), this)) {}

StallMonitor::~StallMonitor() = default;

void StallMonitor::add_worker_env(std::map<std::string, std::string>& env) const {
  if (impl_->python_dir.empty()) return;
  const auto path = env.find("PYTHONPATH");
  env["PYTHONPATH"] = path != env.end() && !path->second.empty()
                          ? impl_->python_dir + ":" + path->second
                          : impl_->python_dir;
  env["XLAUNCH_STACKS_DIR"] = impl_->stacks_dir;
  env["XLAUNCH_STACKS_SIGNAL"] = std::to_string(stacks_signal());
  // A fatal signal (SIGSEGV, SIGABRT...) prints the Python traceback to stderr, which the
  // root-cause report shows.
  if (!env.contains("PYTHONFAULTHANDLER")) env["PYTHONFAULTHANDLER"] = "1";
}

void StallMonitor::begin_attempt(const std::string& store_addr, std::uint16_t store_port) {
  Impl& s = *impl_;
  s.store_addr = store_addr;
  s.store_port = store_port;
  s.ranks.clear();
  s.active = true;
  s.collecting = false;
  s.dump_again = false;
  s.ranks_started = false;
  s.detector.reset();
  if (s.options.stall_timeout.count() > 0) s.detector.emplace(s.options.stall_timeout);
  s.arm_tick();
  s.channel->start();
}

void StallMonitor::on_start(int local_rank, int rank, long pid) {
  Impl::RankInfo& r = impl_->ranks[local_rank];
  r = Impl::RankInfo{};
  r.rank = rank;
  r.pid = pid;
  // Its files are named with the pid it sees for itself (another in a PID namespace); a rank
  // that runs no Python writes none, and its /proc need not be read at start.
  const Impl& s = *impl_;
  r.own_pid = s.options.python_stacks && s.options.python_ranks ? read_own_pid(pid) : pid;
  r.started = true;
  r.alive = true;
}

void StallMonitor::on_ranks_started() {
  Impl& s = *impl_;
  s.ranks_started = true;
  if (!s.waiting.empty() && !s.collecting) s.dump_on_request();
}

void StallMonitor::on_output(int local_rank, std::uint64_t lines, std::string_view last_line,
                             std::chrono::system_clock::time_point when) {
  Impl::RankInfo& r = impl_->ranks[local_rank];
  r.lines += lines;
  if (last_line.empty()) return;
  if (!r.last_line) r.last_line.emplace();
  r.last_line->assign(last_line.substr(0, 300));
  r.last_output = when;
}

void StallMonitor::on_end(int local_rank, std::string description) {
  Impl::RankInfo& r = impl_->ranks[local_rank];
  r.alive = false;
  r.dial_target.reset();
  r.ended = std::move(description);
  r.ended_at = Clock::now();
}

void StallMonitor::end_attempt() {
  Impl& s = *impl_;
  s.active = false;
  s.tick_timer.cancel();
  s.dump_timer.cancel();
  s.channel->stop();  // a request not answered yet: the client hears the attempt ended
  s.waiting.clear();
}

const std::string& StallMonitor::temp_dir() const { return impl_->temp_dir; }

const std::string& StallMonitor::socket_path() const { return impl_->channel->path(); }

const std::optional<std::string>& StallMonitor::stall_json() const {
  return impl_->last_stall_json;
}

}  // namespace xlaunch::diagnose
