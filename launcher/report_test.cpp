#include "launcher/report.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <csignal>

#include "launcher/error_file.hpp"

using namespace xlaunch::launcher;

TEST_CASE("exit codes: the worker's own, or 128 + signal", "[report]") {
  WorkerOutcome w;
  w.exit_code = 3;
  CHECK(exit_code_of(w) == 3);
  CHECK(failed(w));
  CHECK(describe_end(w) == "exited with code 3");
  WorkerOutcome s;
  s.signal = SIGSEGV;
  CHECK(exit_code_of(s) == 139);
  CHECK(describe_end(s) == "was killed by SIGSEGV (signal 11)");
  WorkerOutcome ok;
  ok.exit_code = 0;
  CHECK_FALSE(failed(ok));
  CHECK(signal_name(SIGINT) == "SIGINT");
}

TEST_CASE("real-time signals are named as kill -l names them", "[report]") {
  CHECK(signal_name(SIGRTMIN) == "SIGRTMIN");
  CHECK(signal_name(SIGRTMIN + 4) == "SIGRTMIN+4");
  CHECK(signal_name(SIGRTMIN + 15) == "SIGRTMIN+15");
  CHECK(signal_name(SIGRTMAX - 14) == "SIGRTMAX-14");
  CHECK(signal_name(SIGRTMAX) == "SIGRTMAX");
  WorkerOutcome rt;
  rt.signal = SIGRTMIN + 4;
  CHECK(describe_end(rt) == fmt::format("was killed by SIGRTMIN+4 (signal {})", SIGRTMIN + 4));
}

TEST_CASE("the root cause names rank, host, pid, cause, stderr and error file", "[report]") {
  RootCause cause;
  cause.worker.rank = 2;
  cause.worker.local_rank = 2;
  cause.worker.pid = 4242;
  cause.worker.exit_code = 3;
  cause.worker.end = Clock::time_point{};
  cause.host = "node7";
  cause.stderr_tail = {"Traceback (most recent call last):", "ValueError: bad batch"};
  cause.error_file = "/tmp/e.json";
  cause.error_file_text = "{\"message\": \"boom\"}";
  std::string text = format_root_cause(cause, 4);
  CHECK_THAT(text,
             Catch::Contains("rank 2/4 (local rank 2, host node7, pid 4242) exited with code 3"));
  CHECK_THAT(text, Catch::Contains("|   ValueError: bad batch") ||
                       Catch::Contains("| ValueError: bad batch"));
  CHECK_THAT(text, Catch::Contains("wrote its error file /tmp/e.json"));
  CHECK_THAT(text, Catch::Contains("xlaunch:   | boom\n"));  // the message, out of its JSON
}

TEST_CASE("summary.json lists every worker of every attempt", "[report]") {
  RunSummary s;
  s.run_id = "r";
  s.host = "h";
  s.world_size = 2;
  s.exit_code = 3;
  WorkerOutcome a;
  a.rank = 0;
  a.pid = 10;
  a.exit_code = 0;
  a.end = Clock::time_point{};
  WorkerOutcome b = a;
  b.rank = 1;
  b.pid = 11;
  b.exit_code = 3;
  b.attempt = 1;
  s.workers = {a, b};
  std::string json = summary_json(s);
  CHECK_THAT(json,
             Catch::Contains(
                 "\"rank\": 1, \"local_rank\": 0, \"attempt\": 1, \"pid\": 11, \"exit_code\": 3"));
  CHECK_THAT(json, Catch::Contains("\"exit_code\": 3"));
  CHECK_THAT(json, Catch::Contains("\"root_cause\": null"));
}

TEST_CASE("summary.json names the workers a stop kept from starting", "[report]") {
  RunSummary s;
  CHECK_THAT(summary_json(s), Catch::Contains("\"not_started\": []"));
  WorkerOutcome late;
  late.rank = 5;
  late.local_rank = 5;
  s.not_started = {late};
  CHECK_THAT(
      summary_json(s),
      Catch::Contains("\"not_started\": [{\"rank\": 5, \"local_rank\": 5, \"attempt\": 0}]"));
}

TEST_CASE("torchelastic's JSON error file is shown as Python's traceback lines", "[report]") {
  RootCause cause;
  cause.worker.rank = 1;
  cause.worker.exit_code = 1;
  cause.error_file = "/tmp/e.json";
  cause.error_file_text =
      R"({"message": {"message": "ValueError: bad batch", "extraInfo": {"py_callstack": )"
      R"("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n)"
      R"(    main()\nValueError: bad batch\n", "timestamp": "1700000000"}}})";
  const std::string text = format_root_cause(cause, 2);
  CHECK_THAT(text, Catch::Contains("xlaunch:   | Traceback (most recent call last):\n"));
  CHECK_THAT(text, Catch::Contains("xlaunch:   |   File \"train.py\", line 3, in <module>\n"));
  CHECK_THAT(text, Catch::Contains("xlaunch:   | ValueError: bad batch\n"));
  CHECK_THAT(text, !Catch::Contains("py_callstack"));
}

TEST_CASE("error files: a plain message and a file of another shape", "[report]") {
  auto plain = parse_error_file(R"({"message": "worker gave up", "errorTraits": {"x": [1, 2]}})");
  REQUIRE(plain);
  CHECK(plain->message == "worker gave up");
  CHECK(plain->traceback.empty());
  auto escaped =
      parse_error_file(R"({"message": {"message": "caf\u00e9 \"q\"", "extraInfo": {}}})");
  REQUIRE(escaped);
  CHECK(escaped->message == "caf\xc3\xa9 \"q\"");
  CHECK_FALSE(parse_error_file("not json"));
  CHECK_FALSE(parse_error_file(R"({"other": 1})"));
  CHECK_FALSE(parse_error_file(R"({"message": "a"} trailing)"));
  CHECK_FALSE(parse_error_file(std::string(100, '[')));
  RootCause cause;  // an error file that is not torchelastic's is shown as it is
  cause.error_file_text = "free text";
  CHECK_THAT(format_root_cause(cause, 1), Catch::Contains("xlaunch:   | free text"));
}

TEST_CASE("a rank's bytes in the failure report cannot move the cursor or forge lines",
          "[report]") {
  RootCause cause;
  cause.worker.rank = 0;
  cause.worker.exit_code = 1;
  cause.stderr_tail = {"\x1b[3A\x1b[Jxlaunch: all 2 workers finished successfully\x1b[8m"};
  cause.error_file = "/tmp/e.json";
  cause.error_file_text = R"({"message": "clear \u001b[2J screen"})";
  const std::string text = format_root_cause(cause, 2);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK_THAT(text, Catch::Contains(
                       "xlaunch:   | \\x1b[3A\\x1b[Jxlaunch: all 2 workers finished successfully"));
  CHECK_THAT(text, Catch::Contains("xlaunch:   | clear \\x1b[2J screen"));
}

TEST_CASE("a rank that got no process is reported as not started, with why", "[report]") {
  RootCause cause;
  cause.host = "node7";
  cause.worker.rank = 1;
  cause.worker.local_rank = 1;
  cause.worker.attempt = 2;
  cause.worker.exit_code = 1;  // stands for it in the exit code
  cause.worker.start_error = "could not set up this rank: Too many open files";
  CHECK(describe_end(cause.worker) ==
        "could not be started: could not set up this rank: Too many open files");
  const std::string report = format_root_cause(cause, 4);
  CHECK(
      report.starts_with("xlaunch: error: rank 1/4 (local rank 1, host node7) could not be "
                         "started (attempt 2): could not set up this rank: Too many open "
                         "files\n"));
  CHECK(report.find("pid 0") == std::string::npos);
  CHECK(report.find("exited") == std::string::npos);
}
