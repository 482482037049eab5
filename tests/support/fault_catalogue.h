// Test support: the fault catalogue (issue 27; docs/testing.md, "The fault
// catalogue"; docs/performance.md, "Fault catalogue"). Two beds of namespace
// hosts, each shared by its rows:
//  - racks: the two-rack bed of netns_racks_test (h1-h3 in rack1, h4-h6 in
//    rack2, a router between them), `gso_max_segs 1` on every eth0;
//  - job: three hosts with a real torch.distributed Gloo job, one rank each
//    (tests/client/torch/netns_job.py under `gloowatch_report.py run`).
// A row injects one fault, asks the real `gloowatch health --json` (and for
// job rows `gloowatch job --json`) inside h1's namespace every second or two
// until the right first suspect is named, repairs the fault and asks until
// the cluster is healthy with no suspect. What it measures: time to culprit
// (fault -> right first suspect) and time to all-clear (repair -> healthy,
// no suspect), and every other suspect named meanwhile (false blame).
//
// The tests (tests/netns/netns_catalogue_test.cc) run the rows on a bed kept
// by a small supervisor process (tests/netns/fault_bed_main.cc) and assert
// on the RowResult with bounded waits; bench/fault_catalogue_bench runs them
// at the default schedule and prints the figures.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"
#include "tests/support/netns_cluster.h"

namespace gloowatch::testing {

enum class CatalogueBed { kRacks, kJob };
const char* CatalogueBedName(CatalogueBed bed);  // "racks", "job"
std::optional<CatalogueBed> CatalogueBedNamed(const std::string& name);

// kFast: the tests' schedule (latency probes every 500 ms, bandwidth probes
// every 3 s; short backoff), as the racks and job tests always ran.
// kDefault: the daemon's schedule as shipped (no interval, timeout, backoff
// or probe size set). Both set the thresholds a veth bed needs (a veth claims
// 10 Gb/s; 12 processes on 2 cores take milliseconds for a round trip).
enum class CatalogueSchedule { kFast, kDefault };

using CatalogueLog = std::function<void(const std::string&)>;

// One answer of the real CLI, run inside h1's namespace.
struct CliAnswer {
  absl::Time asked;  // when the CLI started: it asks every daemon at once
  double took_seconds = 0;
  int exit_code = -1;
  std::string output;
  nlohmann::json json;  // an empty object when the output is not JSON
};

// Every suspect of a health answer, "kind:name", most likely first.
std::vector<std::string> SuspectsOf(const nlohmann::json& health);
// A job answer's rank suspects, "rank N (state)".
std::vector<std::string> RankSuspectsOf(const nlohmann::json& job);

// Calls `visit(from, to, loss ratio, segments)` for every direction of a
// health answer whose TCP loss window has figures.
void ForEachLossView(
    const nlohmann::json& health,
    const std::function<void(const std::string&, const std::string&, double, double)>& visit);
// The same over the recent part of the window (the last 30 s:
// `tcp_recent_lost_segments` of `tcp_recent_sent_segments`): what a fault
// older than that shows without the clean segments from before it.
void ForEachRecentLossView(
    const nlohmann::json& health,
    const std::function<void(const std::string&, const std::string&, double, double)>& visit);

// A fault must be this old before the recent part of the loss window holds
// only its segments: the recent part is 30 s of TCP reads, and a read holds
// what its connection sent since the one before, up to 10 s earlier (a
// flow's or the bulk pair's read when overdue: a transfer from before the
// fault, read after it, once diluted 5% to 3.4%); a margin for the answer.
inline constexpr absl::Duration kRecentLossWindow = absl::Seconds(42);

class FaultBed {
 public:
  static constexpr char kJob[] = "netjob";

  // Builds the bed, starts every daemon (and the job), waits until every
  // link is up (and the job runs).
  static absl::StatusOr<std::unique_ptr<FaultBed>> Create(CatalogueBed bed,
                                                          CatalogueSchedule schedule,
                                                          CatalogueLog log);
  ~FaultBed();

  CatalogueBed kind() const { return kind_; }
  CatalogueSchedule schedule() const { return schedule_; }
  NetnsCluster& cluster() { return *cluster_; }
  void Log(const std::string& line) const;
  // Where Log writes from now on; the previous sink.
  CatalogueLog SwapLog(CatalogueLog log);

  // `gloowatch health --json` and `gloowatch job netjob --json` over every
  // daemon, inside h1's namespace.
  CliAnswer AskHealth() const;
  CliAnswer AskJob() const;

  pid_t DaemonPid(int host);
  // The daemon's transport child, or -1 (restarting).
  pid_t TransportPid(int host);

  // Job bed: (re)starts every rank (the old ones are killed first), and
  // waits until each reported 20 calls and the job view says running.
  absl::Status StartJob();
  Process* rank(int r) { return r < static_cast<int>(ranks_.size()) ? ranks_[r].get() : nullptr; }

  // Undoes whatever a row may have left: nft tables, shaping, a stopped or
  // dead daemon, a stopped rank, the CPU hog.
  absl::Status Reset();

  // Logs of every daemon (and rank), for a failure message.
  std::string AllLogs() const;

  // Rows keep state here between inject and repair (a CPU hog, a pid).
  struct RowState;
  RowState& row_state() { return *row_state_; }

 private:
  FaultBed(CatalogueBed kind, CatalogueSchedule schedule, CatalogueLog log);
  CliAnswer Cli(const std::vector<std::string>& args) const;

  const CatalogueBed kind_;
  const CatalogueSchedule schedule_;
  CatalogueLog log_;
  std::unique_ptr<NetnsCluster> cluster_;
  std::vector<std::unique_ptr<Process>> ranks_;
  int job_starts_ = 0;
  std::unique_ptr<RowState> row_state_;
};

struct RowOptions {
  // Between the end of one answer and the next question.
  absl::Duration poll_pause = absl::Seconds(1);
  // How long a row waits for a clean bed (healthy, no suspect) before its
  // fault, for the right first suspect, for its evidence to hold after it
  // (loss rows: enough segments to compare the loss ratio), for the
  // all-clear.
  absl::Duration baseline_bound = absl::Seconds(90);
  absl::Duration culprit_bound = absl::Seconds(90);
  absl::Duration hold_bound = absl::Seconds(60);
  absl::Duration all_clear_bound = absl::Seconds(120);
  // Each fault lasts at least this long (asking all the while), so that
  // what grows with a fault's length (the peers' reconnect backoff, up to
  // probe.backoff_max) shows in the all-clear.
  absl::Duration min_fault = absl::ZeroDuration();
  // The healthy row asks this long.
  absl::Duration healthy_duration = absl::Minutes(3);
};

struct RowResult {
  std::string row;
  std::string fault;     // what was done, for the table
  std::string expected;  // the right first suspect ("node:h2"; job rows "rank 2 (silent)")
  // Why the row could not run as meant (a fault that could not be injected,
  // a bed that never came clean); empty when it ran.
  std::string error;
  // Seconds from the fault to the first answer whose first suspect was the
  // right one, and from the repair to the first healthy answer without a
  // suspect. Absent when it never came within the bound.
  std::optional<double> culprit_seconds, all_clear_seconds;
  std::string first_suspect;  // the first suspect named after the fault; "" if none
  // Every answer between the fault and the all-clear that named someone
  // else (or, for the healthy row, anyone; for job rows, any cluster suspect):
  // "12.3 s: link:h1 <-> h2".
  std::vector<std::string> false_blame;
  // Every suspect named while the row waited for a clean bed before its
  // fault: after the previous row's all-clear nothing is injected, so any
  // suspect there is false blame too ("3.0 s: link:h1 <-> h2").
  std::vector<std::string> baseline_blame;
  // Job rows: every job verdict seen after the fault, in order, without
  // repeats ("running", "hung", "degraded").
  std::vector<std::string> job_verdicts;
  int answers = 0;
  // The answers that named the culprit, that came last before the repair,
  // that first blamed someone else (its suspects' evidence says why), and
  // that gave the all-clear (health; job rows also the job view).
  nlohmann::json culprit, held, blamed, clear, job_culprit, job_clear;
};

nlohmann::json ToJson(const RowResult& r);
RowResult RowResultFromJson(const nlohmann::json& j);

// The rows of a bed, in the order they run on one bed.
std::vector<std::string> CatalogueRows(CatalogueBed bed);

// Runs one row on the bed: waits for a clean bed, injects, measures, repairs.
// Never throws; what went wrong is in RowResult::error.
RowResult RunRow(FaultBed& bed, const std::string& row, const RowOptions& options);

}  // namespace gloowatch::testing
