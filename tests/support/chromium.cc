#include "tests/support/chromium.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/support/subprocess.h"

namespace gloowatch::testing {
namespace {

absl::StatusOr<ProcessResult> Run(std::vector<std::string> extra, absl::Duration timeout,
                                  const std::string& user_data_dir) {
  std::vector<std::string> argv = {kChromium};
  for (std::string& f : ChromiumFlags(user_data_dir)) argv.push_back(std::move(f));
  for (std::string& f : extra) argv.push_back(std::move(f));
  ProcessResult r = RunProcess(argv, std::nullopt, "", timeout);
  if (r.timed_out || r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("chromium ", r.timed_out ? "timed out" : "failed",
                                            " (exit ", r.exit_code, "): ", r.err.substr(0, 2000)));
  }
  return r;
}

}  // namespace

std::vector<std::string> ChromiumFlags(const std::string& user_data_dir) {
  return {"--headless=new",
          "--no-sandbox",  // root in CI
          "--disable-gpu", "--disable-dev-shm-usage",
          absl::StrCat("--user-data-dir=", user_data_dir), "--no-first-run",
          "--no-default-browser-check", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--disable-extensions",
          "--disable-default-apps", "--disable-breakpad", "--metrics-recording-only",
          // Loopback stays direct (Chromium never proxies it); anything else
          // would go to a port nothing listens on.
          "--proxy-server=http://127.0.0.1:9",
          "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"};
}

absl::StatusOr<std::string> ChromiumDumpDom(const std::string& url,
                                            const std::string& user_data_dir,
                                            absl::Duration timeout) {
  absl::StatusOr<ProcessResult> r = Run({"--dump-dom", url}, timeout, user_data_dir);
  if (!r.ok()) return r.status();
  if (r->out.empty()) {
    return absl::InternalError(absl::StrCat("chromium printed no DOM: ", r->err.substr(0, 3000)));
  }
  return r->out;
}

absl::Status ChromiumScreenshot(const std::string& url, const std::string& png_path,
                                const std::string& user_data_dir, const std::string& window,
                                absl::Duration timeout) {
  absl::StatusOr<ProcessResult> r =
      Run({absl::StrCat("--screenshot=", png_path), absl::StrCat("--window-size=", window),
           "--hide-scrollbars", url},
          timeout, user_data_dir);
  if (!r.ok()) return r.status();
  std::ifstream png(png_path, std::ios::binary);
  std::string magic(8, '\0');
  if (!png.read(magic.data(), 8) || magic != "\x89PNG\r\n\x1a\n") {
    return absl::InternalError(absl::StrCat("no PNG at ", png_path));
  }
  return absl::OkStatus();
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string HeatmapRow(const std::string& page, const std::string& id, const std::string& node) {
  const size_t section = page.find(absl::StrCat("id=\"m-", id, "\""));
  if (section == std::string::npos) return "";
  const size_t start = page.find(absl::StrCat("<tr data-node=\"", node, "\""), section);
  if (start == std::string::npos) return "";
  // The page ends a row with a newline, a serialised DOM with </tr>.
  const size_t end = std::min(page.find('\n', start), page.find("</tr>", start));
  return page.substr(start, end - start);
}

}  // namespace gloowatch::testing
