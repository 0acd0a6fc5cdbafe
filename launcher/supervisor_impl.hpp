// The supervisor's state and steps, shared by its five files (supervisor.hpp is the
// interface; this header is internal to launcher/): supervisor.cpp runs the attempts and
// turns each one's end into the run's summary; one attempt's events are handled in
// supervisor_start.cpp (starting workers), supervisor_output.cpp (the workers' pipes to their
// logs and the console), supervisor_events.cpp (their exits, stop signals, the end of an
// attempt) and supervisor_signals_posix.cpp (the signals forwarded to the workers).
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "diagnose/output_activity.hpp"
#include "diagnose/stall_monitor.hpp"
#include "launcher/console.hpp"
#include "launcher/console_batch.hpp"
#include "launcher/line_splitter.hpp"
#include "launcher/preload_template.hpp"
#include "launcher/stop_request.hpp"
#include "launcher/supervisor.hpp"

namespace xlaunch::launcher {

namespace asio = boost::asio;

struct Supervisor::Impl {
  // One of a worker's output pipes, on its way to the rank's log file and the console.
  struct Stream {
    std::unique_ptr<asio::posix::stream_descriptor> pipe;
    // A read's bytes, not zeroed first: most ranks never fill one (8 ranks' 16 zeroed
    // buffers were 3 % of a short job's launch).
    std::unique_ptr<char[]> buffer;
    LineSplitter splitter;
    int log_fd = -1;
    std::string log_path;
    std::uint64_t logged = 0;  // bytes written to the log file
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
    // Its process group was empty when it was reaped: the number is free, and may belong to
    // a stranger's group by now, so it is never signalled again.
    bool group_gone = false;
    bool finished = false;
    std::unique_ptr<asio::steady_timer> drain_timer;
    // Until it runs its program: neither its start-status pipe's end of file, nor its end,
    // nor kStartBound came yet.
    bool starting = false;
    std::unique_ptr<asio::posix::stream_descriptor> start_status;
    std::unique_ptr<asio::steady_timer> start_timer;
    std::optional<std::string> start_failure;  // why it did not run its program
    int start_failure_code = 0;                // the exit code that stands for it

    bool drained() const { return !out.pipe && !err.pipe; }
  };

  const LaunchPlan& plan;
  const Environment& parent_env;
  RunFiles& files;
  std::string host;
  GroupGuardian& guardian;

  asio::io_context io;
  asio::signal_set child_signals{io, SIGCHLD};
  asio::signal_set stop_signals{io};  // those not ignored at start (add_stop_signals)
  // --signals_to_handle's others, forwarded to the workers; SIGUSR1/SIGUSR2 when not named,
  // only noted: the scheduler's warning signals must not end the launcher.
  asio::signal_set other_signals{io};
  asio::steady_timer kill_timer{io};
  std::unique_ptr<asio::posix::stream_descriptor> console_waiters[2];
  bool console_armed[2] = {false, false};

  std::vector<Worker> workers;
  std::vector<LogCut> log_cuts;  // this attempt's rank logs that stop short
  bool unmade_log_said = false;  // this attempt warned of a rank log it could not make
  std::unordered_map<long, std::size_t> by_pid;
  int unfinished = 0;     // workers started and not finished
  bool spawning = false;  // the attempt cannot end before every worker was started
  bool stopping = false;
  bool attempt_done = false;  // nothing to wait for: handlers must not re-arm
  std::optional<std::size_t> first_failure;
  std::optional<int> interrupted_by;
  std::chrono::steady_clock::time_point interrupted_at;  // when interrupted_by arrived
  bool signal_after_failure = false;                     // interrupted_by came after first_failure
  std::optional<int> stop_after_end;  // a stop signal read after every worker had ended
  ConsoleBatch console_batch;         // the console lines of the read being split
  std::size_t rank_pipe_bytes = 0;    // each rank's stdout and stderr pipe (pipe_size.hpp)
  const AttemptHooks* hooks = nullptr;
  int attempt = 0;
  bool failure_published = false;
  std::unique_ptr<diagnose::StallMonitor> monitor;  // stalls, stacks, wrong addresses (diagnose.md)
  bool stalled_stop = false;                        // --on_stall stop stopped this attempt
  diagnose::OutputActivity activity;  // lines per rank per second, for the run's picture
  Clock::time_point batch_time;       // when the output being split was read
  std::uint64_t batch_lines = 0;      // pieces it held
  std::string_view batch_bytes;       // the read being split (pieces inside it stay valid)
  std::string_view batch_last_line;   // its last non-empty piece, for the stall monitor
  std::string batch_last_copy;        // that piece, when the splitter's own buffer held it
  // After a worker exits, how long its pipes may stay open (held by a descendant) before
  // the launcher stops reading them and reports the exit anyway.
  static constexpr auto kDrainGrace = std::chrono::seconds(2);
  static constexpr std::size_t kStderrTailLines = 20;         // shown in a failure's report
  std::array<std::string_view, kStderrTailLines> batch_tail;  // its last stderr lines, a ring
  std::size_t batch_tail_count = 0;                           // stderr lines it held
  std::unique_ptr<PreloadTemplate> preload;  // --preload's template, for the whole run
  bool preload_ready = false;                // it answered that it can fork ranks
  // Ranks asked of the spawner and not answered yet, oldest first: the spawner makes one
  // while the launcher prepares the next.
  struct PendingStart {
    std::size_t local_rank = 0;
    int status_fd = -1;  // the read end of its start-status pipe
  };
  std::deque<PendingStart> pending_starts;
  // Exits reaped while a rank's pid was still unknown: maybe that rank's, claimed once the
  // spawner answers (the others are adopted orphans).
  std::vector<ExitEvent> unclaimed_exits;
  int stop_signal = SIGTERM;  // what stop_workers sent: a rank that starts late gets it too
  bool killed_all = false;    // kill_all ran this attempt: a rank that starts late gets SIGKILL

  Impl(const LaunchPlan& p, const Environment& env, RunFiles& f, std::string h, GroupGuardian& g);
  ~Impl();

  // --- the attempts and their outcome (supervisor.cpp) ------------------------------

  // What an attempt leaves in the summary: its workers (and those a stop kept from
  // starting) and the last stall report; activity.csv is rewritten with every line so far.
  void record_attempt(RunSummary& summary, int attempt);
  // The attempt's end on its own: the exit code and root cause; true to restart.
  bool end_local_attempt(RunSummary& summary, int attempt);
  // The attempt's end with the other machines (hooks->after_attempt): this machine's
  // failure goes out, the job's comes back; true when every machine restarts.
  bool end_job_attempt(RunSummary& summary, int attempt);
  // Stop signals from now on end xlaunch by their default action; one already received
  // after the workers ended (stop_after_end) does so at once.
  void hand_stop_signals_to_default();
  // Reads stop signals into stop_after_end; those before copies_until are the same request.
  void read_stop_after_end(std::chrono::steady_clock::time_point copies_until);
  // This machine's failure of the attempt, if any (a root cause is printed and kept).
  std::optional<FailureRecord> local_outcome(RunSummary& summary);
  FailureRecord local_failure() const;
  FailureRecord interrupt_failure(int signal) const;
  FailureRecord stall_failure() const;
  RootCause root_cause(const Worker& worker) const;
  diagnose::StallMonitor::Options monitor_options() const;
  diagnose::StallMonitor::Output monitor_output();

  // --- output (supervisor_output.cpp) ---------------------------------------------

  void read_more(Worker& worker, Stream& stream);
  void on_bytes(Worker& worker, Stream& stream, std::string_view bytes);
  void log_bytes(Worker& worker, Stream& stream, std::string_view bytes);
  void on_piece(Worker& worker, Stream& stream, std::string_view text, char terminator);
  // After a read's pieces: their count to the activity, their lines to the console.
  void start_batch(std::string_view bytes);
  void end_batch(Worker& worker, Stream& stream);
  void keep_stderr_tail(Worker& worker);  // the read's last stderr lines into stderr_tail
  void push_stderr_line(Worker& worker, std::string_view line);
  // Waits for the console to take more while it has a backlog; never blocks the loop.
  void arm_console();
  void close_stream(Worker& worker, Stream& stream);
  // Reads the worker's pipes for kDrainGrace more at most, then closes them; `say_why` logs
  // that a descendant held them.
  void stop_reading_later(Worker& worker, bool say_why);
  void open_stream(Stream& stream, int rank_index, const RunFiles::RankFiles& rank_files,
                   bool is_stderr, Pipe& pipe);
  // The stream's log file could not be made (`why`): its output goes to the console only.
  void log_not_made(int rank, Stream& stream, const std::string& why);

  // --- the preloading template (supervisor_preload.cpp) -----------------------------

  // Starts --preload's template, whose imports then overlap the rendezvous.
  void start_preload();
  // Before an attempt's ranks start: waits (on the loop) for the template's answer.
  void await_preload();
  // The rank's process, forked from the template when it is ready: its pid. Else asked of
  // the spawner (request_worker): nullopt, the pid comes from complete_oldest_start.
  std::optional<long> spawn_rank(const SpawnSpec& spec);

  // --- starting workers (supervisor_start.cpp) -------------------------------------

  void start_worker(Worker& worker, int attempt, int local_rank);
  // The spawner's answer for the oldest pending start: the rank runs, or failed to start.
  void complete_oldest_start();
  // A rank's process exists: it is watched, reaped and stopped like every other.
  void track_started(Worker& worker, long pid, int status_fd);
  // The rank got no process (the spawner's or the template's error `why`): it fails.
  void no_process_for(Worker& worker, int& status_fd, const char* why);
  // Reads the rank's pipes; for one that did not start, for kDrainGrace at most.
  void read_output(Worker& worker, bool started);
  // After the spawner failed: kills our children it made and never named.
  void kill_unnamed_children();
  // The rank could not be started (no descriptors left, no process): a failure of this
  // rank, reported like any other.
  void fail_to_start(Worker& worker, int local_rank, int exit_code, const std::string& reason);
  // Watches the read end of a new worker's start-status pipe, and the start bound.
  void watch_start(Worker& worker, int status_fd);
  void read_start_status(Worker& worker);
  // Neither exec nor failure within the bound: the rank fails and its process is killed.
  void start_timed_out(Worker& worker);
  // The worker's process ended: what its start-status pipe says is final.
  void settle_start(Worker& worker);

  // --- exits, signals and the end of an attempt (supervisor_events.cpp) -------------

  void watch_children();
  void on_exit(const ExitEvent& event);
  // The first failure of the attempt stops every other worker.
  void note_failure(std::size_t index);
  void finish_worker(Worker& worker);
  void stop_workers(int signal);
  // Signals the worker's process group while it is surely the worker's: not after the group
  // was found empty (Worker::group_gone), nor once a process has the reaped leader's pid.
  void signal_worker_group(Worker& worker, int signal);
  // After children were reaped: groups that outlived their leader and have now emptied are
  // let go, before their numbers can go to a new process.
  void forget_emptied_groups();
  void forget_group(Worker& worker);
  void kill_all(std::string_view why);
  // Ignored at start (nohup's SIGHUP, say): not watched, so they stay ignored.
  void add_stop_signals();
  void watch_stop_signals();
  /// A stop signal while a failure ends the attempt: no restart; the failure's exit code stays.
  void note_signal_after_failure(int signal, std::chrono::steady_clock::time_point now);
  /// A copy of the stop request already acted on (one Ctrl-C delivered twice): logged only.
  void log_same_stop_request(int signal);
  // --signals_to_handle beyond the stop signals (supervisor_signals_posix.cpp).
  void add_other_signals();
  void watch_other_signals();
  void forward_signal(int signal);
  void ignore_other_signals();
  // Ends the attempt once every worker was started, has exited and was read to the end.
  void finish_if_done();
  void run_attempt(int attempt);
  // --on_stall stop: the stall report was printed; the job ends with kStalled.
  void stop_for_stall();
  void publish_failure(const FailureRecord& record);
  void remote_stop(int for_attempt, const std::string& reason);
};

}  // namespace xlaunch::launcher
