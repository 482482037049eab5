// Step/communication timing reported by local training processes
// (Status.ReportStep), kept per (job, rank) series for GetStatus and metrics.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "daemon/training/job_sockets.h"
#include "daemon/training/rank_process.h"
#include "proto/gloowatch.pb.h"

namespace gloowatch {

class TrainingReports {
 public:
  using Key = std::pair<std::string, int>;  // (job, rank)

  // `window`: communication_share covers reports received within it.
  // `evict_after`: when all max_series slots are taken, a new series takes
  // the slot of the one silent longest, if silent at least this long, so
  // one-off series (a flood) cannot lock live jobs out until they expire.
  // `sockets` (may be null): where Snapshot finds the figures of the
  // sockets the ranks list.
  TrainingReports(const Clock* clock, absl::Duration expiry, size_t max_series,
                  absl::Duration window = absl::Minutes(5),
                  absl::Duration evict_after = absl::Minutes(1),
                  const JobSockets* sockets = nullptr);

  // INVALID_ARGUMENT for a bad request, RESOURCE_EXHAUSTED when a new series
  // would exceed max_series and none is silent enough to evict; `evicted`
  // (optional) gets the key of an evicted series. Thread-safe.
  // A remote `client` ("" = a process on this host) may hold a quarter of
  // max_series at most (RESOURCE_EXHAUSTED naming it beyond).
  absl::Status Report(const v1::ReportStepRequest& request, std::optional<Key>* evicted = nullptr,
                      const std::string& client = "");

  // Where a rank stands in its collectives (a heartbeat too: it keeps the
  // series alive). Same validation and cap as Report. Thread-safe. The
  // report's pid is kept only from a process on this host that this daemon
  // sees in /proc (same PID namespace), so that Snapshot can say whether a
  // silent rank is stopped or gone; so is its list of sockets (at most
  // kMaxSockets), which replaces the one before.
  absl::Status ReportCollective(const v1::CollectiveReport& report,
                                std::optional<Key>* evicted = nullptr,
                                const std::string& client = "");

  // One entry per live series, sorted by (job, rank); `process` read from
  // /proc now, `sockets` from the JobSockets' last read (left out without
  // `with_sockets`: the gauges need none, and a large job has thousands). A
  // rank whose process is gone is in no collective any more: its
  // `collective` ends and the call it was inside moves to `died_inside`.
  std::vector<v1::TrainingJobStatus> Snapshot(bool with_sockets = true) const;

  // The sockets the ranks whose process this daemon sees have listed, for
  // JobSockets::Read.
  std::unordered_map<uint64_t, JobSockets::Wanted> WantedSockets() const;

  // Drops series without a report for `expiry`; returns their keys so the
  // metrics exporter can remove its label sets.
  std::vector<Key> Expire();

  static constexpr double kMaxStepSeconds = 86400;
  static constexpr size_t kMaxSamplesPerSeries = 4096;
  static constexpr size_t kMaxSockets = 4096;

 private:
  struct Sample {
    absl::Time at;
    double step_seconds;
    double communication_seconds;
  };
  struct Series {
    uint64_t steps = 0;
    double step_seconds_total = 0;
    double communication_seconds_total = 0;
    absl::Time last_report;
    std::deque<Sample> recent;  // within window_, oldest first, bounded
    std::optional<v1::CollectiveState> collective;
    std::string client;       // who added it ("" = this host)
    absl::Time inside_since;  // when it entered collective->op
    // The rank's process, when it reported one that this daemon could see.
    RankProcess process;
    // Its sockets (inodes) and store port, kept with `process` only.
    std::vector<uint64_t> socket_inodes;
    uint32_t store_port = 0;
  };
  // The series of `key`, added if the cap (or an eviction) allows.
  absl::StatusOr<Series*> FindOrAddLocked(const Key& key, absl::Time now,
                                          std::optional<Key>* evicted, const std::string& client)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void PruneLocked(Series& s, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Snapshot without `process` and `sockets`, and for each entry its
  // process and sockets to read and how long it had been inside its call at
  // its last report.
  struct Pending {
    RankProcess process;
    std::vector<uint64_t> socket_inodes;
    double inside_at_last_report = 0;
  };
  std::vector<v1::TrainingJobStatus> SnapshotWithoutProcess(std::vector<Pending>& pending) const
      ABSL_LOCKS_EXCLUDED(mu_);

  const Clock* clock_;
  const absl::Duration expiry_;
  const size_t max_series_;
  const absl::Duration window_;
  const absl::Duration evict_after_;
  const JobSockets* const sockets_;
  mutable absl::Mutex mu_;
  mutable std::map<Key, Series> series_ ABSL_GUARDED_BY(mu_);
};

// The jobs of `ranks` (a Snapshot: sorted by job), one summary each: which
// ranks report here, whether the job runs, is stopped or has ended, and how.
std::vector<v1::TrainingJobSummary> SummarizeTrainingJobs(
    const std::vector<v1::TrainingJobStatus>& ranks);

}  // namespace gloowatch
