#include "launcher/report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <csignal>
#include <cstring>

#include "config/text.hpp"
#include "diagnose/safe_text.hpp"
#include "launcher/error_file.hpp"
#include "launcher/exit_status.hpp"

namespace xlaunch::launcher {

using config::iso_time;
using config::json_quote;

int exit_code_of(const WorkerOutcome& worker) {
  if (worker.signal) return exit_status::kSignalBase + *worker.signal;
  return worker.exit_code.value_or(0);
}

bool failed(const WorkerOutcome& worker) {
  return worker.signal.has_value() || (worker.exit_code && *worker.exit_code != 0);
}

std::string signal_name(int signal) {
  // glibc has no abbreviation for real-time signals: name them as kill -l does.
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    const int from_min = signal - SIGRTMIN;
    const int to_max = SIGRTMAX - signal;
    if (from_min == 0) return "SIGRTMIN";
    if (to_max == 0) return "SIGRTMAX";
    return from_min <= to_max ? fmt::format("SIGRTMIN+{}", from_min)
                              : fmt::format("SIGRTMAX-{}", to_max);
  }
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return fmt::format("signal {}", signal);
  return fmt::format("SIG{}", abbrev);
}

std::string describe_end(const WorkerOutcome& worker) {
  if (worker.start_error) return "could not be started: " + *worker.start_error;
  if (worker.signal) {
    return fmt::format("was killed by {} (signal {})", signal_name(*worker.signal), *worker.signal);
  }
  if (worker.exit_code) return fmt::format("exited with code {}", *worker.exit_code);
  return "is still running";
}

std::string format_root_cause(const RootCause& cause, int world_size) {
  const WorkerOutcome& w = cause.worker;
  const std::string attempt =
      w.attempt > 0 ? fmt::format(" (attempt {})", w.attempt) : std::string();
  // It never ran: no pid, no exit code, no time of its own to report.
  std::string out =
      w.start_error
          ? fmt::format(
                "xlaunch: error: rank {}/{} (local rank {}, host {}) could not be "
                "started{}: {}\n",
                w.rank, world_size, w.local_rank, cause.host, attempt, *w.start_error)
          : fmt::format("xlaunch: error: rank {}/{} (local rank {}, host {}, pid {}) {} at {}{}\n",
                        w.rank, world_size, w.local_rank, cause.host, w.pid, describe_end(w),
                        cause.worker.end ? iso_time(*cause.worker.end) : std::string("?"), attempt);
  if (!cause.stderr_tail.empty()) {
    out += fmt::format("xlaunch: last {} line(s) of rank {}'s stderr:\n", cause.stderr_tail.size(),
                       w.rank);
    // A rank's bytes inside xlaunch's own report: no cursor moves, no forged lines.
    for (const auto& line : cause.stderr_tail) {
      out += fmt::format("xlaunch:   | {}\n", diagnose::escape_controls(line, false));
    }
  }
  if (cause.error_file_text) {
    out += fmt::format("xlaunch: rank {} wrote its error file {}:\n", w.rank, cause.error_file);
    // torchelastic's JSON holds the traceback as one escaped string: show Python's lines.
    std::string readable;
    if (const auto parsed = parse_error_file(*cause.error_file_text)) {
      readable = parsed->traceback.empty() ? parsed->message : parsed->traceback;
      while (!readable.empty() && readable.back() == '\n') readable.pop_back();
      // A traceback ends with the exception line; the message is added when it does not.
      if (!parsed->traceback.empty() && readable.find(parsed->message) == std::string::npos) {
        readable += "\n" + parsed->message;
      }
    }
    std::string_view text = readable.empty() ? std::string_view(*cause.error_file_text) : readable;
    constexpr std::size_t kMaxShown = 8192;
    bool cut = text.size() > kMaxShown;
    if (cut) text = text.substr(0, kMaxShown);
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      out += fmt::format("xlaunch:   | {}\n",
                         diagnose::escape_controls(text.substr(start, end - start), false));
      start = end + 1;
    }
    if (cut) out += "xlaunch:   | ... (cut; see the file)\n";
  }
  return out;
}

namespace {

std::string worker_json(const WorkerOutcome& w) {
  return fmt::format(
      "{{\"rank\": {}, \"local_rank\": {}, \"attempt\": {}, \"pid\": {}, \"exit_code\": {}, "
      "\"signal\": {}, \"signal_name\": {}, \"stopped_by_launcher\": {}, \"start\": \"{}\", "
      "\"end\": {}}}",
      w.rank, w.local_rank, w.attempt, w.pid, w.exit_code ? std::to_string(*w.exit_code) : "null",
      w.signal ? std::to_string(*w.signal) : "null",
      w.signal ? json_quote(signal_name(*w.signal)) : "null", w.stopped_by_launcher,
      iso_time(w.start), w.end ? json_quote(iso_time(*w.end)) : "null");
}

}  // namespace

std::string describe_log_cut(const LogCut& cut) {
  return fmt::format(
      "rank {}'s log {} stops at byte {}: {}; the rest of its output reached the "
      "console only",
      cut.rank, cut.path, cut.bytes, cut.error);
}

std::string summary_json(const RunSummary& s) {
  std::string out = "{\n";
  out += fmt::format("  \"run_id\": {},\n  \"host\": {},\n  \"world_size\": {},\n",
                     json_quote(s.run_id), json_quote(s.host), s.world_size);
  out += fmt::format("  \"exit_code\": {},\n  \"interrupted_by\": {},\n", s.exit_code,
                     s.interrupted_by ? json_quote(signal_name(*s.interrupted_by)) : "null");
  out += "  \"workers\": [";
  for (std::size_t i = 0; i < s.workers.size(); ++i) {
    out += (i ? ",\n    " : "\n    ") + worker_json(s.workers[i]);
  }
  out += s.workers.empty() ? "],\n" : "\n  ],\n";
  out += "  \"not_started\": [";
  for (std::size_t i = 0; i < s.not_started.size(); ++i) {
    const WorkerOutcome& w = s.not_started[i];
    out += fmt::format("{}{{\"rank\": {}, \"local_rank\": {}, \"attempt\": {}}}", i ? ", " : "",
                       w.rank, w.local_rank, w.attempt);
  }
  out += "],\n";
  out += "  \"log_cuts\": [";
  for (std::size_t i = 0; i < s.log_cuts.size(); ++i) {
    const LogCut& c = s.log_cuts[i];
    out += fmt::format(
        "{}{{\"rank\": {}, \"attempt\": {}, \"log\": {}, \"stops_at_byte\": {}, "
        "\"error\": {}}}",
        i ? ", " : "", c.rank, c.attempt, json_quote(c.path), c.bytes, json_quote(c.error));
  }
  out += "],\n";
  if (s.root_cause) {
    std::string tail;
    for (std::size_t i = 0; i < s.root_cause->stderr_tail.size(); ++i) {
      tail += (i ? ", " : "") + json_quote(s.root_cause->stderr_tail[i]);
    }
    out += fmt::format(
        "  \"root_cause\": {{\"rank\": {}, \"local_rank\": {}, \"attempt\": {}, \"host\": {}, "
        "\"description\": {}, \"error_file\": {}, \"stderr_tail\": [{}]}}\n",
        s.root_cause->worker.rank, s.root_cause->worker.local_rank, s.root_cause->worker.attempt,
        json_quote(s.root_cause->host), json_quote(describe_end(s.root_cause->worker)),
        s.root_cause->error_file_text ? json_quote(s.root_cause->error_file) : "null", tail);
  } else {
    out += "  \"root_cause\": null\n";
  }
  // The last stall report (docs/diagnose.md), already JSON.
  if (s.stall_json) {
    out.insert(out.size() - 1, ",");
    out += fmt::format("  \"stall\": {}\n", *s.stall_json);
  }
  out += "}\n";
  return out;
}

}  // namespace xlaunch::launcher
