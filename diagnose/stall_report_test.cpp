#include "diagnose/stall_report.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;
using Catch::Contains;

TEST_CASE("the stall report names each rank's state and the odd one out", "[stall]") {
  StallReport r;
  r.window_seconds = 30;
  r.at = Clock::from_time_t(1'800'000'000);  // 08:00:00 UTC
  RankStallState a;
  a.rank = 0;
  a.pid = 100;
  a.alive = true;
  a.cpu_seconds = 0.3;
  a.last_line = "step 3";
  a.last_output = r.at - std::chrono::seconds(31);
  a.waiting_keys = {"/worker/attempt_0/x"};
  RankStallState b;
  b.rank = 1;
  b.pid = 101;
  b.ended = "exited with code 0";
  b.ended_at = r.at - std::chrono::seconds(40);
  b.dialing = {};
  RankStallState c = a;
  c.rank = 2;
  c.waiting_keys = {};
  c.last_line.reset();
  c.dialing = {"127.0.0.1:23456"};
  r.ranks = {a, b, c};
  r.stacks = {{{0, 2}, "all_reduce at train.py:12", "Current thread (most recent call first):\n"},
              {{1}, ended_text(b), ""}};
  const std::string text = format_stall_report(r);
  CHECK_THAT(text, Contains("for 30s (--stall_timeout)"));
  CHECK_THAT(text, Contains("rank 0: alive (pid 100), CPU 0.3s over the window (1%)"));
  CHECK_THAT(text, Contains("last output 07:59:29 (31s ago): step 3"));
  CHECK_THAT(text, Contains("blocked in a store wait for: /worker/attempt_0/x"));
  CHECK_THAT(text, Contains("rank 1: exited with code 0 at 07:59:20"));
  CHECK_THAT(text, Contains("rank 2: alive (pid 100)"));
  CHECK_THAT(text, Contains("no output yet"));
  CHECK_THAT(text, Contains("connecting to 127.0.0.1:23456 (not connected)"));
  CHECK_THAT(text, Contains("odd one out: rank 1 (exited with code 0 at 07:59:20)"));
  CHECK_THAT(text, Contains("xlaunch:   ranks 0,2: all_reduce at train.py:12"));
  const std::string json = stall_json(r);
  CHECK_THAT(json, Contains("\"odd_one_out\": \"rank 1 (exited with code 0 at 07:59:20)\""));
  CHECK_THAT(json, Contains("\"waiting_keys\": [\"/worker/attempt_0/x\"]"));
  CHECK_THAT(json, Contains("\"ranks\": [0,2], \"headline\": \"all_reduce at train.py:12\""));

  CHECK_THAT(json, Contains("\"pid\": 100, \"alive\": true, \"stopped\": false"));

  r.ranks[2].stopped = true;  // SIGSTOP, Ctrl-Z or a debugger
  CHECK_THAT(format_stall_report(r), Contains("rank 2: stopped (pid 100; SIGSTOP, Ctrl-Z or a "
                                              "debugger: SIGCONT resumes it)"));
  CHECK_THAT(stall_json(r), Contains("\"alive\": true, \"stopped\": true"));

  r.stacks = {{{0}, "a", ""}, {{1}, "b", ""}};  // no majority: nobody is odd
  CHECK_FALSE(odd_one_out(r));
}

TEST_CASE("store keys and a rank's last line are escaped in the stall report", "[stall]") {
  StallReport r;
  r.window_seconds = 30;
  r.at = Clock::from_time_t(1'800'000'000);
  RankStallState a;
  a.rank = 0;
  a.pid = 100;
  a.alive = true;
  a.last_line = "\r\x1b[2Kstep";
  a.last_output = r.at - std::chrono::seconds(31);
  a.waiting_keys = {"/k\nxlaunch: all 1 workers finished successfully"};
  r.ranks = {a};
  const std::string text = format_stall_report(r);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("\nxlaunch: all 1 workers") == std::string::npos);
  CHECK_THAT(text, Contains("blocked in a store wait for: /k\\x0axlaunch: all 1 workers"));
  CHECK_THAT(text, Contains("\\x0d\\x1b[2Kstep"));
}
