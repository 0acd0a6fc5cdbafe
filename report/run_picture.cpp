#include "report/run_picture.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <limits>

#include "config/text.hpp"

namespace json = boost::json;

namespace xlaunch::report {
namespace {

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

const json::value* member(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

// The run folder may have been changed by anyone: numbers outside what xlaunch writes are
// ignored rather than cast (undefined for a double out of range) or added up (overflow).
// Ranks, attempts, pids and exit codes fit an int; times lie between 1970 and about 2514.
constexpr double kMaxUnixSeconds = 17179869184.0;  // 2^34
constexpr std::int64_t kMaxUnixMs = std::int64_t{1} << 44;

std::optional<std::int64_t> integer(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  if (!(d >= std::numeric_limits<int>::min() && d <= std::numeric_limits<int>::max())) {
    return std::nullopt;  // also NaN
  }
  if (v->is_double()) return static_cast<std::int64_t>(d);
  return v->is_int64() ? v->as_int64() : static_cast<std::int64_t>(v->as_uint64());
}

std::optional<double> unix_seconds(const json::value& v) {
  const double d = v.to_number<double>();
  if (!(d >= 0 && d <= kMaxUnixSeconds)) return std::nullopt;
  return d;
}

std::optional<std::string> text(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->as_string());
}

/// A time given as an ISO string or as seconds since the epoch.
std::optional<std::int64_t> time_ms(const json::object& o, std::string_view key) {
  if (auto s = text(o, key)) return parse_iso_ms(*s);
  const json::value* v = member(o, key);
  if (v && v->is_number()) {
    if (auto seconds = unix_seconds(*v)) return static_cast<std::int64_t>(*seconds * 1000);
  }
  return std::nullopt;
}

std::optional<std::int64_t> first_time(const json::object& o,
                                       std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    if (auto t = time_ms(o, key)) return t;
  }
  return std::nullopt;
}

std::optional<double> first_seconds(const json::object& o,
                                    std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    const json::value* v = member(o, key);
    if (v && v->is_number()) return unix_seconds(*v);
  }
  return std::nullopt;
}

// The `stall` field comes from another part of xlaunch and may change shape: take a window
// from whatever start/end (or end and length) it gives, and ignore what does not fit.
void read_stall(const json::value& value, std::vector<StallWindow>& out) {
  if (value.is_array()) {
    for (const json::value& item : value.as_array()) read_stall(item, out);
    return;
  }
  if (!value.is_object()) return;
  const json::object& o = value.as_object();
  if (const json::value* nested = member(o, "windows")) read_stall(*nested, out);
  auto start = first_time(o, {"start", "since", "began", "from", "window_start"});
  auto end = first_time(o, {"end", "until", "detected_at", "reported_at", "at", "time"});
  const auto seconds =
      first_seconds(o, {"window_seconds", "window_s", "timeout_s", "seconds", "stall_timeout"});
  if (!start && end && seconds) start = *end - static_cast<std::int64_t>(*seconds * 1000);
  if (start && !end && seconds) end = *start + static_cast<std::int64_t>(*seconds * 1000);
  if (!start || !end || *end < *start) return;
  StallWindow w;
  w.start_ms = *start;
  w.end_ms = *end;
  w.note = fmt::format("no progress for {:.0f}s", static_cast<double>(*end - *start) / 1000);
  if (auto odd = text(o, "odd_one_out")) w.note += "; odd one out: " + *odd;
  out.push_back(std::move(w));
}

std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's algorithm: days since 1970-01-01 in the proleptic Gregorian calendar.
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

std::optional<std::int64_t> parse_iso_ms(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fff]Z
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s.back() != 'Z') {
    return std::nullopt;
  }
  int year = 0;
  unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0, millis = 0;
  if (!parse_number(s.substr(0, 4), year) || !parse_number(s.substr(5, 2), month) ||
      !parse_number(s.substr(8, 2), day) || !parse_number(s.substr(11, 2), hour) ||
      !parse_number(s.substr(14, 2), minute) || !parse_number(s.substr(17, 2), second)) {
    return std::nullopt;
  }
  std::string_view rest = s.substr(19, s.size() - 20);
  if (!rest.empty()) {
    if (rest.front() != '.' || rest.size() < 2) return std::nullopt;
    std::string digits(rest.substr(1, 3));
    while (digits.size() < 3) digits += '0';
    if (!parse_number(std::string_view(digits), millis)) return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  const std::int64_t days = days_from_civil(year, month, day);
  const std::int64_t ms = ((days * 24 + hour) * 60 + minute) * 60000 + second * 1000LL + millis;
  // The same bounds as a time in seconds: one year 1 span would squash every other bar.
  if (ms < 0 || ms > kMaxUnixMs) return std::nullopt;
  return ms;
}

std::vector<ActivityPoint> parse_activity_csv(std::string_view csv) {
  std::vector<ActivityPoint> points;
  for (std::string_view line : config::split(csv, '\n')) {
    const auto fields = config::split(line, ',');
    ActivityPoint p;
    std::uint64_t lines = 0;
    // The fifth column, the seconds a row covers, is new: files without it have rows of 1 s.
    if ((fields.size() == 4 || fields.size() == 5) && parse_number(fields[0], p.attempt) &&
        parse_number(fields[1], p.rank) && parse_number(fields[2], p.unix_second) &&
        parse_number(fields[3], lines) && p.unix_second >= 0 &&
        p.unix_second <= static_cast<std::int64_t>(kMaxUnixSeconds) &&
        (fields.size() == 4 ||
         (parse_number(fields[4], p.seconds) && p.seconds >= 1 && p.seconds <= (1 << 30)))) {
      // The launcher counts in 64 bits: a count beyond the picture's is drawn at its top.
      p.lines = static_cast<unsigned>(
          std::min<std::uint64_t>(lines, std::numeric_limits<unsigned>::max()));
      points.push_back(p);
    }
  }
  return points;
}

RunPicture parse_run_picture(std::string_view summary_json, std::string_view activity_csv,
                             std::string_view gpu_csv) {
  boost::system::error_code ec;
  json::value root = json::parse(summary_json, ec);
  if (ec) throw PictureError(fmt::format("not valid JSON: {}", ec.message()));
  if (!root.is_object()) throw PictureError("not a JSON object");
  const json::object& o = root.as_object();
  const json::value* workers = member(o, "workers");
  if (!workers || !workers->is_array()) throw PictureError("no \"workers\" list");

  RunPicture p;
  p.run_id = text(o, "run_id").value_or("?");
  p.host = text(o, "host").value_or("");
  p.world_size = static_cast<int>(integer(o, "world_size").value_or(0));
  p.exit_code = static_cast<int>(integer(o, "exit_code").value_or(0));
  p.interrupted_by = text(o, "interrupted_by");

  std::optional<std::pair<int, int>> cause;  // rank, attempt
  if (const json::value* rc = member(o, "root_cause"); rc && rc->is_object()) {
    const json::object& r = rc->as_object();
    cause = {static_cast<int>(integer(r, "rank").value_or(-1)),
             static_cast<int>(integer(r, "attempt").value_or(-1))};
    p.root_cause = fmt::format("rank {} {} (attempt {})", cause->first,
                               text(r, "description").value_or(""), cause->second);
  }
  std::size_t index = 0;
  for (const json::value& item : workers->as_array()) {
    ++index;
    if (!item.is_object())
      throw PictureError(fmt::format("workers[{}] is not an object", index - 1));
    const json::object& w = item.as_object();
    RankSpan span;
    auto rank = integer(w, "rank");
    auto start = time_ms(w, "start");
    if (!rank || !start) {
      throw PictureError(fmt::format("workers[{}] lacks a rank or a start time", index - 1));
    }
    span.rank = static_cast<int>(*rank);
    span.attempt = static_cast<int>(integer(w, "attempt").value_or(0));
    span.pid = static_cast<long>(integer(w, "pid").value_or(0));
    span.start_ms = *start;
    span.end_ms = time_ms(w, "end");
    if (auto code = integer(w, "exit_code")) span.exit_code = static_cast<int>(*code);
    span.signal_name = text(w, "signal_name");
    if (const json::value* v = member(w, "stopped_by_launcher"); v && v->is_bool()) {
      span.stopped_by_launcher = v->as_bool();
    }
    span.root_cause = cause && cause->first == span.rank && cause->second == span.attempt;
    p.spans.push_back(std::move(span));
  }
  if (const json::value* stall = member(o, "stall")) read_stall(*stall, p.stalls);
  if (const json::value* stalls = member(o, "stalls")) read_stall(*stalls, p.stalls);
  p.activity = parse_activity_csv(activity_csv);
  p.gpu = gpu::parse_gpu_csv(gpu_csv);
  std::erase_if(p.gpu, [](const auto& g) { return g.unix_ms < 0 || g.unix_ms > kMaxUnixMs; });
  return p;
}

}  // namespace xlaunch::report
