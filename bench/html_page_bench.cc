// The heatmap page at N nodes (default 256): a synthetic full-mesh report in
// which every band, down nodes, pending figures and a sampled-out pair occur,
// rendered as `gloowatch health --html` renders it. Prints the size and the
// render time, writes the page to --out for bench/html_page.sh, which times
// Chromium loading it.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/health/cluster.h"
#include "client/health/html_page.h"

ABSL_FLAG(int, nodes, 256, "Nodes in the synthetic report (2..2048).");
ABSL_FLAG(std::string, out, "", "Write the page here.");
ABSL_FLAG(int, down, 2, "How many of the nodes do not answer.");

namespace {

using gloowatch::client::FetchResult;

std::string Name(int i) { return absl::StrFormat("gpu-node-%04d", i); }

// Figures that are a fixed function of (a, b) and cross every colour band.
void AddPeer(gloowatch::v1::NodeStatus& s, int a, int b, bool peer_down) {
  gloowatch::v1::PeerStatus* p = s.add_peers();
  p->set_name(Name(b));
  if (peer_down) {
    p->set_state(gloowatch::v1::PEER_STATE_DOWN);
    p->mutable_last_failure()->set_message("connection refused");
    return;
  }
  p->set_state(gloowatch::v1::PEER_STATE_UP);
  const int k = (31 * a + 17 * b) % 100;
  p->mutable_latency()->set_p50_seconds((50 + k * 30) * 1e-6);  // 0.05 .. 3.0 ms
  p->mutable_latency()->set_p99_seconds((100 + k * 60) * 1e-6);
  if (k % 13 != 0) {  // some bandwidth figures still pending
    p->mutable_bandwidth()->set_tx_bytes_per_second(1e9);
    p->mutable_bandwidth()->set_link_ratio(1.0 - k * 0.006);  // 1.0 .. 0.41
  }
  p->mutable_clock()->set_offset_seconds((b - a) * 1e-3);
  p->mutable_clock()->set_error_seconds(1e-4);
  if (k % 3 == 0) p->mutable_tcp()->set_loss_ratio(k * 0.0003);  // 0 .. 0.03
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n = absl::GetFlag(FLAGS_nodes), down = absl::GetFlag(FLAGS_down);
  if (n < 2 || n > 2048 || down < 0 || down >= n) {
    std::cerr << "html_page_bench: --nodes must be 2..2048 and --down < --nodes\n";
    return 64;
  }
  std::set<int> down_nodes;  // spread over the matrix
  for (int k = 0; k < down; ++k) down_nodes.insert((7 + k * n / down) % n);
  auto is_down = [&](int i) { return down_nodes.count(i) > 0; };
  std::vector<FetchResult> fetched(n);
  for (int i = 0; i < n; ++i) {
    fetched[i].target = {Name(i), {"10.0.0.1", static_cast<uint16_t>(7601 + i)}};
    if (is_down(i)) {
      fetched[i].error = "DEADLINE_EXCEEDED: no answer within 3s";
      continue;
    }
    gloowatch::v1::NodeStatus& s = fetched[i].status.emplace();
    s.set_node(Name(i));
    s.set_version("0.1.0");
    for (int j = 0; j < n; ++j) {
      if (j != i) AddPeer(s, i, j, is_down(j));
    }
  }
  const absl::Time t0 = absl::Now();
  gloowatch::client::ClusterPicture c = gloowatch::client::BuildCluster(std::move(fetched));
  const absl::Time t1 = absl::Now();
  const std::string page = gloowatch::client::RenderHealthHtml(c);
  const absl::Time t2 = absl::Now();
  std::printf("nodes %d (%d down), %zu links\n", n, down, c.links.size());
  std::printf("page bytes %zu (%.2f MB)\n", page.size(), page.size() / 1e6);
  std::printf("build ms %.1f, render ms %.1f\n", absl::ToDoubleMilliseconds(t1 - t0),
              absl::ToDoubleMilliseconds(t2 - t1));
  if (const std::string out = absl::GetFlag(FLAGS_out); !out.empty()) {
    std::ofstream f(out, std::ios::trunc);
    f << page;
    if (!f.flush()) {
      std::cerr << "html_page_bench: cannot write " << out << "\n";
      return 73;
    }
  }
  return 0;
}
