#include "report/report_html.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::report;

namespace {

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

RunPicture picture() {
  RunPicture p;
  p.run_id = "run<1>";
  p.host = "h";
  p.world_size = 3;
  p.exit_code = 3;
  p.root_cause = "rank 1 exited with code 3";
  auto span = [](int rank, int attempt, std::int64_t start, std::int64_t end, int code) {
    RankSpan s;
    s.rank = rank;
    s.attempt = attempt;
    s.start_ms = start;
    s.end_ms = end;
    s.exit_code = code;
    return s;
  };
  p.spans = {span(0, 0, 0, 4000, 0),    span(1, 0, 0, 3000, 3),    span(2, 0, 0, 4000, 0),
             span(0, 1, 5000, 9000, 0), span(1, 1, 5000, 8000, 3), span(2, 1, 5000, 9000, 0)};
  p.spans[4].root_cause = true;
  p.spans[5].stopped_by_launcher = true;
  p.spans[5].exit_code.reset();
  p.spans[5].signal_name = "SIGTERM";
  p.activity = {{0, 0, 1, 3}, {0, 1, 2, 40}};
  for (int t = 0; t < 9; ++t) {
    for (unsigned gpu : {0u, 1u}) {
      xlaunch::gpu::GpuSample s;
      s.unix_ms = t * 1000;
      s.gpu = gpu;
      s.utilization = gpu == 0 ? 97 : 20;
      s.memory_used = 1ULL << 30;
      s.memory_total = 8ULL << 30;
      p.gpu.push_back(s);
    }
  }
  p.stalls = {{6000, 8000, "no progress"}};
  return p;
}

}  // namespace

TEST_CASE("the page has one lane per rank and per GPU") {
  const std::string html = render_report_html(picture());
  CHECK(count(html, "class=\"lane rank-lane\"") == 3);
  CHECK(count(html, "class=\"lane gpu-lane\"") == 2);
  CHECK(html.find("data-rank=\"2\"") != std::string::npos);
  CHECK(html.find("data-gpu=\"1\"") != std::string::npos);
}

TEST_CASE("the page marks the root cause, ends, restarts, stalls and output") {
  const std::string html = render_report_html(picture());
  CHECK(count(html, "root cause") >= 2);  // the header and the lane
  CHECK(count(html, "class=\"failed root\"") == 1);
  CHECK(html.find(">SIGTERM") != std::string::npos);
  CHECK(html.find(">exit 3") != std::string::npos);
  CHECK(count(html, "class=\"restart-mark\"") == 1);
  CHECK(count(html, "class=\"stall-window\"") == 1);
  CHECK(count(html, "class=\"activity\"") == 2);
  CHECK(html.find("util avg 97% peak 97%") != std::string::npos);
  CHECK(html.find("GPU 1 averaged 20% utilization, far below GPU 0") != std::string::npos);
}

TEST_CASE("the page is self-contained and escapes what it shows") {
  const std::string html = render_report_html(picture());
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // nothing fetched, not even a namespace
  CHECK(html.find("run&lt;1&gt;") != std::string::npos);
  CHECK(html.find("run<1>") == std::string::npos);
}

TEST_CASE("an empty run still renders") {
  RunPicture p;
  p.run_id = "empty";
  const std::string html = render_report_html(p);
  CHECK(html.find("</svg>") != std::string::npos);
  CHECK(count(html, "rank-lane") == 0);
}
