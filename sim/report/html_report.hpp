// report.html: one self-contained page (inline CSS, script and data; no network access) with the
// layout and model card, the headline numbers, the three walls, a zoomable timeline of the
// representative ranks, memory over time per stage, sensitivities and the busiest links.
//
// The page is drawn in the browser from two embedded JSON documents: summary.json and the
// compact timeline (timeline.hpp); so `wallsim report` re-renders it from a run's files. The
// script sets `document.body.dataset.ok = "1"` when it has drawn everything and
// `document.body.dataset.error` on any JavaScript error, for the browser test.
#pragma once

#include <iosfwd>
#include <string_view>

namespace wallsim {

// Throws std::invalid_argument when `summary_json` (or a non-empty `timeline_json`) is not
// valid JSON. An empty timeline leaves the timeline and memory charts out.
void write_html_report(std::string_view summary_json, std::string_view timeline_json,
                       std::ostream& out);

}  // namespace wallsim
