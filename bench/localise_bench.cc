// Localisation (client/localise) on large synthetic link matrices: how long it
// takes and whether it names the planted fault, at 1,000 nodes in a full mesh
// and at 10,000 nodes with the sampled mesh of the real daemon/peers/topology
// module (who probes whom in one epoch). Prints one line per case; the
// 1,000-node time has a target (< 100 ms, docs/performance.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "client/health/localise.h"
#include "common/config.h"
#include "daemon/peers/topology.h"

ABSL_FLAG(int, runs, 5, "timed runs per case (the median is printed)");
ABSL_FLAG(int, group_size, 40, "nodes per group (rack)");

namespace gloowatch {
namespace {

using client::LinkObservation;
using client::LocaliseInput;
using client::Suspect;

enum class Fault { kNone, kNode, kUplink, kLink, kOverload };
const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "healthy";
    case Fault::kNode:
      return "node";
    case Fault::kUplink:
      return "group uplink";
    case Fault::kLink:
      return "single link";
    case Fault::kOverload:
      return "overloaded host";
  }
  return "";
}

struct Mesh {
  std::vector<client::LocaliseNode> nodes;
  std::vector<std::pair<uint32_t, uint32_t>> directed;  // measured (from, to)
  bool sampled = false;
};

// `full`: every node probes every other (full_mesh_max_nodes raised to n);
// else the default sampled selection.
Mesh BuildMesh(int n, int group_size, bool full) {
  std::vector<TopologyNode> tn;
  for (int i = 0; i < n; ++i) {
    tn.push_back({absl::StrCat("n", i), absl::StrCat("g", i / group_size)});
  }
  TopologyConfig config;
  if (full) config.full_mesh_max_nodes = static_cast<uint32_t>(n);
  Topology t(tn, config);
  Mesh m;
  m.sampled = t.sampled();
  for (size_t i = 0; i < t.size(); ++i)
    m.nodes.push_back({t.node(i).name, t.node(i).group, true, ""});
  std::vector<ProbeTarget> targets;
  for (size_t i = 0; i < t.size(); ++i) {
    t.Select(i, /*epoch=*/1, &targets);
    for (const auto& p : targets) {
      m.directed.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(p.index));
    }
  }
  return m;
}

struct Case {
  Fault fault;
  std::string expected;  // suspect kind:name, empty for healthy
  LocaliseInput input;
};

Case Plant(const Mesh& m, Fault f) {
  Case c{f, "", {}};
  c.input.nodes = m.nodes;
  const uint32_t victim = static_cast<uint32_t>(m.nodes.size() / 2 + 3);
  const std::string& vgroup = m.nodes[victim].group;
  // The single link: the first measured link of the victim to another group.
  std::pair<uint32_t, uint32_t> link{0, 0};
  for (const auto& [a, b] : m.directed) {
    if (a == victim && m.nodes[b].group != vgroup) {
      link = {std::min(a, b), std::max(a, b)};
      break;
    }
  }
  switch (f) {
    case Fault::kNone:
      break;
    case Fault::kNode:
      c.expected = absl::StrCat("node:", m.nodes[victim].name);
      break;
    case Fault::kUplink:
      c.expected = absl::StrCat("group_uplink:", vgroup);
      break;
    case Fault::kLink:
      c.expected =
          absl::StrCat("link:", m.nodes[link.first].name, " <-> ", m.nodes[link.second].name);
      break;
    case Fault::kOverload:
      c.expected = absl::StrCat("overloaded_host:", m.nodes[victim].name);
      c.input.nodes[victim].overload = "probe scheduling delay p99 40 ms";
      break;
  }
  c.input.observations.reserve(m.directed.size());
  for (const auto& [a, b] : m.directed) {
    bool bad = false;
    if (f == Fault::kNode || f == Fault::kOverload) bad = a == victim || b == victim;
    if (f == Fault::kUplink) bad = (m.nodes[a].group == vgroup) != (m.nodes[b].group == vgroup);
    if (f == Fault::kLink) bad = std::min(a, b) == link.first && std::max(a, b) == link.second;
    c.input.observations.push_back(LinkObservation{
        a, b, bad, bad ? absl::StrCat(m.nodes[a].name, "->", m.nodes[b].name, ": loss") : "", false,
        0.0});
  }
  return c;
}

int Run() {
  const int runs = std::max(1, absl::GetFlag(FLAGS_runs));
  const int group_size = std::max(1, absl::GetFlag(FLAGS_group_size));
  bool all_ok = true;
  std::printf("%-7s %-8s %-16s %12s %10s  %s\n", "nodes", "mesh", "fault", "directions",
              "median ms", "suspects (first)");
  for (const auto& [n, full] : {std::pair{1000, true}, {1000, false}, {10000, false}}) {
    const Mesh mesh = BuildMesh(n, group_size, full);
    for (Fault f : {Fault::kNone, Fault::kNode, Fault::kUplink, Fault::kLink, Fault::kOverload}) {
      const Case c = Plant(mesh, f);
      std::vector<double> ms;
      std::vector<Suspect> s;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        s = client::Localise(c.input);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      std::sort(ms.begin(), ms.end());
      const double median = ms[ms.size() / 2];
      std::string first =
          s.empty() ? "" : absl::StrCat(client::SuspectKindName(s[0].kind), ":", s[0].name);
      const bool right = c.expected.empty() ? s.empty() : s.size() == 1 && first == c.expected;
      all_ok = all_ok && right;
      std::string verdict = right ? "right" : absl::StrCat("WRONG, expected ", c.expected);
      if (n == 1000 && full) {
        absl::StrAppend(&verdict,
                        median < 100 ? ", time met (< 100 ms)" : ", time SHORT (>= 100 ms)");
      }
      std::printf("%-7d %-8s %-16s %12zu %10.1f  %zu (%s) %s\n", n,
                  mesh.sampled ? "sampled" : "full", FaultName(f), c.input.observations.size(),
                  median, s.size(), first.empty() ? "none" : first.c_str(), verdict.c_str());
    }
  }
  std::printf("localisation: %s\n", all_ok
                                        ? "every planted fault named, nothing else blamed: met"
                                        : "a planted fault missed or something else blamed: SHORT");
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace gloowatch

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gloowatch::Run();
}
