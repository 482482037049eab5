#include "tests/support/fault_catalogue.h"

#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/support/cpu_hog.h"
#include "tests/support/paths.h"

namespace gloowatch::testing {

struct FaultBed::RowState {
  std::unique_ptr<CpuHog> hog;
};

namespace {

constexpr int kRacksHosts = 6;
constexpr int kJobRanks = 3;
constexpr char kPython[] = "/usr/bin/python3";

// The thresholds a veth bed needs, on either schedule: a veth claims 10 Gb/s,
// of which these hosts move 25-40 MB/s with one segment per packet (so the
// link ratio is judged only against a collapse), and a round trip among 12
// processes on 2 cores takes milliseconds. The hypervisor's steal is the
// one VM's, shared by every host of a bed: no row is about it.
constexpr char kBedThresholds[] =
    "thresholds:\n  latency: 50ms\n  bandwidth_link_ratio: 0.002\n  cpu_steal_ratio: 1\n";

// The racks tests' schedule: latency probes every 500 ms, 4 MiB bandwidth
// probes every 3 s (a loss ratio needs segments), a short backoff, and a
// Gloo timeout well above TCP's retransmission back-off under 5% loss.
constexpr char kRacksFastGloo[] = "gloo:\n  interface: eth0\n  timeout: 5s\n";
constexpr char kRacksFastSchedule[] =
    "schedule:\n  latency_interval: 500ms\n  skew_interval: 2s\n  bandwidth_interval: 3s\n"
    "  bandwidth_budget: 1\n"
    "probe:\n  bandwidth_bytes: 4MiB\n  bandwidth_message_bytes: 1MiB\n"
    "  backoff_initial: 200ms\n  backoff_max: 1s\n";
constexpr char kDefaultGloo[] = "gloo:\n  interface: eth0\n";

std::string BedHostName(int i) { return absl::StrCat("h", i + 1); }

uint32_t IpValue(const std::string& ip) {
  in_addr a{};
  inet_pton(AF_INET, ip.c_str(), &a);
  return ntohl(a.s_addr);
}

nlohmann::json ParseJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

double SecondsSince(absl::Time start, absl::Time t) { return absl::ToDoubleSeconds(t - start); }

std::string Seconds(double s) { return absl::StrFormat("%.1f s", s); }

// --- rows --------------------------------------------------------------------

struct Row {
  std::string name;
  std::function<std::string(FaultBed&)> fault;     // what is done, for the table
  std::function<std::string(FaultBed&)> expected;  // "kind:name"
  std::function<absl::Status(FaultBed&)> inject;
  // Null: the product repairs it (a killed transport is restarted by its
  // daemon); the all-clear is then timed from the fault.
  std::function<absl::Status(FaultBed&)> repair;
  // After the culprit is named, keep the fault until this holds (bounded by
  // RowOptions::hold_bound), given the answer and how old the fault is: a
  // loss row waits until the recent part of the loss window holds only the
  // fault's segments, enough of them to compare with the injected rate.
  std::function<bool(const nlohmann::json&, absl::Duration)> held;
};

absl::Status Signal(pid_t pid, int sig, const std::string& what) {
  if (pid <= 0) return absl::FailedPreconditionError(absl::StrCat("no ", what, " to signal"));
  if (kill(pid, sig) != 0) {
    return absl::InternalError(absl::StrCat("kill(", what, " ", pid, ", ", sig, ") failed"));
  }
  return absl::OkStatus();
}

std::string NftInputTable(const std::string& rules) {
  return absl::StrCat(
      "add table inet gwfault\n"
      "add chain inet gwfault input { type filter hook input priority -10 ; policy accept ; }\n",
      rules);
}

// Random loss both ways on a host's bridge port: a bad NIC or cable (the
// host's own sends are lost on the wire; a drop in its output hook would
// fail the send at once instead).
absl::Status NicLoss(FaultBed& bed, int host, int percent) {
  NetnsCluster& c = bed.cluster();
  const std::string port = c.switch_port(host);
  return c.SwitchNft(host,
                     absl::StrCat("add table bridge gwfault\n",
                                  "add chain bridge gwfault forward { type filter hook forward "
                                  "priority -10 ; policy accept ; }\n",
                                  "add rule bridge gwfault forward iifname \"", port,
                                  "\" numgen random mod 100 < ", percent, " drop\n",
                                  "add rule bridge gwfault forward oifname \"", port,
                                  "\" numgen random mod 100 < ", percent, " drop\n"));
}

// A host firewall that lets in the daemon's ports (7601, 9601) and the
// answers of the peers' daemons to its own calls, and drops (or rejects with
// a TCP reset) every other port from 1024 up: the ephemeral ports its Gloo
// pairs listen and connect on. Stateless, so pairs already open break too.
absl::Status GlooPortFirewall(FaultBed& bed, int host, bool reject) {
  return bed.cluster().Nft(
      host,
      NftInputTable(absl::StrCat("add rule inet gwfault input tcp dport { 7601, 9601 } accept\n"
                                 "add rule inet gwfault input tcp sport { 7601, 9601 } accept\n",
                                 "add rule inet gwfault input tcp dport 1024-65535 ",
                                 reject ? "reject with tcp reset" : "drop", "\n")));
}

// The host with the lowest address: of a Gloo pair the lower address
// listens and the higher connects (gloo/transport/tcp/pair.cc), so every
// pair of this host has its listener there and a reject shows as `refused`
// at every peer.
int LowestAddressHost(FaultBed& bed) {
  int lowest = 0;
  for (int i = 1; i < bed.cluster().size(); ++i) {
    if (IpValue(bed.cluster().ip(i)) < IpValue(bed.cluster().ip(lowest))) lowest = i;
  }
  return lowest;
}

// The racks rows' victims, chosen so that no link goes down more than twice
// over the whole catalogue (three drops within 10 minutes is a flapping link,
// a present fault): the faults that break every link of a host hit four
// different hosts, and the partition is between the two others.
struct RacksVictims {
  int killed = 2;           // h3: node killed
  int frozen = 0;           // daemon frozen (no link goes down)
  int transport = 4;        // h5: transport killed
  int firewall_drop = 5;    // h6
  int firewall_reject = 0;  // the lowest address (h1 or h4)
  int partition_a = 1, partition_b = 3;
  int hog = 1;  // h2: the CPU hog
};

RacksVictims VictimsOf(FaultBed& bed) {
  RacksVictims v;
  v.firewall_reject = LowestAddressHost(bed);
  // {h1, h4} minus the reject's victim, with h2: the hosts no other row cuts off.
  const int other_first = v.firewall_reject == 0 ? 3 : 0;
  v.partition_a = std::min(1, other_first);
  v.partition_b = std::max(1, other_first);
  v.frozen = other_first;
  return v;
}

// Segments the lossy directions must carry over the recent part of the
// window for their loss ratio to be compared with the injected rate (the sd
// of a 5% ratio over 5,000 segments is 0.31 points, of 2% over the 25,000 a
// NIC's directions carry 0.09).
constexpr double kLossySegments = 5000;

std::function<bool(const nlohmann::json&, absl::Duration)> EnoughLossySegments(
    std::function<bool(const std::string&, const std::string&)> lossy) {
  return [lossy](const nlohmann::json& j, absl::Duration fault_age) {
    if (fault_age < kRecentLossWindow) return false;
    double sent = 0;
    ForEachRecentLossView(j, [&](const std::string& from, const std::string& to, double, double n) {
      if (lossy(from, to)) sent += n;
    });
    return sent > kLossySegments;
  };
}

std::vector<Row> RacksRows() {
  std::vector<Row> rows;
  rows.push_back(
      {"node_killed",
       [](FaultBed& b) {
         return absl::StrCat(b.cluster().name(VictimsOf(b).killed),
                             ": daemon and transport SIGKILLed");
       },
       [](FaultBed& b) { return absl::StrCat("node:", b.cluster().name(VictimsOf(b).killed)); },
       [](FaultBed& b) {
         const int v = VictimsOf(b).killed;
         const pid_t transport = b.TransportPid(v);
         if (absl::Status s = Signal(transport, SIGKILL, "transport"); !s.ok()) return s;
         return Signal(b.DaemonPid(v), SIGKILL, "daemon");
       },
       [](FaultBed& b) {
         b.cluster().Start(VictimsOf(b).killed);
         return absl::OkStatus();
       },
       nullptr});
  rows.push_back(
      {"daemon_frozen",
       [](FaultBed& b) {
         return absl::StrCat(b.cluster().name(VictimsOf(b).frozen),
                             ": daemon SIGSTOPped, its transport runs");
       },
       [](FaultBed& b) { return absl::StrCat("daemon:", b.cluster().name(VictimsOf(b).frozen)); },
       [](FaultBed& b) { return Signal(b.DaemonPid(VictimsOf(b).frozen), SIGSTOP, "daemon"); },
       [](FaultBed& b) { return Signal(b.DaemonPid(VictimsOf(b).frozen), SIGCONT, "daemon"); },
       nullptr});
  rows.push_back(
      {"transport_killed",
       [](FaultBed& b) {
         return absl::StrCat(b.cluster().name(VictimsOf(b).transport),
                             ": transport SIGKILLed (its daemon restarts it)");
       },
       [](FaultBed& b) { return absl::StrCat("node:", b.cluster().name(VictimsOf(b).transport)); },
       [](FaultBed& b) {
         return Signal(b.TransportPid(VictimsOf(b).transport), SIGKILL, "transport");
       },
       nullptr, nullptr});
  rows.push_back({"partition",
                  [](FaultBed& b) {
                    const RacksVictims v = VictimsOf(b);
                    return absl::StrCat(b.cluster().name(v.partition_a), " <-> ",
                                        b.cluster().name(v.partition_b),
                                        ": everything dropped both ways (input hooks)");
                  },
                  [](FaultBed& b) {
                    const RacksVictims v = VictimsOf(b);
                    return absl::StrCat("link:", b.cluster().name(v.partition_a), " <-> ",
                                        b.cluster().name(v.partition_b));
                  },
                  [](FaultBed& b) {
                    const RacksVictims v = VictimsOf(b);
                    return b.cluster().Partition(v.partition_a, v.partition_b);
                  },
                  [](FaultBed& b) {
                    const RacksVictims v = VictimsOf(b);
                    absl::Status s = b.cluster().ClearNft(v.partition_a);
                    if (!s.ok()) return s;
                    return b.cluster().ClearNft(v.partition_b);
                  },
                  nullptr});
  for (bool reject : {false, true}) {
    auto victim = [reject](FaultBed& b) {
      return reject ? VictimsOf(b).firewall_reject : VictimsOf(b).firewall_drop;
    };
    rows.push_back({reject ? "firewall_reject" : "firewall_drop",
                    [=](FaultBed& b) {
                      return absl::StrCat(b.cluster().name(victim(b)), ": firewall ",
                                          reject ? "rejects" : "drops",
                                          " its Gloo ports (1024-65535 but the daemon's)");
                    },
                    [=](FaultBed& b) { return absl::StrCat("node:", b.cluster().name(victim(b))); },
                    [=](FaultBed& b) { return GlooPortFirewall(b, victim(b), reject); },
                    [=](FaultBed& b) { return b.cluster().ClearNft(victim(b)); },
                    // Until every peer has tried again (the reject's
                    // `refused` shows on the reconnects, the first failure
                    // of a pair already open is a reset).
                    [=](const nlohmann::json& j, absl::Duration) {
                      if (!j.contains("suspects") || j["suspects"].empty()) return false;
                      const nlohmann::json& s = j["suspects"][0];
                      return s.value("fine_links", 1) == 0 && s.value("bad_links", 0) >= 4 &&
                             (!reject ||
                              absl::StrContains(s["evidence"].dump(), "(last: refused)"));
                    }});
  }
  rows.push_back({"cpu_hog",
                  [](FaultBed& b) {
                    return absl::StrCat(b.cluster().name(VictimsOf(b).hog),
                                        ": daemon and transport in a CPU cgroup at 5% of a core "
                                        "with 3 busy loops");
                  },
                  [](FaultBed& b) {
                    return absl::StrCat("overloaded_host:", b.cluster().name(VictimsOf(b).hog));
                  },
                  [](FaultBed& b) {
                    absl::StatusOr<std::unique_ptr<CpuHog>> hog =
                        CpuHog::Start(b.DaemonPid(VictimsOf(b).hog), 5, 3);
                    if (!hog.ok()) return hog.status();
                    b.row_state().hog = *std::move(hog);
                    return absl::OkStatus();
                  },
                  [](FaultBed& b) {
                    b.row_state().hog.reset();
                    return absl::OkStatus();
                  },
                  nullptr});
  // What h3 receives from h4 (another rack) loses 5%: that link alone.
  rows.push_back(
      {"link_loss", [](FaultBed&) { return std::string("h4 -> h3: 5% dropped (h3's input)"); },
       [](FaultBed&) { return std::string("link:h3 <-> h4"); },
       [](FaultBed& b) {
         return b.cluster().Nft(2, NftInputTable(absl::StrCat(
                                       "add rule inet gwfault input ip saddr ", b.cluster().ip(3),
                                       " numgen random mod 100 < 5 drop\n")));
       },
       [](FaultBed& b) { return b.cluster().ClearNft(2); },
       EnoughLossySegments(
           [](const std::string& a, const std::string& b) { return a == "h4" && b == "h3"; })});
  for (auto [name, host, percent] :
       {std::tuple{"nic_loss_5", 1, 5}, std::tuple{"nic_loss_2", 4, 2}}) {
    const std::string victim = BedHostName(host);
    rows.push_back({name,
                    [=](FaultBed&) {
                      return absl::StrCat(victim, ": ", percent,
                                          "% random loss both ways on its NIC");
                    },
                    [=](FaultBed&) { return absl::StrCat("node:", victim); },
                    [=](FaultBed& b) { return NicLoss(b, host, percent); },
                    [](FaultBed& b) { return b.cluster().ClearNetworkNft(); },
                    EnoughLossySegments([=](const std::string& a, const std::string& b) {
                      return a == victim || b == victim;
                    })});
  }
  rows.push_back(
      {"uplink_loss",
       [](FaultBed&) { return std::string("rack1's uplink: 5% random loss both ways"); },
       [](FaultBed&) { return std::string("group_uplink:rack1 <-> rack2"); },
       [](FaultBed& b) {
         const std::string port = b.cluster().router_port(0);
         return b.cluster().RouterNft(absl::StrCat(
             "add table inet gwfault\n",
             "add chain inet gwfault forward { type filter hook forward priority -10 ; policy "
             "accept ; }\n",
             "add rule inet gwfault forward iifname \"", port,
             "\" numgen random mod 100 < 5 drop\n", "add rule inet gwfault forward oifname \"",
             port, "\" numgen random mod 100 < 5 drop\n"));
       },
       [](FaultBed& b) { return b.cluster().ClearNetworkNft(); },
       // ... and until every link between the racks shows it: a link whose
       // window still holds mostly the clean segments from before the fault
       // counts as fine.
       [](const nlohmann::json& j, absl::Duration age) {
         const auto enough = EnoughLossySegments([](const std::string& a, const std::string& b) {
           return (a < "h4") != (b < "h4");  // h1-h3 are rack1
         });
         return enough(j, age) && j.contains("suspects") && !j["suspects"].empty() &&
                j["suspects"][0].value("fine_links", 1) == 0;
       }});
  return rows;
}

// --- answers -----------------------------------------------------------------

bool Healthy(const CliAnswer& a) {
  return a.json.value("verdict", "") == "healthy" && SuspectsOf(a.json).empty();
}

// The verdict, its suspects and, when not healthy, why (shortened).
std::string Brief(const CliAnswer& a) {
  const std::vector<std::string> s = SuspectsOf(a.json);
  std::string why;
  if (a.json.value("verdict", "") != "healthy") {
    why = absl::StrJoin(a.json.value("reasons", std::vector<std::string>()), "; ");
    if (why.size() > 160) why = why.substr(0, 157) + "...";
  }
  return absl::StrCat(a.json.value("verdict", "(no answer)"), s.empty() ? "" : " ",
                      absl::StrJoin(s, ", "), why.empty() ? "" : " [", why, why.empty() ? "" : "]");
}

class Poller {
 public:
  Poller(FaultBed& bed, const RowOptions& options, RowResult& result)
      : bed_(bed), options_(options), result_(result) {}

  // Asks until `done` (true) or `bound` passed (false), pausing between asks.
  bool Until(absl::Duration bound, const std::function<bool(const CliAnswer&)>& done) {
    const absl::Time deadline = absl::Now() + bound;
    while (true) {
      CliAnswer a = bed_.AskHealth();
      ++result_.answers;
      last_ = a;
      if (done(a)) return true;
      if (absl::Now() + options_.poll_pause > deadline) return false;
      absl::SleepFor(options_.poll_pause);
    }
  }
  const CliAnswer& last() const { return last_; }

 private:
  FaultBed& bed_;
  const RowOptions& options_;
  RowResult& result_;
  CliAnswer last_;
};

// What made an answer not healthy: its reasons, suspects and every problem
// its nodes and links list.
nlohmann::json WhyNotHealthy(const nlohmann::json& answer) {
  nlohmann::json why = {{"verdict", answer.value("verdict", "")},
                        {"reasons", answer.value("reasons", nlohmann::json::array())},
                        {"suspects", answer.value("suspects", nlohmann::json::array())}};
  for (const char* part : {"nodes", "links"}) {
    for (const nlohmann::json& x : answer.value(part, nlohmann::json::array())) {
      const nlohmann::json problems = x.value("problems", nlohmann::json::array());
      if (!problems.empty()) why["problems"].push_back(problems);
    }
  }
  return why;
}

// Records every suspect but `expected` as false blame (all of them when
// `expected` is empty), and the first suspect named.
void Judge(const CliAnswer& a, absl::Time fault, const std::string& expected, RowResult& r) {
  const std::vector<std::string> suspects = SuspectsOf(a.json);
  if (!suspects.empty() && r.first_suspect.empty()) r.first_suspect = suspects[0];
  for (const std::string& s : suspects) {
    if (s == expected) continue;
    const std::string blame = absl::StrCat(Seconds(SecondsSince(fault, a.asked)), ": ", s);
    if (r.false_blame.empty()) r.blamed = WhyNotHealthy(a.json);
    if (r.false_blame.size() < 50) r.false_blame.push_back(blame);
  }
}

void ForEachDirectionView(const nlohmann::json& j,
                          const std::function<void(const std::string&, const std::string&,
                                                   const nlohmann::json&)>& visit);
bool HasNumber(const nlohmann::json& v, const char* key);

// No direction's loss window (60 s) still holds loss at half the threshold
// (1%): a row that follows a loss row starts once the loss is out of the
// windows, so that its answers see its own fault alone (two faults within
// a minute on the same links add up in one window).
bool LossWindowsClean(const nlohmann::json& j) {
  bool clean = true;
  ForEachDirectionView(j, [&](const std::string&, const std::string&, const nlohmann::json& v) {
    clean =
        clean && !(HasNumber(v, "tcp_loss_ratio") && v["tcp_loss_ratio"].get<double>() >= 0.005);
  });
  return clean;
}

// Waits for a clean bed (Healthy; with `windows`, LossWindowsClean too),
// recording every suspect named meanwhile as baseline blame.
std::function<bool(const CliAnswer&)> CleanBed(RowResult& r, bool windows) {
  const absl::Time start = absl::Now();
  return [&r, start, windows](const CliAnswer& a) {
    for (const std::string& s : SuspectsOf(a.json)) {
      if (r.baseline_blame.size() < 50) {
        r.baseline_blame.push_back(absl::StrCat(Seconds(SecondsSince(start, a.asked)), ": ", s));
      }
    }
    return Healthy(a) && (!windows || LossWindowsClean(a.json));
  };
}

RowResult RunHealthy(FaultBed& bed, const RowOptions& options) {
  RowResult r;
  r.row = "healthy";
  r.fault = absl::StrCat("none, asked for ", absl::FormatDuration(options.healthy_duration));
  Poller poll(bed, options, r);
  // After the last row's all-clear, a loss window may still hold its loss
  // (a minute of it): that is the last minute, not history.
  if (!poll.Until(options.baseline_bound, CleanBed(r, /*windows=*/true))) {
    r.error = absl::StrCat("the bed never came clean: ", Brief(poll.last()));
    r.held = poll.last().json;
    return r;
  }
  const absl::Time start = absl::Now();
  poll.Until(options.healthy_duration, [&](const CliAnswer& a) {
    Judge(a, start, "", r);
    if (a.json.value("verdict", "") != "healthy") {
      if (r.blamed.is_null()) r.blamed = WhyNotHealthy(a.json);
      r.false_blame.push_back(absl::StrCat(Seconds(SecondsSince(start, a.asked)), ": verdict ",
                                           a.json.value("verdict", "(no answer)")));
    }
    r.held = a.json;
    return false;
  });
  bed.Log(absl::StrCat("healthy: ", r.answers, " answers, ", r.false_blame.size(),
                       " with a suspect or not healthy"));
  return r;
}

RowResult RunRacksRow(FaultBed& bed, const Row& row, const RowOptions& options) {
  RowResult r;
  r.row = row.name;
  r.fault = row.fault(bed);
  r.expected = row.expected(bed);
  Poller poll(bed, options, r);
  if (!poll.Until(options.baseline_bound, CleanBed(r, /*windows=*/true))) {
    r.error = absl::StrCat("the bed never came clean before the fault: ", Brief(poll.last()));
    return r;
  }
  bed.Log(absl::StrCat(row.name, ": ", r.fault, "; expecting ", r.expected));
  if (absl::Status s = row.inject(bed); !s.ok()) {
    r.error = absl::StrCat("inject: ", s.ToString());
    bed.Reset().IgnoreError();
    return r;
  }
  const absl::Time fault = absl::Now();
  const bool named = poll.Until(options.culprit_bound, [&](const CliAnswer& a) {
    Judge(a, fault, r.expected, r);
    const std::vector<std::string> s = SuspectsOf(a.json);
    bed.Log(absl::StrFormat("  +%s %s", Seconds(SecondsSince(fault, a.asked)), Brief(a)));
    if (s.empty() || s[0] != r.expected) return false;
    r.culprit_seconds = SecondsSince(fault, a.asked);
    r.culprit = a.json;
    return true;
  });
  r.held = poll.last().json;
  if (named && row.held && !row.held(r.held, poll.last().asked - fault)) {
    poll.Until(options.hold_bound, [&](const CliAnswer& a) {
      Judge(a, fault, r.expected, r);
      r.held = a.json;
      return row.held(a.json, a.asked - fault);
    });
  }
  if (named && row.repair && absl::Now() < fault + options.min_fault) {
    poll.Until(fault + options.min_fault - absl::Now(), [&](const CliAnswer& a) {
      Judge(a, fault, r.expected, r);
      r.held = a.json;
      return false;
    });
  }
  absl::Time repaired = fault;
  if (row.repair) {
    if (absl::Status s = row.repair(bed); !s.ok()) {
      r.error = absl::StrCat("repair: ", s.ToString());
      bed.Reset().IgnoreError();
      return r;
    }
    repaired = absl::Now();
  }
  const bool clear = poll.Until(options.all_clear_bound, [&](const CliAnswer& a) {
    Judge(a, fault, r.expected, r);
    bed.Log(
        absl::StrFormat("  repaired +%s %s", Seconds(SecondsSince(repaired, a.asked)), Brief(a)));
    if (!Healthy(a)) return false;
    r.all_clear_seconds = SecondsSince(repaired, a.asked);
    r.clear = a.json;
    return true;
  });
  if (!clear) {
    r.clear = poll.last().json;
    bed.Reset().IgnoreError();
  }
  bed.Log(absl::StrCat(row.name, ": culprit ",
                       r.culprit_seconds ? Seconds(*r.culprit_seconds) : "never", ", all-clear ",
                       r.all_clear_seconds ? Seconds(*r.all_clear_seconds) : "never",
                       ", first suspect ", r.first_suspect.empty() ? "none" : r.first_suspect,
                       ", false blame ", r.false_blame.size()));
  return r;
}

// --- job rows -----------------------------------------------------------------

bool JobRunning(const CliAnswer& job) {
  return job.json.value("verdict", "") == "running" && RankSuspectsOf(job.json).empty() &&
         job.json.contains("ranks") && job.json["ranks"].size() == kJobRanks;
}

RowResult RunJobRow(FaultBed& bed, const std::string& name, const RowOptions& options) {
  RowResult r;
  r.row = name;
  const bool stop = name == "rank_stopped";
  const int victim = stop ? 2 : 1;
  r.fault = absl::StrCat("rank ", victim, " (", bed.cluster().name(victim), ") ",
                         stop ? "SIGSTOPped" : "SIGKILLed");
  r.expected = absl::StrCat("rank ", victim, stop ? " (silent)" : " (gone)");
  // Healthy cluster, running job.
  const absl::Time baseline_deadline = absl::Now() + options.baseline_bound;
  CliAnswer health, job;
  while (true) {
    health = bed.AskHealth();
    job = bed.AskJob();
    r.answers += 2;
    if (Healthy(health) && JobRunning(job)) break;
    if (absl::Now() > baseline_deadline) {
      r.error = absl::StrCat("no clean bed with a running job before the fault: health ",
                             Brief(health), ", job ", job.json.value("verdict", "(no answer)"));
      return r;
    }
    absl::SleepFor(options.poll_pause);
  }
  bed.Log(absl::StrCat(name, ": ", r.fault, "; expecting ", r.expected));
  Process* rank = bed.rank(victim);
  if (rank == nullptr) {
    r.error = "no such rank";
    return r;
  }
  rank->Signal(stop ? SIGSTOP : SIGKILL);
  const absl::Time fault = absl::Now();
  auto ask_both = [&](const absl::Time since) {
    job = bed.AskJob();
    health = bed.AskHealth();
    r.answers += 2;
    Judge(health, fault, "", r);
    const std::string verdict = job.json.value("verdict", "(no answer)");
    if (r.job_verdicts.empty() || r.job_verdicts.back() != verdict)
      r.job_verdicts.push_back(verdict);
    bed.Log(absl::StrFormat("  +%s job %s %s; health %s", Seconds(SecondsSince(since, job.asked)),
                            verdict, absl::StrJoin(RankSuspectsOf(job.json), ", "), Brief(health)));
  };
  const absl::Time culprit_deadline = fault + options.culprit_bound;
  while (true) {
    ask_both(fault);
    const std::vector<std::string> ranks = RankSuspectsOf(job.json);
    if (!ranks.empty() && r.first_suspect.empty()) r.first_suspect = ranks[0];
    for (const std::string& s : ranks) {
      if (s != r.expected) {
        r.false_blame.push_back(absl::StrCat(Seconds(SecondsSince(fault, job.asked)), ": ", s));
      }
    }
    if (ranks == std::vector<std::string>{r.expected}) {
      r.culprit_seconds = SecondsSince(fault, job.asked);
      r.job_culprit = job.json;
      r.culprit = health.json;
      break;
    }
    if (absl::Now() > culprit_deadline) break;
    absl::SleepFor(options.poll_pause);
  }
  // Repair: the stopped rank goes on; a killed one cannot come back, so the
  // job is restarted under the same name (the torch start is in the figure).
  if (stop) {
    rank->Signal(SIGCONT);
  } else if (absl::Status s = bed.StartJob(); !s.ok()) {
    r.error = absl::StrCat("restarting the job: ", s.ToString());
    return r;
  }
  const absl::Time repaired = stop ? absl::Now() : fault;
  const absl::Time clear_deadline = absl::Now() + options.all_clear_bound;
  while (true) {
    ask_both(repaired);
    if (Healthy(health) && JobRunning(job)) {
      r.all_clear_seconds = SecondsSince(repaired, job.asked);
      r.clear = health.json;
      r.job_clear = job.json;
      break;
    }
    if (absl::Now() > clear_deadline) {
      r.clear = health.json;
      r.job_clear = job.json;
      break;
    }
    absl::SleepFor(options.poll_pause);
  }
  bed.Log(absl::StrCat(name, ": culprit ",
                       r.culprit_seconds ? Seconds(*r.culprit_seconds) : "never", ", all-clear ",
                       r.all_clear_seconds ? Seconds(*r.all_clear_seconds) : "never",
                       ", job verdicts ", absl::StrJoin(r.job_verdicts, " -> ")));
  return r;
}

}  // namespace

// --- free functions ------------------------------------------------------------

const char* CatalogueBedName(CatalogueBed bed) {
  return bed == CatalogueBed::kRacks ? "racks" : "job";
}

std::optional<CatalogueBed> CatalogueBedNamed(const std::string& name) {
  if (name == "racks") return CatalogueBed::kRacks;
  if (name == "job") return CatalogueBed::kJob;
  return std::nullopt;
}

std::vector<std::string> SuspectsOf(const nlohmann::json& health) {
  std::vector<std::string> out;
  if (!health.contains("suspects") || !health["suspects"].is_array()) return {"(no answer)"};
  for (const auto& s : health["suspects"]) {
    out.push_back(absl::StrCat(s.value("kind", "?"), ":", s.value("name", "?")));
  }
  return out;
}

std::vector<std::string> RankSuspectsOf(const nlohmann::json& job) {
  std::vector<std::string> out;
  if (!job.contains("suspects") || !job["suspects"].is_array()) return {};
  for (const auto& s : job["suspects"]) {
    out.push_back(absl::StrCat("rank ", s.value("rank", -1), " (", s.value("state", "?"), ")"));
  }
  return out;
}

namespace {

// Each direction of each link of `health -o json`, with its view.
void ForEachDirectionView(const nlohmann::json& j,
                          const std::function<void(const std::string&, const std::string&,
                                                   const nlohmann::json&)>& visit) {
  if (!j.contains("links") || !j["links"].is_array()) return;
  for (const auto& l : j["links"]) {
    for (const auto& [key, from, to] : {std::tuple{"a_to_b", l.value("a", ""), l.value("b", "")},
                                        std::tuple{"b_to_a", l.value("b", ""), l.value("a", "")}}) {
      if (l.contains(key) && !l[key].is_null()) visit(from, to, l[key]);
    }
  }
}

bool HasNumber(const nlohmann::json& v, const char* key) {
  return v.contains(key) && v[key].is_number();
}

}  // namespace

void ForEachLossView(
    const nlohmann::json& j,
    const std::function<void(const std::string&, const std::string&, double, double)>& visit) {
  ForEachDirectionView(j, [&](const std::string& from, const std::string& to,
                              const nlohmann::json& v) {
    if (!HasNumber(v, "tcp_loss_ratio") || !HasNumber(v, "tcp_window_sent_segments")) return;
    visit(from, to, v["tcp_loss_ratio"].get<double>(), v["tcp_window_sent_segments"].get<double>());
  });
}

void ForEachRecentLossView(
    const nlohmann::json& j,
    const std::function<void(const std::string&, const std::string&, double, double)>& visit) {
  ForEachDirectionView(j, [&](const std::string& from, const std::string& to,
                              const nlohmann::json& v) {
    if (!HasNumber(v, "tcp_recent_sent_segments") || !HasNumber(v, "tcp_recent_lost_segments")) {
      return;
    }
    const double sent = v["tcp_recent_sent_segments"].get<double>();
    const double lost = v["tcp_recent_lost_segments"].get<double>();
    visit(from, to, sent > 0 ? lost / sent : 0, sent);
  });
}

std::vector<std::string> CatalogueRows(CatalogueBed bed) {
  if (bed == CatalogueBed::kJob) return {"rank_stopped", "rank_killed"};
  std::vector<std::string> names;
  for (const Row& row : RacksRows()) names.push_back(row.name);
  names.push_back("healthy");  // last: history of every row before, never blamed
  return names;
}

RowResult RunRow(FaultBed& bed, const std::string& name, const RowOptions& options) {
  if (bed.kind() == CatalogueBed::kJob) {
    if (name == "rank_stopped" || name == "rank_killed") return RunJobRow(bed, name, options);
  } else if (name == "healthy") {
    return RunHealthy(bed, options);
  } else {
    for (const Row& row : RacksRows()) {
      if (row.name == name) return RunRacksRow(bed, row, options);
    }
  }
  RowResult r;
  r.row = name;
  r.error = absl::StrCat("no row ", name, " on the ", CatalogueBedName(bed.kind()), " bed");
  return r;
}

nlohmann::json ToJson(const RowResult& r) {
  nlohmann::json j;
  j["row"] = r.row;
  j["fault"] = r.fault;
  j["expected"] = r.expected;
  j["error"] = r.error;
  j["culprit_seconds"] = r.culprit_seconds ? nlohmann::json(*r.culprit_seconds) : nullptr;
  j["all_clear_seconds"] = r.all_clear_seconds ? nlohmann::json(*r.all_clear_seconds) : nullptr;
  j["first_suspect"] = r.first_suspect;
  j["false_blame"] = r.false_blame;
  j["baseline_blame"] = r.baseline_blame;
  j["job_verdicts"] = r.job_verdicts;
  j["answers"] = r.answers;
  j["culprit"] = r.culprit;
  j["held"] = r.held;
  j["blamed"] = r.blamed;
  j["clear"] = r.clear;
  j["job_culprit"] = r.job_culprit;
  j["job_clear"] = r.job_clear;
  return j;
}

RowResult RowResultFromJson(const nlohmann::json& j) {
  RowResult r;
  r.row = j.value("row", "");
  r.fault = j.value("fault", "");
  r.expected = j.value("expected", "");
  r.error = j.value("error", "");
  if (j.contains("culprit_seconds") && j["culprit_seconds"].is_number()) {
    r.culprit_seconds = j["culprit_seconds"].get<double>();
  }
  if (j.contains("all_clear_seconds") && j["all_clear_seconds"].is_number()) {
    r.all_clear_seconds = j["all_clear_seconds"].get<double>();
  }
  r.first_suspect = j.value("first_suspect", "");
  if (j.contains("false_blame")) r.false_blame = j["false_blame"].get<std::vector<std::string>>();
  if (j.contains("baseline_blame")) {
    r.baseline_blame = j["baseline_blame"].get<std::vector<std::string>>();
  }
  if (j.contains("job_verdicts"))
    r.job_verdicts = j["job_verdicts"].get<std::vector<std::string>>();
  r.answers = j.value("answers", 0);
  for (auto [key, field] :
       {std::pair{"culprit", &r.culprit}, std::pair{"held", &r.held},
        std::pair{"blamed", &r.blamed}, std::pair{"clear", &r.clear},
        std::pair{"job_culprit", &r.job_culprit}, std::pair{"job_clear", &r.job_clear}}) {
    if (j.contains(key)) *field = j[key];
  }
  return r;
}

// --- FaultBed ----------------------------------------------------------------------

FaultBed::FaultBed(CatalogueBed kind, CatalogueSchedule schedule, CatalogueLog log)
    : kind_(kind),
      schedule_(schedule),
      log_(std::move(log)),
      row_state_(std::make_unique<RowState>()) {}

FaultBed::~FaultBed() {
  row_state_.reset();
  ranks_.clear();  // SIGKILLs what still runs (a stopped rank too)
  cluster_.reset();
}

void FaultBed::Log(const std::string& line) const {
  if (log_) log_(line);
}

CatalogueLog FaultBed::SwapLog(CatalogueLog log) {
  std::swap(log, log_);
  return log;
}

absl::StatusOr<std::unique_ptr<FaultBed>> FaultBed::Create(CatalogueBed kind,
                                                           CatalogueSchedule schedule,
                                                           CatalogueLog log) {
  auto bed = std::unique_ptr<FaultBed>(new FaultBed(kind, schedule, std::move(log)));
  const bool fast = schedule == CatalogueSchedule::kFast;
  NetnsClusterOptions options;
  if (kind == CatalogueBed::kRacks) {
    options.hosts = kRacksHosts;
    options.racks = 2;
    options.gloo_yaml = fast ? kRacksFastGloo : kDefaultGloo;
    options.extra_yaml = absl::StrCat(fast ? kRacksFastSchedule : "", kBedThresholds);
  } else {
    options.hosts = kJobRanks;
    // The job tests' schedule (NetnsClusterOptions' defaults), or the shipped one.
    if (!fast) {
      options.gloo_yaml = kDefaultGloo;
      options.extra_yaml = "";
    }
    options.extra_yaml += kBedThresholds;
  }
  bed->cluster_ = std::make_unique<NetnsCluster>(options);
  if (absl::Status s = bed->cluster_->Setup(); !s.ok()) return s;
  if (kind == CatalogueBed::kRacks) {
    for (int i = 0; i < options.hosts; ++i) {
      // One segment per packet (as in netns_tcp_loss): a veth hands a whole
      // 64 KiB GSO packet on, and one drop would lose some 45 segments.
      CommandResult gso =
          bed->cluster_->Exec(i, {"ip", "link", "set", "eth0", "gso_max_segs", "1"});
      if (!gso.ok()) return absl::InternalError(absl::StrCat("gso_max_segs: ", gso.output));
    }
  }
  bed->cluster_->StartAll();
  if (absl::Status s = bed->cluster_->WaitAllUp(absl::Seconds(90), /*measured=*/false); !s.ok()) {
    return s;
  }
  bed->Log(absl::StrCat(CatalogueBedName(kind), " bed up: ", options.hosts, " hosts, ",
                        fast ? "the tests' schedule" : "the default schedule", " (",
                        bed->cluster_->dir().path(), ")"));
  if (kind == CatalogueBed::kJob) {
    if (absl::Status s = bed->StartJob(); !s.ok()) return s;
  }
  return bed;
}

CliAnswer FaultBed::Cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {BinaryPath("client/gloowatch")};
  argv.insert(argv.end(), args.begin(), args.end());
  CliAnswer a;
  a.asked = absl::Now();
  CommandResult r = cluster_->Exec(0, argv, absl::Seconds(30));
  a.took_seconds = absl::ToDoubleSeconds(absl::Now() - a.asked);
  a.exit_code = r.exit_code;
  a.output = r.output;
  a.json = ParseJson(r.output);
  return a;
}

CliAnswer FaultBed::AskHealth() const {
  std::vector<std::string> daemons;
  for (int i = 0; i < cluster_->size(); ++i) daemons.push_back(cluster_->grpc(i));
  // The default deadline (3 s): a daemon that does not answer costs every
  // answer that long.
  return Cli({"health", "--daemons", absl::StrJoin(daemons, ","), "--json"});
}

CliAnswer FaultBed::AskJob() const {
  std::vector<std::string> daemons;
  for (int i = 0; i < cluster_->size(); ++i) daemons.push_back(cluster_->grpc(i));
  return Cli({"job", kJob, "--daemons", absl::StrJoin(daemons, ","), "--json"});
}

pid_t FaultBed::DaemonPid(int host) {
  Process* p = cluster_->daemon(host);
  return p != nullptr && p->running() ? p->pid() : -1;
}

pid_t FaultBed::TransportPid(int host) {
  const pid_t daemon = DaemonPid(host);
  return daemon > 0 ? ChildPid(daemon) : -1;
}

absl::Status FaultBed::StartJob() {
  if (kind_ != CatalogueBed::kJob) return absl::FailedPreconditionError("not the job bed");
  ranks_.clear();
  const bool fast = schedule_ == CatalogueSchedule::kFast;
  ++job_starts_;
  for (int i = 0; i < kJobRanks; ++i) {
    std::map<std::string, std::string> env = {
        {"RANK", absl::StrCat(i)},
        {"WORLD_SIZE", absl::StrCat(kJobRanks)},
        {"LOCAL_RANK", "0"},
        {"MASTER_ADDR", cluster_->ip(0)},
        // A new port per start: the old job's store may linger in TIME_WAIT.
        {"MASTER_PORT", absl::StrCat(29500 + job_starts_)},
        {"GLOO_SOCKET_IFNAME", "eth0"},
        {"GLOOWATCH_JOB", kJob},
        {"GLOOWATCH_DAEMON", cluster_->grpc(i)},
        {"PG_TIMEOUT", "60"},
        {"DURATION", "3600"},
        {"LINGER", "60"},
        {"OMP_NUM_THREADS", "1"},
        {"PYTHONUNBUFFERED", "1"},
    };
    // The reporter's own flush interval (0.5 s) at the default schedule.
    if (fast) env["GLOOWATCH_FLUSH_INTERVAL"] = "0.2";
    ranks_.push_back(std::make_unique<Process>(
        std::vector<std::string>{"ip", "netns", "exec", cluster_->ns(i), kPython,
                                 SourcePath("client/reporter/gloowatch_report.py"), "run",
                                 SourcePath("tests/client/torch/netns_job.py")},
        absl::StrCat(cluster_->dir().path(), "/rank", i, "-", job_starts_, ".log"), env));
  }
  // Every rank reports and made 20 calls, nobody waits.
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  CliAnswer job;
  while (absl::Now() < deadline) {
    job = AskJob();
    if (JobRunning(job)) {
      int min_seq = 1 << 30;
      for (const auto& x : job.json["ranks"]) min_seq = std::min(min_seq, x.value("seq", 0));
      if (min_seq >= 20) {
        Log(absl::StrCat("job ", kJob, " running (start ", job_starts_, ")"));
        return absl::OkStatus();
      }
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("the job did not run within 120 s: ", job.output));
}

absl::Status FaultBed::Reset() {
  row_state_->hog.reset();
  for (auto& rank : ranks_) {
    if (rank) rank->Signal(SIGCONT);
  }
  absl::Status status;
  for (int i = 0; i < cluster_->size(); ++i) {
    if (absl::Status s = cluster_->ClearNft(i); !s.ok()) status.Update(s);
    cluster_->Unshape(i).IgnoreError();
    const pid_t daemon = DaemonPid(i);
    if (daemon > 0) {
      kill(daemon, SIGCONT);
    } else {
      Log(absl::StrCat("reset: restarting ", cluster_->name(i), "'s daemon"));
      cluster_->Start(i);
    }
  }
  if (absl::Status s = cluster_->ClearNetworkNft(); !s.ok()) status.Update(s);
  return status;
}

std::string FaultBed::AllLogs() const {
  std::string out = cluster_->AllLogs();
  for (size_t i = 0; i < ranks_.size(); ++i) {
    absl::StrAppend(&out, "---- rank ", i, " ----\n", ranks_[i]->Log());
  }
  return out;
}

}  // namespace gloowatch::testing
