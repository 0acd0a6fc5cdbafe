// The stall monitor's state and steps, shared by its three files (stall_monitor.hpp is the
// interface; this header is internal to diagnose/): stall_monitor_posix.cpp sets it up, runs
// its timer and the `xlaunch stacks` socket and reports a stall; stall_sampling_posix.cpp samples
// every rank each second (the stall signal's inputs, the dial check); stacks_dump_posix.cpp asks
// the Python ranks for their stacks and collects the dumps.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/proc_sample.hpp"
#include "diagnose/stacks_channel.hpp"
#include "diagnose/stacks_group.hpp"
#include "diagnose/stall_detect.hpp"
#include "diagnose/stall_monitor.hpp"
#include "diagnose/stall_report.hpp"

namespace xlaunch::diagnose {

namespace asio = boost::asio;

struct StallMonitor::Impl {
  // What the monitor knows of one local rank in this attempt.
  struct RankInfo {
    int rank = 0;
    long pid = 0;
    long own_pid = 0;  // as the worker sees itself: names its files (stacks_target.hpp)
    bool started = false;
    bool alive = false;
    bool stopped = false;  // as of the latest sample
    std::string ended;
    std::optional<Clock::time_point> ended_at;
    std::optional<std::string> last_line;
    std::optional<Clock::time_point> last_output;
    std::uint64_t lines = 0;
    // The latest sample.
    double cpu_seconds = 0;
    std::uint64_t io_bytes = 0;
    std::uint64_t store_requests = 0;
    std::vector<std::string> waiting_keys;
    std::vector<std::string> connecting;
    int dial_ticks = 0;
    bool dial_reported = false;
    std::optional<std::string> dial_target;  // where it dials instead of the store
  };

  asio::io_context& io;
  const Options options;
  const Output out;
  StoreClients store_clients;
  StallMonitor* self;
  std::string temp_dir;  // python/sitecustomize.py and stacks/, removed at the end
  std::string python_dir;
  std::string stacks_dir;
  std::optional<StacksChannel> channel;       // `xlaunch stacks` asks here
  std::vector<StacksChannel::Reply> waiting;  // requests the next dump answers
  asio::steady_timer tick_timer{io};
  asio::steady_timer dump_timer{io};
  std::map<int, RankInfo> ranks;  // by local rank
  std::optional<StallDetector> detector;
  bool active = false;
  bool tick_failed = false;  // logged once
  bool collecting = false;
  bool dump_again = false;     // a request came while a dump was being collected
  bool ranks_started = false;  // until then a request waits: it would see only some ranks
  std::optional<std::string> last_stall_json;
  RunScope run_scope;      // where the run's processes are (sample_run)
  std::string store_addr;  // this attempt's
  std::uint16_t store_port = 0;

  Impl(asio::io_context& i, Options o, Output w, StoreClients s, StallMonitor* m);
  ~Impl();

  // --- set-up, timer, the stall report (stall_monitor_posix.cpp) ------------------------

  void make_python_dir();
  void arm_tick();
  RankStallState state_of(const RankInfo& r) const;
  void report_stall(double window, const std::vector<RankStacks>& stacks);

  // --- sampling each second (stall_sampling_posix.cpp) ----------------------------------

  std::optional<std::pair<std::string, std::string>> script_address(const RankInfo& r) const;
  void tick();
  void sample_sockets(RankInfo& r, const TreeSample& tree, const SocketTables& tables,
                      const std::map<std::pair<std::string, std::uint16_t>,
                                     const rendezvous::StoreServer::ClientInfo*>& by_peer);
  void check_dialing(RankInfo& r, bool to_store, int unlisted);

  // --- stacks (stacks_dump_posix.cpp) ---------------------------------------------------

  struct Pending {
    int rank;
    std::string path;
    std::uintmax_t from;
    std::uintmax_t seen;
    bool done = false;
  };

  void collect_stacks(std::function<void(std::vector<RankStacks>)> done);
  void poll_dumps(std::shared_ptr<std::vector<RankStacks>> result,
                  std::shared_ptr<std::vector<Pending>> pending, int round,
                  std::function<void(std::vector<RankStacks>)> done);
  void on_stacks_request(StacksChannel::Reply reply);
  void dump_on_request();
};

}  // namespace xlaunch::diagnose
