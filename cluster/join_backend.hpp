// How the launchers of one job meet: the seam between the launch (job/join.cpp, which
// drives rounds of workers) and where the membership lives. One implementation per header:
// machine 0's store (store_backend.hpp); etcd is another (etcd_backend.hpp). Each one's
// join, rounds and monitor are files of their own (store_backend_impl.hpp,
// etcd_backend_impl.hpp list them).
//
// A round is one set of workers on every machine (TORCHELASTIC_RESTART_COUNT = the round).
// The backend answers, for each round, which machines are in the job and which of them this
// launcher is (Membership); it carries heartbeats, the first failure of a round, and the
// round's verdict, so that every launcher stops, restarts or ends together and prints the
// same words. Pure decisions live in agent.hpp (records, layouts), membership.hpp (elastic
// rounds), blame.hpp (lost launchers, verdicts) and etcd_layout.hpp (etcd's keys).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "cluster/agent.hpp"
#include "launcher/failure_record.hpp"

namespace xlaunch::cluster {

/// Thrown by backend operations that end the launch; exit_code per docs/multi-machine.md.
class AgentError : public std::runtime_error {
 public:
  AgentError(const std::string& what, int exit_code)
      : std::runtime_error(what), exit_code_(exit_code) {}
  /// A join that cannot go on, with the message and exit code every launcher gives.
  explicit AgentError(const JoinProblem& problem)
      : AgentError(problem.message, problem.exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// What a launcher brings to the join; the same for every backend.
struct AgentOptions {
  std::string run_id;      // names the keys: --rdzv_id, or "default"
  std::string job_run_id;  // this launcher's run id; the first machine's becomes the job's
  int num_machines = 1;    // fixed-size jobs; elastic ones use min/max_machines
  int machine_rank = 0;    // -1: assigned by join order (elastic jobs only)
  /// Elastic (--nnodes MIN:MAX with MIN < MAX): the job runs with MIN..MAX machines and
  /// re-forms when one is lost or arrives. 0 when the job has a fixed size.
  int min_machines = 0;
  int max_machines = 0;
  int max_restarts = 0;  // elastic: a newcomer is taken in only while a restart is left
  std::string store_host = "127.0.0.1";  // the store's (or etcd's) address
  /// Machine 0's store address as the other machines reach it (--main_process_ip), for the
  /// words every launcher prints when it is lost; machine 0 itself connects to store_host.
  std::string advertised_store_host = "127.0.0.1";
  std::uint16_t store_port = 0;
  std::string host;  // this machine's name, for messages
  long pid = 0;
  int local_processes = 1;
  std::string version;
  std::string settings;                // agreed_settings(...)
  std::optional<int> total_processes;  // --num_processes, when given without --nproc_per_node
  std::chrono::milliseconds rdzv_timeout{std::chrono::seconds(900)};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
  /// Elastic: once MIN machines are in, how long to wait for more (torchrun's c10d: 30 s).
  std::chrono::milliseconds last_call_timeout{std::chrono::seconds(30)};
  /// A stop signal (Ctrl-C) waiting for this launcher, if any, asked between the join's
  /// waits: the join then stops, and the others hear why (join_interrupted). A signal that
  /// comes once the job has formed is left for the supervisor.
  std::function<std::optional<int>()> stop_pending;
  std::optional<int> pending_stop() const { return stop_pending ? stop_pending() : std::nullopt; }

  bool elastic() const { return min_machines > 0 && min_machines < max_machines; }
  /// What this launcher registers when it joins.
  JoinRecord record() const {
    return JoinRecord{machine_rank, host, pid, local_processes, version, settings};
  }
};

/// The job as one round sees it, and this launcher's place in it.
struct Membership {
  Layout layout;         // local counts per machine rank, the job's run id
  int machine_rank = 0;  // this launcher's rank in the round
  int round = 0;         // the round it starts with (a late machine joins a running job)
  int num_machines() const { return static_cast<int>(layout.local_processes.size()); }
};

class JoinBackend {
 public:
  /// Called on the monitor thread, at most once per round, with the reason every machine
  /// must stop that round's workers: a worker's failure anywhere, a lost machine, or (elastic
  /// jobs) a change of membership (a restartable record).
  using OnStop = std::function<void(int round, const FailureRecord&)>;

  virtual ~JoinBackend() = default;

  /// Registers this launcher and waits until the job forms (round 0). Throws AgentError, with
  /// the same message on every launcher, when machines disagree or too few arrive in time.
  virtual Membership join() = 0;
  /// Starts heartbeats and the watch for failures and membership changes (after join).
  virtual void start_monitor(OnStop on_stop) = 0;
  /// Before round r >= 1's workers start, on every machine together. `clear_store` empties
  /// the workers' store (the first machine runs it when the backend wants it). Returns the
  /// round's membership (an elastic job re-forms from the machines present). Throws
  /// AgentError when the job cannot go on.
  virtual Membership begin_round(int round, const std::function<void()>& clear_store) = 0;
  /// Publishes this machine's failure of `round` unless another came first; returns the
  /// winning record. Never throws (a lost backend is reported by the monitor).
  virtual FailureRecord report_failure(int round, const FailureRecord& record) = 0;
  /// After this machine's workers of `round` ended: waits for the job's verdict. Returns the
  /// round's failure (restartable for a membership change), or nullopt when every machine
  /// succeeded.
  virtual std::optional<FailureRecord> finish_round(int round,
                                                    std::optional<FailureRecord> local) = 0;
  /// Stops the monitor thread; idempotent.
  virtual void stop_monitor() = 0;
  /// The job has ended with `exit_code`: tells launchers still waiting to join (elastic),
  /// best effort.
  virtual void close(int exit_code) = 0;
};

}  // namespace xlaunch::cluster
