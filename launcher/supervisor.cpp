#include "launcher/supervisor.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>
#include <deque>
#include <system_error>
#include <unordered_map>

#include "diagnose/output_activity.hpp"
#include "diagnose/stacks_registry.hpp"
#include "diagnose/stall_monitor.hpp"
#include "launcher/console.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/line_splitter.hpp"
#include "launcher/process.hpp"
#include "launcher/worker_env.hpp"

namespace asio = boost::asio;

namespace xlaunch::launcher {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kStderrTailLines = 20;
// After a worker exits, how long its pipes may stay open (held by a descendant) before the
// launcher stops reading them and reports the exit anyway.
constexpr auto kDrainGrace = std::chrono::seconds(2);

struct Stream {
  std::unique_ptr<asio::posix::stream_descriptor> pipe;
  std::vector<char> buffer;
  LineSplitter splitter;
  int log_fd = -1;
  ConsoleStream console = ConsoleStream::out;
  bool shown = true;
  bool is_stderr = false;
  bool bar_open = false;  // the last piece shown ended in '\r': the console line is unfinished
};

// A worker's life in one attempt: started, then reaped (its process ended) and drained (its
// pipes read to the end, or the grace ran out), in either order; finished when both.
struct Worker {
  WorkerOutcome outcome;
  std::string prefix;  // "[rank3]: "
  std::string error_file;
  Stream out;
  Stream err;
  std::deque<std::string> stderr_tail;
  bool running = false;  // the process has not been reaped yet
  bool finished = false;
  std::unique_ptr<asio::steady_timer> drain_timer;

  bool drained() const { return !out.pipe && !err.pipe; }
};

}  // namespace

struct Supervisor::Impl {
  const LaunchPlan& plan;
  const Environment& parent_env;
  RunFiles& files;
  std::string host;
  GroupGuardian& guardian;

  asio::io_context io;
  asio::signal_set child_signals{io, SIGCHLD};
  asio::signal_set stop_signals{io};  // those not ignored at start (add_stop_signals)
  asio::steady_timer kill_timer{io};
  std::unique_ptr<asio::posix::stream_descriptor> console_waiters[2];
  bool console_armed[2] = {false, false};

  std::vector<Worker> workers;
  std::unordered_map<long, std::size_t> by_pid;
  int unfinished = 0;     // workers started and not finished
  bool spawning = false;  // the attempt cannot end before every worker was started
  bool stopping = false;
  bool attempt_done = false;  // nothing to wait for: handlers must not re-arm
  std::optional<std::size_t> first_failure;
  std::optional<int> interrupted_by;
  bool signal_after_failure = false;  // interrupted_by came after first_failure
  std::string console_piece;
  const AttemptHooks* hooks = nullptr;
  int attempt = 0;
  bool failure_published = false;
  std::unique_ptr<diagnose::StallMonitor> monitor;  // stalls, stacks, wrong addresses (diagnose.md)
  bool stalled_stop = false;                        // --on_stall stop stopped this attempt
  diagnose::OutputActivity activity;  // lines per rank per second, for the run's picture

  Impl(const LaunchPlan& p, const Environment& env, RunFiles& f, std::string h, GroupGuardian& g)
      : plan(p), parent_env(env), files(f), host(std::move(h)), guardian(g) {
    add_stop_signals();
    // Text queued from another thread (the agent's monitor) must get written too.
    console_on_backlog([this] { asio::post(io, [this] { arm_console(); }); });
  }

  ~Impl() { console_on_backlog({}); }

  // --- output -----------------------------------------------------------------------

  void read_more(Worker& worker, Stream& stream) {
    stream.pipe->async_read_some(
        asio::buffer(stream.buffer),
        [this, &worker, &stream](const boost::system::error_code& ec, std::size_t n) {
          // Closed meanwhile: a read that completed just before the drain grace ran out.
          if (!stream.pipe) return;
          if (n > 0) on_bytes(worker, stream, std::string_view(stream.buffer.data(), n));
          if (ec) {
            close_stream(worker, stream);
          } else {
            read_more(worker, stream);
          }
        });
  }

  void on_bytes(Worker& worker, Stream& stream, std::string_view bytes) {
    if (stream.log_fd >= 0) write_all(stream.log_fd, bytes);
    stream.splitter.feed(bytes, [&](std::string_view text, char terminator) {
      on_piece(worker, stream, text, terminator);
    });
    arm_console();
  }

  void on_piece(Worker& worker, Stream& stream, std::string_view text, char terminator) {
    if (text.empty() && terminator == '\r') return;  // tqdm starts each redraw with '\r'
    if (monitor) monitor->on_output(worker.outcome.local_rank, text);
    activity.note(attempt, worker.outcome.rank, Clock::now());
    if (stream.is_stderr && !text.empty()) {
      worker.stderr_tail.emplace_back(text);
      if (worker.stderr_tail.size() > kStderrTailLines) worker.stderr_tail.pop_front();
    }
    if (!stream.shown) return;
    console_piece.clear();
    append_prefixed(console_piece, worker.prefix, text, terminator);
    console_worker_text(stream.console, console_piece);
    stream.bar_open = terminator == '\r';
  }

  // Waits for the console to take more while it has a backlog; never blocks the loop.
  void arm_console() {
    if (attempt_done) return;
    for (ConsoleStream stream : {ConsoleStream::out, ConsoleStream::err}) {
      const int i = static_cast<int>(stream);
      if (console_armed[i]) continue;
      const int fd = console_wait_fd(stream);
      if (fd < 0) continue;
      if (!console_waiters[i]) {
        const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (own < 0) continue;
        console_waiters[i] = std::make_unique<asio::posix::stream_descriptor>(io, own);
      }
      console_armed[i] = true;
      console_waiters[i]->async_wait(asio::posix::descriptor_base::wait_write,
                                     [this, i](const boost::system::error_code& ec) {
                                       console_armed[i] = false;
                                       if (ec) return;
                                       console_flush_now();
                                       arm_console();
                                     });
    }
  }

  void close_stream(Worker& worker, Stream& stream) {
    if (!stream.pipe) return;
    stream.splitter.flush([&](std::string_view text, char terminator) {
      on_piece(worker, stream, text, terminator);
    });
    // A progress bar's last redraw stays on screen, and the next line starts below it.
    if (stream.bar_open) console_worker_text(stream.console, "\n");
    arm_console();
    stream.pipe.reset();
    close_fd(stream.log_fd);
    if (!worker.running && worker.drained()) finish_worker(worker);
  }

  // --- processes ----------------------------------------------------------------------

  void open_stream(Stream& stream, int rank_index, const std::string& rank_dir, bool is_stderr,
                   Pipe& pipe) {
    stream.is_stderr = is_stderr;
    stream.console = is_stderr ? ConsoleStream::err : ConsoleStream::out;
    const bool rank_shown = !plan.console_ranks || plan.console_ranks->contains(rank_index);
    const auto& streams = plan.console_streams[rank_index];
    stream.shown = rank_shown && (is_stderr ? streams.stderr_shown : streams.stdout_shown);
    stream.log_fd = files.open_stream_log(rank_dir, is_stderr ? "stderr.log" : "stdout.log");
    stream.buffer.resize(kReadChunk);
    stream.pipe = std::make_unique<asio::posix::stream_descriptor>(io, pipe.read_fd);
    pipe.read_fd = -1;
  }

  void start_worker(Worker& worker, int attempt, int local_rank) {
    const int rank = plan.rank_offset + local_rank;
    worker.outcome = WorkerOutcome{};
    worker.outcome.rank = rank;
    worker.outcome.local_rank = local_rank;
    worker.outcome.attempt = attempt;
    worker.prefix = fmt::format("[rank{}]: ", rank);
    worker.drain_timer = std::make_unique<asio::steady_timer>(io);
    Pipe out;
    Pipe err;
    Environment env;
    try {
      const std::string rank_dir = files.prepare_rank_dir(attempt, rank);
      worker.error_file = rank_dir + "/error.json";
      env = worker_environment(parent_env, plan, local_rank, attempt,
                               WorkerPaths{worker.error_file, files.run_dir()});
      if (monitor) monitor->add_worker_env(env);
      out = make_pipe();
      err = make_pipe();
      open_stream(worker.out, local_rank, rank_dir, false, out);
      open_stream(worker.err, local_rank, rank_dir, true, err);
    } catch (const std::exception& e) {
      // No descriptors left, a log folder that cannot be made...: this rank fails to start
      // and the job ends with a report and its summary.json, like any other failure.
      for (Pipe* pipe : {&out, &err}) {
        close_fd(pipe->read_fd);
        close_fd(pipe->write_fd);
      }
      for (Stream* stream : {&worker.out, &worker.err}) {
        stream->pipe.reset();
        close_fd(stream->log_fd);
      }
      worker.outcome.start = Clock::now();
      worker.finished = true;  // nothing to reap or read
      fail_to_start(worker, local_rank, exit_status::kFailure,
                    fmt::format("could not set up this rank: {}", e.what()));
      return;
    }
    ++unfinished;
    worker.outcome.start = Clock::now();
    try {
      worker.outcome.pid =
          spawn_worker(SpawnSpec{plan.argv, to_envp(env), out.write_fd, err.write_fd});
      guardian.watch(worker.outcome.pid);
      worker.running = true;
      by_pid[worker.outcome.pid] = static_cast<std::size_t>(local_rank);
      if (monitor) monitor->on_start(local_rank, rank, worker.outcome.pid);
      if (hooks && hooks->on_worker_started)
        hooks->on_worker_started(attempt, rank, worker.outcome.pid);
      files.log(fmt::format("attempt {}: rank {} (local rank {}) started, pid {}", attempt, rank,
                            local_rank, worker.outcome.pid));
    } catch (const std::system_error& e) {
      spawn_failed(worker, local_rank, e.code().value(), e.code().message());
    } catch (const boost::system::system_error& e) {  // what Boost.Process throws
      spawn_failed(worker, local_rank, e.code().value(), e.code().message());
    }
    close_fd(out.write_fd);
    close_fd(err.write_fd);
    read_more(worker, worker.out);
    read_more(worker, worker.err);
  }

  // The rank could not be started (no descriptors left, a log folder that cannot be made;
  // exec or fork failing although the program passed the checks): a failure of this rank,
  // reported like any other.
  void fail_to_start(Worker& worker, int local_rank, int exit_code, const std::string& reason) {
    worker.outcome.exit_code = exit_code;
    worker.outcome.end = Clock::now();
    worker.stderr_tail.push_back("xlaunch " + reason);
    files.log(fmt::format("rank {}: {}", worker.outcome.rank, reason));
    note_failure(static_cast<std::size_t>(local_rank));
  }

  void spawn_failed(Worker& worker, int local_rank, int error, const std::string& message) {
    fail_to_start(worker, local_rank,
                  error == ENOENT ? exit_status::kNotFound : exit_status::kCannotExecute,
                  fmt::format("could not execute {}: {}", plan.argv.front(), message));
  }

  void watch_children() {
    child_signals.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      for (const ExitEvent& event : reap_ended_children()) on_exit(event);
      if (!attempt_done) watch_children();
    });
  }

  void on_exit(const ExitEvent& event) {
    auto it = by_pid.find(event.pid);
    if (it == by_pid.end()) return;  // an adopted orphan, now reaped
    const std::size_t index = it->second;
    by_pid.erase(it);
    Worker& worker = workers[index];
    worker.running = false;
    worker.outcome.exit_code = event.exit_code;
    worker.outcome.signal = event.signal;
    worker.outcome.end = Clock::now();
    files.log(fmt::format("rank {} (pid {}) {}", worker.outcome.rank, event.pid,
                          describe_end(worker.outcome)));
    if (monitor) monitor->on_end(static_cast<int>(index), describe_end(worker.outcome));
    // The failure is acted on at once; the report waits for the worker's last bytes.
    if (failed(worker.outcome)) note_failure(index);
    if (worker.drained()) {
      finish_worker(worker);
      return;
    }
    // A descendant may hold the pipes open: read on for a while, then report anyway.
    worker.drain_timer->expires_after(kDrainGrace);
    worker.drain_timer->async_wait([this, &worker](const boost::system::error_code& ec) {
      if (ec) return;
      files.log(
          fmt::format("rank {}: its output pipes were still open {}s after it exited "
                      "(held by a descendant); stopped reading them",
                      worker.outcome.rank, kDrainGrace.count()));
      close_stream(worker, worker.out);
      close_stream(worker, worker.err);
    });
  }

  // The first failure of the attempt stops every other worker.
  void note_failure(std::size_t index) {
    if (stopping) return;
    first_failure = index;
    publish_failure(local_failure());
    stop_workers(SIGTERM);
  }

  void finish_worker(Worker& worker) {
    if (worker.finished) return;
    worker.finished = true;
    worker.drain_timer->cancel();
    --unfinished;
    finish_if_done();
  }

  void stop_workers(int signal) {
    // A second stop (a signal after another machine's stop) forwards its signal but keeps
    // the first deadline: --term_timeout counts from the first request.
    const bool first = !stopping;
    stopping = true;
    for (Worker& worker : workers) {
      if (worker.finished || worker.outcome.pid == 0) continue;
      if (worker.running) worker.outcome.stopped_by_launcher = true;
      // An exited worker's group may still hold a descendant that keeps its pipes open.
      signal_group(worker.outcome.pid, signal);
    }
    files.log(fmt::format("sent {} to every running worker's process group", signal_name(signal)));
    if (!first) return;
    kill_timer.expires_after(plan.term_timeout);
    kill_timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      kill_all("--term_timeout expired");
    });
  }

  void kill_all(std::string_view why) {
    bool any = false;
    for (Worker& worker : workers) {
      if (worker.finished || worker.outcome.pid == 0) continue;
      any = true;
      signal_group(worker.outcome.pid, SIGKILL);
    }
    if (any) files.log(fmt::format("sent SIGKILL to every running worker ({})", why));
  }

  // Ignored at start (nohup's SIGHUP, say): not watched, so they stay ignored.
  void add_stop_signals() {
    for (int signal : kStopSignals) {
      const auto& ignored = plan.ignored_stop_signals;
      if (std::ranges::find(ignored, signal) == ignored.end()) stop_signals.add(signal);
    }
  }

  void watch_stop_signals() {
    stop_signals.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (interrupted_by) {
        say("xlaunch: {} again: killing every worker now\n", signal_name(signal));
        kill_all("second signal");
      } else if (first_failure) {
        // The job is already failing: the signal hurries the teardown and rules out a
        // restart, but the failure stays the root cause and its exit code.
        interrupted_by = signal;
        signal_after_failure = true;
        say("xlaunch: {} while stopping after rank {}'s failure: killing every worker now\n",
            signal_name(signal), workers[*first_failure].outcome.rank);
        files.log(fmt::format("received {} while stopping after a failure", signal_name(signal)));
        kill_all("signal during the teardown");
      } else {
        interrupted_by = signal;
        say("xlaunch: {}: stopping every worker (waiting up to {:.3g}s; {} again kills them at "
            "once)\n",
            signal_name(signal), plan.term_timeout.count() / 1000.0, signal_name(signal));
        files.log(fmt::format("received {}", signal_name(signal)));
        publish_failure(interrupt_failure(signal));
        stop_workers(signal);
      }
      if (!attempt_done) watch_stop_signals();
    });
  }

  // Ends the attempt once every worker was started, has exited and was read to the end.
  void finish_if_done() {
    if (spawning || unfinished > 0 || attempt_done) return;
    attempt_done = true;
    // Descendants left in a worker's group, orphans adopted by this subreaper and (with a
    // cgroup or a PID namespace) those that left their group would hold GPU memory:
    // nothing outlives its job.
    for (Worker& worker : workers) signal_group(worker.outcome.pid, SIGKILL);
    guardian.kill_descendants();
    kill_timer.cancel();
    if (monitor) monitor->end_attempt();
    child_signals.cancel();
    stop_signals.cancel();
    for (auto& waiter : console_waiters) {
      if (waiter) waiter->cancel();
    }
  }

  // --- attempts -----------------------------------------------------------------------

  void run_attempt(int attempt) {
    workers.clear();
    workers.resize(plan.local_world_size);
    by_pid.clear();
    unfinished = 0;
    stopping = false;
    attempt_done = false;
    failure_published = false;
    stalled_stop = false;
    first_failure.reset();
    io.restart();
    if (monitor) monitor->begin_attempt(plan.master_addr, plan.master_port);
    add_stop_signals();
    watch_children();
    watch_stop_signals();
    spawning = true;
    for (int local_rank = 0; local_rank < plan.local_world_size; ++local_rank) {
      // A signal or a failure that arrives while workers start stops the start-up.
      io.poll();
      if (interrupted_by || stopping) break;
      start_worker(workers[local_rank], attempt, local_rank);
    }
    spawning = false;
    finish_if_done();
    io.run();
  }

  // --- other machines -----------------------------------------------------------------

  FailureRecord local_failure() const {
    const WorkerOutcome& w = workers[*first_failure].outcome;
    FailureRecord r;
    r.machine_rank = plan.machine_rank;
    r.host = host;
    r.rank = w.rank;
    r.exit_code = exit_code_of(w);
    r.cause = describe_end(w);
    return r;
  }

  FailureRecord interrupt_failure(int signal) const {
    FailureRecord r;
    r.machine_rank = plan.machine_rank;
    r.host = host;
    r.exit_code = exit_status::kSignalBase + signal;
    r.restartable = false;
    r.cause = fmt::format("launcher interrupted by {}", signal_name(signal));
    return r;
  }

  // --on_stall stop: the stall report was printed; the job ends with kStalled.
  void stop_for_stall() {
    if (stopping || attempt_done) return;
    stalled_stop = true;
    say("xlaunch: stopping every worker: the job stalled (--on_stall stop; exit code {})\n",
        exit_status::kStalled);
    files.log("stopping every worker: the job stalled (--on_stall stop)");
    publish_failure(stall_failure());
    stop_workers(SIGTERM);
  }

  FailureRecord stall_failure() const {
    FailureRecord r;
    r.machine_rank = plan.machine_rank;
    r.host = host;
    r.exit_code = exit_status::kStalled;
    r.restartable = false;
    r.cause = "the job stalled (--on_stall stop)";
    return r;
  }

  void publish_failure(const FailureRecord& record) {
    if (failure_published || !hooks || !hooks->on_failure) return;
    failure_published = true;
    hooks->on_failure(attempt, record);
  }

  void remote_stop(int for_attempt, const std::string& reason) {
    if (for_attempt != attempt || attempt_done || stopping) return;
    failure_published = true;  // the job already has its root cause
    say("xlaunch: stopping every worker: {}\n", reason);
    files.log(fmt::format("stopping every worker: {}", reason));
    stop_workers(SIGTERM);
  }

  diagnose::StallMonitor::Options monitor_options() const {
    diagnose::StallMonitor::Options o;
    o.run_id = plan.run_id;
    o.stall_timeout = plan.stall_timeout;
    o.stop_on_stall = plan.stop_on_stall;
    o.python_stacks = plan.python_stacks;
    o.registry_dir = diagnose::registry_dir(current_environment(), ::getuid());
    return o;
  }

  diagnose::StallMonitor::Output monitor_output() {
    return {[](std::string_view text) { console_say(text); },
            [this](std::string_view line) { files.log(line); }};
  }

  RootCause root_cause(const Worker& worker) const {
    RootCause cause;
    cause.worker = worker.outcome;
    cause.host = host;
    cause.stderr_tail.assign(worker.stderr_tail.begin(), worker.stderr_tail.end());
    cause.error_file = worker.error_file;
    cause.error_file_text = read_file(worker.error_file);
    return cause;
  }
};

Supervisor::Supervisor(const LaunchPlan& plan, const Environment& parent_env, RunFiles& files,
                       std::string host, GroupGuardian& guardian)
    : impl_(std::make_unique<Impl>(plan, parent_env, files, std::move(host), guardian)) {}

Supervisor::~Supervisor() = default;

void Supervisor::request_stop(int attempt, std::string reason) {
  Impl* s = impl_.get();
  asio::post(s->io, [s, attempt, reason = std::move(reason)] { s->remote_stop(attempt, reason); });
}

RunSummary Supervisor::run(const AttemptHooks& hooks) {
  Impl& s = *impl_;
  s.hooks = &hooks;
  s.monitor = std::make_unique<diagnose::StallMonitor>(s.io, s.monitor_options(),
                                                       s.monitor_output(), hooks.store_clients);
  s.monitor->on_stall_stop = [&s] { s.stop_for_stall(); };
  RunSummary summary;
  summary.run_id = s.plan.run_id;
  summary.host = s.host;
  summary.world_size = s.plan.world_size;
  for (int attempt = s.plan.first_attempt;; ++attempt) {
    if (hooks.before_attempt) hooks.before_attempt(attempt);
    s.attempt = attempt;
    s.run_attempt(attempt);
    try {
      s.files.write_file("activity.csv", s.activity.csv());
    } catch (const std::exception& e) {
      s.files.log(fmt::format("could not write activity.csv: {}", e.what()));
    }
    summary.stall_json = s.monitor->stall_json();
    for (int local_rank = 0; local_rank < s.plan.local_world_size; ++local_rank) {
      const WorkerOutcome& outcome = s.workers[local_rank].outcome;
      if (outcome.pid != 0 || outcome.end) {
        summary.workers.push_back(outcome);
      } else {
        WorkerOutcome missing;
        missing.rank = s.plan.rank_offset + local_rank;
        missing.local_rank = local_rank;
        missing.attempt = attempt;
        summary.not_started.push_back(missing);
      }
    }
    if (hooks.after_attempt) {
      std::optional<FailureRecord> local;
      if (s.interrupted_by && !s.signal_after_failure) {
        local = s.interrupt_failure(*s.interrupted_by);
      } else if (s.stalled_stop && !s.first_failure) {
        local = s.stall_failure();
      } else if (s.first_failure) {
        RootCause cause = s.root_cause(s.workers[*s.first_failure]);
        say("{}", format_root_cause(cause, s.plan.world_size));
        summary.root_cause = cause;
        local = s.local_failure();
      }
      // Waiting for the other machines can take long, and nothing reads signals meanwhile:
      // a Ctrl-C then ends xlaunch by its default action (the others see it leave).
      s.stop_signals.clear();
      std::optional<FailureRecord> job = hooks.after_attempt(attempt, local);
      summary.interrupted_by = s.interrupted_by;
      if (!job) {
        summary.exit_code = exit_status::kSuccess;
        return summary;
      }
      summary.exit_code = job->exit_code;
      if (!job->restartable || s.interrupted_by || attempt >= s.plan.max_restarts) {
        if (job->restartable && s.plan.max_restarts > 0 && !s.interrupted_by) {
          say("xlaunch: no restarts left ({} used); giving up\n", s.plan.max_restarts);
        }
        return summary;
      }
      say("xlaunch: restarting every worker on every machine (restart {} of {})\n", attempt + 1,
          s.plan.max_restarts);
      s.files.log(fmt::format("restart {} of {}", attempt + 1, s.plan.max_restarts));
      continue;
    }
    summary.interrupted_by = s.interrupted_by;
    if (s.interrupted_by && !s.signal_after_failure) {
      summary.exit_code = exit_status::kSignalBase + *s.interrupted_by;
      return summary;
    }
    if (s.stalled_stop && !s.first_failure) {
      summary.exit_code = exit_status::kStalled;
      return summary;
    }
    if (!s.first_failure) {
      summary.exit_code = exit_status::kSuccess;
      return summary;
    }
    RootCause cause = s.root_cause(s.workers[*s.first_failure]);
    say("{}", format_root_cause(cause, s.plan.world_size));
    summary.exit_code = exit_code_of(cause.worker);
    summary.root_cause = cause;
    if (attempt >= s.plan.max_restarts || s.interrupted_by) {
      if (s.plan.max_restarts > 0 && !s.interrupted_by) {
        say("xlaunch: no restarts left ({} used); giving up\n", s.plan.max_restarts);
      }
      return summary;
    }
    say("xlaunch: restarting every worker (restart {} of {})\n", attempt + 1, s.plan.max_restarts);
    s.files.log(fmt::format("restart {} of {}", attempt + 1, s.plan.max_restarts));
  }
}

}  // namespace xlaunch::launcher
