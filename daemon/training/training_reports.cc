#include "daemon/training/training_reports.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/proto_time.h"

namespace gloowatch {
namespace {

// Job (and op, group) names become Prometheus label values and log text:
// keep them tame.
absl::Status ValidateName(const char* field, const std::string& value, bool required) {
  if (value.empty()) {
    return required ? absl::InvalidArgumentError(absl::StrCat(field, ": must not be empty"))
                    : absl::OkStatus();
  }
  if (value.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value.size(), " characters, at most 64"));
  }
  for (char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: character 0x%02x not allowed (use [A-Za-z0-9_.:-])", field,
                          static_cast<unsigned char>(c)));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateJob(const std::string& job) { return ValidateName("job", job, true); }

}  // namespace

TrainingReports::TrainingReports(const Clock* clock, absl::Duration expiry, size_t max_series,
                                 absl::Duration window, absl::Duration evict_after,
                                 const JobSockets* sockets)
    : clock_(clock),
      expiry_(expiry),
      max_series_(max_series),
      window_(window),
      evict_after_(evict_after),
      sockets_(sockets) {}

absl::Status TrainingReports::Report(const v1::ReportStepRequest& r, std::optional<Key>* evicted,
                                     const std::string& client) {
  if (absl::Status s = ValidateJob(r.job()); !s.ok()) return s;
  if (r.rank() < 0) return absl::InvalidArgumentError(absl::StrCat("rank: ", r.rank(), " < 0"));
  if (r.has_local_rank() && r.local_rank() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("local_rank: ", r.local_rank(), " < 0"));
  }
  if (r.has_world_size()) {
    if (r.world_size() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("world_size: ", r.world_size(), " < 1"));
    }
    if (r.rank() >= r.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank: ", r.rank(), " >= world_size ", r.world_size()));
    }
    if (r.has_local_rank() && r.local_rank() >= r.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("local_rank: ", r.local_rank(), " >= world_size ", r.world_size()));
    }
  }
  const double step = r.step_seconds(), comm = r.communication_seconds();
  if (!std::isfinite(step) || step <= 0 || step > kMaxStepSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("step_seconds: ", step, " not in (0, ", kMaxStepSeconds, "]"));
  }
  if (!std::isfinite(comm) || comm < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("communication_seconds: ", comm, " < 0 or not finite"));
  }
  if (comm > step) {
    return absl::InvalidArgumentError(
        absl::StrCat("communication_seconds: ", comm, " > step_seconds ", step));
  }
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> found = FindOrAddLocked(Key(r.job(), r.rank()), now, evicted, client);
  if (!found.ok()) return found.status();
  Series& s = **found;
  ++s.steps;
  s.step_seconds_total += step;
  s.communication_seconds_total += comm;
  s.last_report = now;
  s.recent.push_back({now, step, comm});
  if (s.recent.size() > kMaxSamplesPerSeries) s.recent.pop_front();
  PruneLocked(s, now);
  return absl::OkStatus();
}

absl::StatusOr<TrainingReports::Series*> TrainingReports::FindOrAddLocked(
    const Key& key, absl::Time now, std::optional<Key>* evicted, const std::string& client) {
  auto it = series_.find(key);
  if (it != series_.end()) return &it->second;
  if (!client.empty()) {
    const size_t share = std::max<size_t>(1, max_series_ / 4);
    const size_t held = std::count_if(series_.begin(), series_.end(),
                                      [&](const auto& s) { return s.second.client == client; });
    if (held >= share) {
      return absl::ResourceExhaustedError(absl::StrCat("client ", client, " already has ", held,
                                                       " of the ", max_series_,
                                                       " (job, rank) series, its share"));
    }
  }
  if (series_.size() >= max_series_) {
    auto oldest = std::min_element(
        series_.begin(), series_.end(),
        [](const auto& a, const auto& b) { return a.second.last_report < b.second.last_report; });
    if (oldest == series_.end() || now - oldest->second.last_report < evict_after_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("already ", series_.size(),
                       " (job, rank) series, the maximum, all reporting; one "
                       "silent for ",
                       absl::FormatDuration(evict_after_), " gives its place up"));
    }
    if (evicted != nullptr) *evicted = oldest->first;
    series_.erase(oldest);
  }
  Series& added = series_.emplace(key, Series{}).first->second;
  added.client = client;
  return &added;
}

absl::Status TrainingReports::ReportCollective(const v1::CollectiveReport& r,
                                               std::optional<Key>* evicted,
                                               const std::string& client) {
  if (absl::Status s = ValidateJob(r.job()); !s.ok()) return s;
  if (r.rank() < 0) return absl::InvalidArgumentError(absl::StrCat("rank: ", r.rank(), " < 0"));
  const v1::CollectiveState& c = r.state();
  if (absl::Status s = ValidateName("op", c.op(), false); !s.ok()) return s;
  if (absl::Status s = ValidateName("group", c.group(), false); !s.ok()) return s;
  const double inside = c.inside_seconds();
  if (!std::isfinite(inside) || inside < 0 || inside > kMaxStepSeconds) {
    return absl::InvalidArgumentError(
        absl::StrCat("inside_seconds: ", inside, " not in [0, ", kMaxStepSeconds, "]"));
  }
  if (c.op().empty() && inside > 0) {
    return absl::InvalidArgumentError("inside_seconds: > 0 but no op (not inside a collective)");
  }
  if (r.has_sockets() && static_cast<size_t>(r.sockets().inodes_size()) > kMaxSockets) {
    return absl::InvalidArgumentError(
        absl::StrCat("sockets: ", r.sockets().inodes_size(), " inodes, at most ", kMaxSockets));
  }
  if (r.store_port() > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("store_port: ", r.store_port(), " > 65535"));
  }
  // A process that is reporting runs: if /proc does not show it so, the pid
  // means nothing here (another PID namespace, a remote reporter).
  RankProcess process;
  if (client.empty() && r.pid() != 0) {
    const RankProcess reported{r.pid(), r.start_time_ticks()};
    if (RankProcessStateOf(reported) == RankProcessState::kRunning) process = reported;
  }
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> found = FindOrAddLocked(Key(r.job(), r.rank()), now, evicted, client);
  if (!found.ok()) return found.status();
  Series& s = **found;
  s.collective = c;
  s.process = process;
  // A socket inode means something only on this host, to a process we see.
  if (process.pid == 0) {
    s.socket_inodes.clear();
    s.store_port = 0;
  } else if (r.has_sockets()) {
    s.socket_inodes.assign(r.sockets().inodes().begin(), r.sockets().inodes().end());
    s.store_port = r.store_port();
  }
  s.inside_since = now - absl::Seconds(inside);
  s.last_report = now;
  return absl::OkStatus();
}

void TrainingReports::PruneLocked(Series& s, absl::Time now) const {
  while (!s.recent.empty() && s.recent.front().at < now - window_) s.recent.pop_front();
}

std::vector<v1::TrainingJobStatus> TrainingReports::Snapshot(bool with_sockets) const {
  std::vector<Pending> pending;
  std::vector<v1::TrainingJobStatus> out = SnapshotWithoutProcess(pending);
  // /proc and the sockets are read outside the lock: reports need not wait.
  for (size_t i = 0; i < out.size(); ++i) {
    const RankProcessState state = RankProcessStateOf(pending[i].process);
    v1::TrainingJobStatus& t = out[i];
    t.set_process(RankProcessStateName(state));
    if (sockets_ != nullptr && with_sockets) {
      for (uint64_t inode : pending[i].socket_inodes) {
        if (std::optional<v1::JobSocket> socket = sockets_->Find(inode)) {
          *t.add_sockets() = *std::move(socket);
        }
      }
      std::sort(t.mutable_sockets()->begin(), t.mutable_sockets()->end(),
                [](const v1::JobSocket& a, const v1::JobSocket& b) {
                  return std::tie(a.kind(), a.remote(), a.local()) <
                         std::tie(b.kind(), b.remote(), b.local());
                });
    }
    if (state != RankProcessState::kGone || !t.has_collective()) continue;
    // No process, no call: what it was inside (it never left: killed or
    // crashed there) is kept apart, and the rank counts as between calls.
    v1::CollectiveState* collective = t.mutable_collective();
    if (!collective->op().empty()) {
      *t.mutable_died_inside() = *collective;
      t.mutable_died_inside()->set_inside_seconds(pending[i].inside_at_last_report);
    }
    collective->clear_op();
    collective->set_inside_seconds(0);
  }
  return out;
}

std::unordered_map<uint64_t, JobSockets::Wanted> TrainingReports::WantedSockets() const {
  absl::MutexLock lock(&mu_);
  std::unordered_map<uint64_t, JobSockets::Wanted> wanted;
  for (const auto& [key, s] : series_) {
    for (uint64_t inode : s.socket_inodes) wanted[inode].store_port = s.store_port;
  }
  return wanted;
}

std::vector<v1::TrainingJobStatus> TrainingReports::SnapshotWithoutProcess(
    std::vector<Pending>& pending) const {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  std::vector<v1::TrainingJobStatus> out;
  for (auto& [key, s] : series_) {
    Pending& p = pending.emplace_back();
    p.process = s.process;
    p.socket_inodes = s.socket_inodes;
    if (s.collective && !s.collective->op().empty()) {
      p.inside_at_last_report =
          std::max(0.0, absl::ToDoubleSeconds(s.last_report - s.inside_since));
    }
    PruneLocked(s, now);
    v1::TrainingJobStatus j;
    j.set_job(key.first);
    j.set_rank(key.second);
    j.set_steps(s.steps);
    j.set_step_seconds_total(s.step_seconds_total);
    j.set_communication_seconds_total(s.communication_seconds_total);
    double step = 0, comm = 0;
    for (const auto& x : s.recent) {
      step += x.step_seconds;
      comm += x.communication_seconds;
    }
    if (step > 0) j.set_communication_share(comm / step);
    *j.mutable_last_report() = ToProtoTimestamp(s.last_report);
    if (s.collective) {
      *j.mutable_collective() = *s.collective;
      j.mutable_collective()->set_inside_seconds(
          s.collective->op().empty() ? 0 : absl::ToDoubleSeconds(now - s.inside_since));
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<v1::TrainingJobSummary> SummarizeTrainingJobs(
    const std::vector<v1::TrainingJobStatus>& ranks) {
  std::vector<v1::TrainingJobSummary> jobs;
  for (size_t i = 0; i < ranks.size();) {
    v1::TrainingJobSummary& job = jobs.emplace_back();
    job.set_job(ranks[i].job());
    bool running = false, stopped = false, unknown = false, died_inside = false;
    for (; i < ranks.size() && ranks[i].job() == job.job(); ++i) {
      const v1::TrainingJobStatus& r = ranks[i];
      job.add_ranks(r.rank());
      running |= r.process() == "running";
      stopped |= r.process() == "stopped";
      unknown |= r.process().empty();
      died_inside |= r.has_died_inside();
    }
    std::sort(job.mutable_ranks()->begin(), job.mutable_ranks()->end());
    // One live rank makes a live job; "ended" needs every process seen gone.
    if (running) {
      job.set_state("running");
    } else if (stopped) {
      job.set_state("stopped");
    } else if (!unknown) {
      job.set_state("ended");
      job.set_ended_how(died_inside ? "died_in_collective" : "exited");
    }
  }
  return jobs;
}

std::vector<TrainingReports::Key> TrainingReports::Expire() {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  std::vector<Key> expired;
  for (auto it = series_.begin(); it != series_.end();) {
    if (now - it->second.last_report >= expiry_) {
      expired.push_back(it->first);
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
  return expired;
}

}  // namespace gloowatch
