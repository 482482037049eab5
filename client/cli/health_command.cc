// gloowatch health: the cluster's verdict, suspects, matrices.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
ABSL_FLAG(bool, matrices, false,
          "health: print the figure matrices (shown anyway for clusters of up to 8 nodes).");
ABSL_FLAG(std::string, output, "",
          "health (-o): 'wide' adds each node's address, version, Gloo endpoint and labels, and "
          "the matrices; 'json' is --json.");
ABSL_FLAG(std::vector<std::string>, node, {},
          "health: show only these nodes (comma-separated, repeatable), their links and the "
          "suspects that explain them; the verdict and exit code cover them alone.");
ABSL_FLAG(std::string, group, "", "health: show only the nodes of this group (rack).");
ABSL_FLAG(std::string, selector, "",
          "health (-l): show only the nodes whose topology labels match, e.g. "
          "rack=r1,zone=eu.");

namespace gloowatch::client {
namespace {

// --node, --group, -l: which nodes to show.
absl::StatusOr<NodeFilter> FilterFromFlags() {
  NodeFilter f;
  for (const std::string& n : absl::GetFlag(FLAGS_node)) {
    if (!n.empty()) f.names.insert(n);
  }
  f.group = absl::GetFlag(FLAGS_group);
  for (absl::string_view term :
       absl::StrSplit(absl::GetFlag(FLAGS_selector), ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(term, absl::MaxSplits('=', 1));
    kv.first = std::string(absl::StripAsciiWhitespace(kv.first));
    kv.second = std::string(absl::StripAsciiWhitespace(kv.second));
    if (kv.first.empty() || term.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("-l/--selector: '", term, "' is not key=value"));
    }
    f.labels[kv.first] = kv.second;
  }
  return f;
}

int RunHealth(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage(absl::StrCat("health takes no arguments, got '", args[0], "'"));
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "" && output != "wide" && output != "json") {
    return Usage(absl::StrCat("-o/--output must be wide or json, got '", output, "'"));
  }
  absl::StatusOr<NodeFilter> filter = FilterFromFlags();
  if (!filter.ok()) return Usage(std::string(filter.status().message()));
  const bool json = absl::GetFlag(FLAGS_json) || output == "json";
  int exit = kExitUsage;
  std::optional<ClusterSource> source = SourceFromFlags(&exit);
  if (!source) return exit;
  const double watch = absl::GetFlag(FLAGS_watch);
  if (watch < 0 || std::isnan(watch)) return Usage("--watch must be >= 0 seconds");
  const int rounds = absl::GetFlag(FLAGS_watch_count);
  HealthTextOptions text_options;
  text_options.color = UseColor(STDOUT_FILENO);
  text_options.matrices = absl::GetFlag(FLAGS_matrices);
  text_options.wide = output == "wide";
  const std::string html = absl::GetFlag(FLAGS_html);
  int code = kExitOk;
  for (int round = 0;; ++round) {
    const absl::Time start = absl::Now();
    absl::StatusOr<ClusterPicture> c = Observe(*source);
    if (!c.ok()) {
      std::cerr << "gloowatch health: " << c.status().message() << "\n";
      return absl::IsInvalidArgument(c.status()) ? kExitUsage : kExitUnavailable;
    }
    ApplyNodeFilter(*filter, *c);
    code = c->ExitCode();
    if (!html.empty()) {
      if (int w = WriteOutput(html, RenderHealthHtml(*c)); w != kExitOk) return w;
    }
    if (html == "-") {
      // The page is stdout's only content.
    } else if (json) {
      std::cout << HealthToJson(*c).dump(watch > 0 ? -1 : 2) << std::endl;  // NDJSON when watching
    } else {
      if (watch > 0 && isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
      std::cout << RenderHealthText(*c, text_options) << std::flush;
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
      "health (--daemons A,B | --config FILE | --cluster FILE | --prometheus URL) [-o wide] "
      "[--node N] [--group G] [-l key=value] [flags]",
      "cluster health: the verdict and why, suspects, nodes, links, matrices", RunHealth,
      With(kSourceFlags, {"json", "color", "watch", "watch_count", "html", "matrices", "output",
                          "node", "group", "selector"})};
  return *command;
}

}  // namespace gloowatch::client
