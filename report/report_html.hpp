// The run's picture as one self-contained HTML page: inline SVG and CSS, no script, no
// network access. One lane per rank over time (attempts, output activity, how each ended,
// restarts, stall windows, the root cause marked) and one per GPU (utilization, memory).
#pragma once

#include <string>
#include <string_view>

#include "report/run_picture.hpp"

namespace xlaunch::report {

/// The whole page. Pure. Every lane is a <g class="lane rank-lane" data-rank="R"> or
/// <g class="lane gpu-lane" data-gpu="G">, so tools can find them.
std::string render_report_html(const RunPicture& picture);

/// Text safe inside HTML elements and attribute values.
std::string html_escape(std::string_view text);

}  // namespace xlaunch::report
