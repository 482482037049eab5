// gloowatch health: the cluster's verdict, suspects, matrices.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli/command.h"
#include "client/cli/support.h"
#include "client/health/html_page.h"
#include "client/health/render.h"
#include "common/exit_codes.h"

ABSL_FLAG(std::string, html, "",
          "health: also write the heatmap page (one self-contained HTML file) to FILE; - = "
          "stdout, instead of the table.");
ABSL_FLAG(double, watch, 0, "Repeat every SECONDS (health); 0 = once.");
ABSL_FLAG(int, watch_count, 0, "Stop --watch after N rounds; 0 = until interrupted.");

namespace gloowatch::client {
namespace {

int RunHealth(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("health takes no arguments, got '", args[0], "'"));
  int exit = kExitUsage;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  const double watch = absl::GetFlag(FLAGS_watch);
  if (watch < 0 || std::isnan(watch)) return Usage("--watch must be >= 0 seconds");
  const int rounds = absl::GetFlag(FLAGS_watch_count);
  const bool color = UseColor(STDOUT_FILENO);
  const std::string html = absl::GetFlag(FLAGS_html);
  int code = kExitOk;
  for (int round = 0;; ++round) {
    const absl::Time start = absl::Now();
    absl::StatusOr<ClusterPicture> c = Observe(*source);
    if (!c.ok()) {
      std::cerr << "gloowatch health: " << c.status().message() << "\n";
      return absl::IsInvalidArgument(c.status()) ? kExitUsage : kExitUnavailable;
    }
    code = c->ExitCode();
    if (c->NothingAnswered()) {
      std::cerr << "gloowatch health: no daemon answered (" << c->node_reports.size()
                << " asked)\n";
    }
    if (!html.empty()) {
      if (int w = WriteOutput(html, RenderHealthHtml(*c)); w != kExitOk) return w;
    }
    if (html == "-") {
      // The page is stdout's only content.
    } else if (absl::GetFlag(FLAGS_json)) {
      std::cout << HealthToJson(*c).dump(watch > 0 ? -1 : 2) << std::endl;  // NDJSON when watching
    } else {
      if (watch > 0 && isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
      std::cout << RenderHealthText(*c, color) << std::flush;
    }
    if (watch <= 0 || (rounds > 0 && round + 1 >= rounds)) break;
    absl::SleepFor(absl::Seconds(watch) - (absl::Now() - start));
  }
  return code;
}

}  // namespace

const Command& HealthCommand() {
  static const auto* command = new Command{
      "health",
      "health [--daemons A,B | --config FILE | --cluster FILE | --prometheus URL] [flags]",
      "cluster health: matrices, worst links, verdict", RunHealth,
      With(kSourceFlags, {"json", "color", "watch", "watch_count", "html"})};
  return *command;
}

}  // namespace gloowatch::client
