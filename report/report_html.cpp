#include "report/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "gpu/gpu_summary.hpp"
#include "report/picture_bounds.hpp"

namespace xlaunch::report {
namespace {

constexpr double kLabelWidth = 170;
constexpr double kPlotWidth = 900;
constexpr double kAxisHeight = 28;
constexpr double kRankLane = 40;
constexpr double kGpuLane = 76;  // 70 drawn, 6 apart
constexpr double kGap = 16;

constexpr const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
.meta { color: #555; margin: 0 0 12px; }
.cause { color: #b00; font-weight: 600; }
.warn { color: #8a5a00; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
svg .axis line { stroke: #ccc; }
svg .axis text { fill: #666; font-size: 11px; }
svg .ok { fill: #cde8cd; stroke: #7ab87a; }
svg .failed { fill: #f6c0c0; stroke: #d07070; }
svg .stopped { fill: #e4e4e4; stroke: #aaa; }
svg .running { fill: #d6e4f6; stroke: #7a9cc8; }
svg .root { stroke: #c00; stroke-width: 2.5; }
svg .activity { fill: #2c6fbb; fill-opacity: 0.75; }
svg .end { font-weight: 600; }
svg .stall { fill: #f5a623; fill-opacity: 0.25; stroke: #e08e00; stroke-dasharray: 4 3; }
svg .restart { stroke: #555; stroke-dasharray: 5 4; }
svg .util { fill: #6aa84f; fill-opacity: 0.35; stroke: #38761d; }
svg .memory { fill: none; stroke: #8e44ad; stroke-width: 1.5; }
svg .lane-bg { fill: #fafafa; }
.legend span { display: inline-block; margin-right: 14px; }
.sw { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 4px; border: 1px solid #999; }
)";

struct Scale {
  std::int64_t t0 = 0;
  std::int64_t t1 = 1;
  double x(std::int64_t ms) const {
    const double f = static_cast<double>(ms - t0) / static_cast<double>(t1 - t0);
    return kLabelWidth + std::clamp(f, 0.0, 1.0) * kPlotWidth;
  }
};

Scale time_scale(const RunPicture& p) {
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  auto see = [&](std::int64_t t) {
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  };
  for (const RankSpan& s : p.spans) {
    see(s.start_ms);
    if (s.end_ms) see(*s.end_ms);
  }
  for (const auto& a : p.activity) see((a.unix_second + a.seconds) * 1000);
  for (const auto& g : p.gpu) see(g.unix_ms);
  for (const auto& w : p.stalls) {
    see(w.start_ms);
    see(w.end_ms);
  }
  if (lo == INT64_MAX) return Scale{0, 1000};
  if (hi - lo < 1000) hi = lo + 1000;
  return Scale{lo, hi};
}

std::string describe_end(const RankSpan& s) {
  if (!s.end_ms) return "running";
  if (s.signal_name) return *s.signal_name;
  if (s.exit_code) return fmt::format("exit {}", *s.exit_code);
  return "ended";
}

const char* span_class(const RankSpan& s) {
  if (!s.end_ms) return "running";
  if (s.stopped_by_launcher) return "stopped";
  if (s.exit_code && *s.exit_code == 0 && !s.signal_name) return "ok";
  return "failed";
}

std::string tick_label(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string axis(const Scale& sc, double height) {
  static constexpr std::int64_t kSteps[] = {1,   2,   5,    10,   15,   30,   60,    120,
                                            300, 600, 1200, 1800, 3600, 7200, 21600, 86400};
  const std::int64_t span_s = (sc.t1 - sc.t0 + 999) / 1000;
  std::int64_t step = kSteps[std::size(kSteps) - 1];
  for (std::int64_t s : kSteps) {
    if (span_s / s <= 10) {
      step = s;
      break;
    }
  }
  // Past ten days: whole days, still about ten ticks (a tampered run may span millennia).
  if (span_s / step > 10) step = (span_s / 10 / 86400 + 1) * 86400;
  std::string out = "<g class=\"axis\">";
  for (std::int64_t t = 0; t * 1000 <= sc.t1 - sc.t0; t += step) {
    const double x = sc.x(sc.t0 + t * 1000);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
        x, kAxisHeight - 6, height, kAxisHeight - 10, tick_label(t * 1000));
  }
  return out + "</g>\n";
}

std::string rank_lane(const RunPicture& p, const Scale& sc, int rank, double y,
                      unsigned max_lines) {
  std::string out = fmt::format(
      "<g class=\"lane rank-lane\" data-rank=\"{0}\"><rect class=\"lane-bg\" x=\"{1}\" "
      "y=\"{2:.1f}\" width=\"{3}\" height=\"{4}\"/><text x=\"8\" y=\"{5:.1f}\">rank {0}</text>",
      rank, kLabelWidth, y, kPlotWidth, kRankLane, y + kRankLane / 2 + 4);
  const double top = y + 6;
  const double height = kRankLane - 12;
  std::string ends;  // drawn last, above the activity bars
  for (const RankSpan& s : p.spans) {
    if (s.rank != rank) continue;
    const double x0 = sc.x(s.start_ms);
    const double x1 = std::max(x0 + 2, sc.x(s.end_ms.value_or(sc.t1)));
    out += fmt::format(
        "<rect class=\"{}{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" rx=\"3\">"
        "<title>rank {} attempt {} pid {}: {}</title></rect>",
        span_class(s), s.root_cause ? " root" : "", x0, top, x1 - x0, height, s.rank, s.attempt,
        s.pid, html_escape(describe_end(s)));
    // Inside the bar's right end when it fits: a restart's next bar starts right after.
    const std::string label = describe_end(s) + (s.root_cause ? " \xE2\x9C\x96 root cause" : "");
    const bool inside = x1 - x0 > 14.0 + 6.5 * static_cast<double>(label.size());
    ends += fmt::format(
        "<text class=\"end\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" "
        "text-anchor=\"{}\">{}</text>",
        inside ? x1 - 4 : x1 + 3, top + height / 2 + 4, inside ? "end" : "start",
        html_escape(label));
  }
  // Output activity: one bar per second the rank wrote, taller for more lines.
  for (const ActivityPoint& a : p.activity) {
    if (a.rank != rank || a.lines == 0) continue;
    // A second's bar stays within the attempt's bar: its first and last second are partial.
    std::int64_t from = a.unix_second * 1000, to = from + a.seconds * 1000;
    for (const RankSpan& s : p.spans) {
      if (s.rank != rank || s.attempt != a.attempt) continue;
      from = std::clamp(from, s.start_ms, std::max(s.start_ms, s.end_ms.value_or(to)));
      if (s.end_ms) to = std::clamp(to, from, std::max(from, *s.end_ms));
    }
    const double x0 = sc.x(from);
    const double x1 = sc.x(to);
    const double f = std::log2(1.0 + a.lines) / std::log2(1.0 + std::max(1u, max_lines));
    const double h = std::max(2.0, f * height * 0.55);
    out += fmt::format(
        "<rect class=\"activity\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
        "<title>{} line(s)</title></rect>",
        x0, top + height - h, std::max(1.0, x1 - x0 - 1.5), h, a.lines);
  }
  return out + ends + "</g>\n";
}

std::string gpu_lane(const std::vector<gpu::GpuSample>& samples, const gpu::GpuStats& stats,
                     const Scale& sc, double y) {
  std::string out = fmt::format(
      "<g class=\"lane gpu-lane\" data-gpu=\"{0}\"><rect class=\"lane-bg\" x=\"{1}\" "
      "y=\"{2:.1f}\" width=\"{3}\" height=\"{4}\"/><text x=\"8\" y=\"{5:.1f}\">GPU {0}</text>"
      "<text x=\"8\" y=\"{6:.1f}\" font-size=\"11\">util avg {7:.0f}% peak {8}%</text>"
      "<text x=\"8\" y=\"{9:.1f}\" font-size=\"11\">mem peak {10}</text>",
      stats.gpu, kLabelWidth, y, kPlotWidth, kGpuLane - 6, y + 18, y + 34,
      stats.average_utilization, stats.peak_utilization, y + 50,
      html_escape(gpu::format_bytes(stats.peak_memory)));
  const double bottom = y + kGpuLane - 8;
  const double height = kGpuLane - 12;
  std::string util, memory;
  double first_x = 0, last_x = 0;
  for (const gpu::GpuSample& s : samples) {
    if (s.gpu != stats.gpu) continue;
    const double x = sc.x(s.unix_ms);
    if (util.empty()) first_x = x;
    last_x = x;
    util +=
        fmt::format("{:.1f},{:.1f} ", x, bottom - std::min(100u, s.utilization) / 100.0 * height);
    const double mem =
        s.memory_total ? static_cast<double>(s.memory_used) / static_cast<double>(s.memory_total)
                       : 0.0;
    memory += fmt::format("{:.1f},{:.1f} ", x, bottom - std::min(1.0, mem) * height);
  }
  if (!util.empty()) {
    out += fmt::format("<polygon class=\"util\" points=\"{:.1f},{:.1f} {}{:.1f},{:.1f}\"/>",
                       first_x, bottom, util, last_x, bottom);
    out += fmt::format("<polyline class=\"memory\" points=\"{}\"/>", memory);
  }
  return out + "</g>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// The timeline's rows: one lane per rank, then one per GPU, under the time axis.
struct Lanes {
  std::set<int> ranks;
  std::vector<unsigned> gpus;
  double ranks_top = kAxisHeight;
  double ranks_bottom = 0;
  double gpus_top = 0;
  double height = 0;
  std::size_t hidden = 0;  // lanes past kMaxLanes, not drawn
};

Lanes lanes_of(const RunPicture& p) {
  Lanes l;
  for (const RankSpan& s : p.spans) l.ranks.insert(s.rank);
  for (const ActivityPoint& a : p.activity) l.ranks.insert(a.rank);
  for (const auto& g : p.gpu) {
    if (std::find(l.gpus.begin(), l.gpus.end(), g.gpu) == l.gpus.end()) l.gpus.push_back(g.gpu);
  }
  std::sort(l.gpus.begin(), l.gpus.end());
  // At most kMaxLanes of each: the page says how many more there were.
  while (l.ranks.size() > kMaxLanes) {
    l.ranks.erase(std::prev(l.ranks.end()));
    ++l.hidden;
  }
  if (l.gpus.size() > kMaxLanes) {
    l.hidden += l.gpus.size() - kMaxLanes;
    l.gpus.resize(kMaxLanes);
  }
  l.ranks_bottom = l.ranks_top + static_cast<double>(l.ranks.size()) * kRankLane;
  l.gpus_top = l.ranks_bottom + (l.gpus.empty() ? 0 : kGap);
  l.height = l.gpus_top + static_cast<double>(l.gpus.size()) * kGpuLane + 24;
  return l;
}

// Restarts: where each later attempt's first worker started.
std::string restart_marks(const RunPicture& p, const Scale& sc, const Lanes& l) {
  std::map<int, std::int64_t> attempt_start;
  for (const RankSpan& s : p.spans) {
    auto [it, fresh] = attempt_start.emplace(s.attempt, s.start_ms);
    if (!fresh) it->second = std::min(it->second, s.start_ms);
  }
  std::string svg;
  for (const auto& [attempt, start] : attempt_start) {
    if (attempt == 0) continue;
    const double x = sc.x(start);
    svg += fmt::format(
        "<g class=\"restart-mark\"><line class=\"restart\" x1=\"{0:.1f}\" y1=\"{1}\" "
        "x2=\"{0:.1f}\" y2=\"{2:.1f}\"/><text x=\"{3:.1f}\" y=\"{4}\" font-size=\"11\">restart "
        "{5}</text></g>\n",
        x, l.ranks_top - 2, l.ranks_bottom + 2, x + 3, l.ranks_top + 10, attempt);
  }
  return svg;
}

std::string stall_windows(const RunPicture& p, const Scale& sc, const Lanes& l) {
  std::string svg;
  for (const StallWindow& w : p.stalls) {
    const double x0 = sc.x(w.start_ms);
    const double x1 = std::max(x0 + 2, sc.x(w.end_ms));
    svg += fmt::format(
        "<g class=\"stall-window\"><rect class=\"stall\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"{:.1f}\"><title>{}</title></rect><text x=\"{:.1f}\" y=\"{:.1f}\" "
        "font-size=\"11\">stall</text></g>\n",
        x0, l.ranks_top, x1 - x0, l.ranks_bottom - l.ranks_top, html_escape(w.note), x0 + 3,
        l.ranks_bottom - 4);
  }
  return svg;
}

std::string timeline_svg(const RunPicture& p, const Scale& sc, const Lanes& l,
                         const gpu::GpuUse& use) {
  unsigned max_lines = 1;
  for (const ActivityPoint& a : p.activity) max_lines = std::max(max_lines, a.lines);
  std::string svg = fmt::format(
      "<svg width=\"{0}\" height=\"{1:.0f}\" viewBox=\"0 0 {0} {1:.0f}\" role=\"img\" "
      "aria-label=\"timeline of run {2}\">\n",
      kLabelWidth + kPlotWidth + 110, l.height, html_escape(p.run_id));
  svg += axis(sc, l.height - 20);
  // Each lane reads only its rank's spans and bars: linear in the number of ranks.
  std::map<int, RunPicture> by_rank;
  for (const RankSpan& s : p.spans) by_rank[s.rank].spans.push_back(s);
  for (const ActivityPoint& a : p.activity) by_rank[a.rank].activity.push_back(a);
  double y = l.ranks_top;
  for (int rank : l.ranks) {
    svg += rank_lane(by_rank[rank], sc, rank, y, max_lines);
    y += kRankLane;
  }
  svg += restart_marks(p, sc, l);
  svg += stall_windows(p, sc, l);
  y = l.gpus_top;
  for (const gpu::GpuStats& stats : use.gpus) {
    if (std::find(l.gpus.begin(), l.gpus.end(), stats.gpu) == l.gpus.end()) continue;
    svg += gpu_lane(p.gpu, stats, sc, y);
    y += kGpuLane;
  }
  return svg + "</svg>\n";
}

constexpr std::string_view kLegend =
    "<p class=\"legend\"><span><i class=\"sw\" style=\"background:#cde8cd\"></i>exited 0</span>"
    "<span><i class=\"sw\" style=\"background:#f6c0c0\"></i>failed</span>"
    "<span><i class=\"sw\" style=\"background:#e4e4e4\"></i>stopped by xlaunch</span>"
    "<span><i class=\"sw\" style=\"background:#fff;border:2px solid #c00\"></i>root "
    "cause</span><span><i class=\"sw\" style=\"background:#2c6fbb\"></i>output lines per "
    "second</span><span><i class=\"sw\" style=\"background:#fbe3bd\"></i>stall</span>"
    "<span><i class=\"sw\" style=\"background:#b5d3a7\"></i>GPU utilization</span>"
    "<span><i class=\"sw\" style=\"background:#8e44ad\"></i>GPU memory used</span></p>\n";

}  // namespace

std::string render_report_html(const RunPicture& run) {
  // What is drawn is bounded (picture_bounds.hpp); the GPU figures come from every sample.
  RunPicture p = run;
  p.activity = bin_activity(run.activity, kMaxLanePoints);
  p.gpu = bin_gpu(run.gpu, kMaxLanePoints);
  const Scale sc = time_scale(p);
  const Lanes lanes = lanes_of(p);
  const gpu::GpuUse use = gpu::summarize_gpu_use(run.gpu, lanes.gpus, {});

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  html += fmt::format("<title>xlaunch run {}</title><style>{}</style></head><body>\n",
                      html_escape(p.run_id), kStyle);
  html += fmt::format("<h1>xlaunch run {}</h1>\n", html_escape(p.run_id));
  html += fmt::format(
      "<p class=\"meta\">host {} &middot; world size {} &middot; {} rank lane(s), {} GPU "
      "lane(s) &middot; {} &middot; exit code {}{}</p>\n",
      html_escape(p.host), p.world_size, lanes.ranks.size(), lanes.gpus.size(),
      tick_label(sc.t1 - sc.t0) + " shown", p.exit_code,
      p.interrupted_by ? " (interrupted by " + html_escape(*p.interrupted_by) + ")" : "");
  if (p.root_cause) {
    html += fmt::format("<p class=\"cause\">root cause: {}</p>\n", html_escape(*p.root_cause));
  }
  if (lanes.hidden > 0) {
    html += fmt::format(
        "<p class=\"warn\">{} more lane(s) not drawn: the page shows the first "
        "{} ranks and GPUs</p>\n",
        lanes.hidden, kMaxLanes);
  }
  for (const std::string& w : use.warnings) {
    html += fmt::format("<p class=\"warn\">warning: {}</p>\n", html_escape(w));
  }
  html += timeline_svg(p, sc, lanes, use);
  html += kLegend;
  html += "</body></html>\n";
  return html;
}

}  // namespace xlaunch::report
