#include "client/health/suspects_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gloowatch::client {
namespace {

// "group uplink" for group_uplink.
std::string KindText(SuspectKind k) {
  std::string text = SuspectKindName(k);
  std::replace(text.begin(), text.end(), '_', ' ');
  return text;
}

}  // namespace

std::string RenderSuspectsText(const std::vector<Suspect>& suspects, bool color, size_t max_shown) {
  if (suspects.empty()) return "";
  std::string out = "suspects (most likely first)\n";
  for (size_t i = 0; i < suspects.size() && i < max_shown; ++i) {
    const Suspect& s = suspects[i];
    std::string head = absl::StrCat(KindText(s.kind), " ", s.name);
    if (color) head = absl::StrCat("\033[1m", head, "\033[0m");
    absl::StrAppend(&out, "  ", i + 1, ". ", head,
                    absl::StrFormat("  (confidence %.2f, %d bad links", s.confidence, s.bad_links),
                    s.fine_links > 0 ? absl::StrCat(", ", s.fine_links, " fine") : "", ")\n");
    // The case, then what the suspect says of itself, then its peers.
    for (const auto& e : s.evidence) {
      const bool self =
          std::find(s.evidence_self.begin(), s.evidence_self.end(), e) != s.evidence_self.end();
      const bool peers =
          std::find(s.evidence_peers.begin(), s.evidence_peers.end(), e) != s.evidence_peers.end();
      absl::StrAppend(&out, "       ", self ? "itself: " : peers ? "peers:  " : "", e, "\n");
    }
  }
  if (suspects.size() > max_shown) {
    absl::StrAppend(&out, "  ... and ", suspects.size() - max_shown, " more (see --json)\n");
  }
  return out;
}

nlohmann::json SuspectsToJson(const std::vector<Suspect>& suspects) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < suspects.size(); ++i) {
    const Suspect& s = suspects[i];
    nlohmann::json links = nlohmann::json::array();
    for (const auto& [a, b] : s.links) links.push_back({a, b});
    out.push_back({{"rank", i + 1},
                   {"kind", SuspectKindName(s.kind)},
                   {"name", s.name},
                   {"groups", s.groups},
                   {"confidence", s.confidence},
                   {"bad_links", s.bad_links},
                   {"fine_links", s.fine_links},
                   {"links", std::move(links)},
                   {"evidence", s.evidence},
                   {"evidence_self", s.evidence_self},
                   {"evidence_peers", s.evidence_peers},
                   {"pooled_loss_ratio",
                    s.pooled_loss_ratio ? nlohmann::json(*s.pooled_loss_ratio) : nlohmann::json()},
                   {"job_loss", s.job_loss ? nlohmann::json{{"lost", s.job_loss->lost},
                                                            {"sent", s.job_loss->sent}}
                                           : nlohmann::json()}});
  }
  return out;
}

}  // namespace gloowatch::client
