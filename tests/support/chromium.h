// Debian's headless Chromium for page tests and the page benchmark, run as
// root in CI and kept off the network: every host name resolves nowhere and
// every non-loopback request goes to a proxy on a closed loopback port, so
// the browser cannot reach any address outside this machine.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gloowatch::testing {

inline constexpr char kChromium[] = "/usr/bin/chromium";

// The flags every run uses; `user_data_dir` is a fresh directory of the test's.
std::vector<std::string> ChromiumFlags(const std::string& user_data_dir);

// The DOM after the page loaded (--dump-dom), or why not.
absl::StatusOr<std::string> ChromiumDumpDom(const std::string& url,
                                            const std::string& user_data_dir,
                                            absl::Duration timeout = absl::Seconds(60));

// A PNG of the page at `window` ("W,H") in `png_path`.
absl::Status ChromiumScreenshot(const std::string& url, const std::string& png_path,
                                const std::string& user_data_dir, const std::string& window,
                                absl::Duration timeout = absl::Seconds(60));

// Reading the heatmap page (as written, or as Chromium serialised its DOM).
// How often `what` occurs in `text`.
size_t Occurrences(const std::string& text, const std::string& what);
// The row of `node` in the heatmap section `id` ("latency", ...), up to its
// end; empty when there is none.
std::string HeatmapRow(const std::string& page, const std::string& id, const std::string& node);

}  // namespace gloowatch::testing
