// Wires the modules into a running daemon: Gloo device, metrics exporter,
// gRPC server, one tracker and prober per peer the topology selects.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/tls.h"
#include "daemon/api/peer_service.h"
#include "daemon/api/preflight_service.h"
#include "daemon/api/probe_link_admission.h"
#include "daemon/api/report_admission.h"
#include "daemon/api/status_service.h"
#include "daemon/http/scrape_server.h"
#include "daemon/metrics/host_load.h"
#include "daemon/metrics/metrics.h"
#include "daemon/peers/peer_tracker.h"
#include "daemon/peers/topology.h"
#include "daemon/supervisor/transport_supervisor.h"
#include "daemon/system/gloo_endpoint.h"
#include "daemon/training/job_sockets.h"
#include "daemon/training/training_reports.h"
#include "proto/gloowatch.pb.h"

namespace grpc {
class Server;
}

namespace gloowatch {

class Daemon {
 public:
  // Binds every port and starts probing, with the transport `launcher`
  // starts (NewProcessLauncher in production); any failure to bind or to find
  // the Gloo interface is returned, nothing is left running.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(Config config, const Clock* clock,
                                                       std::shared_ptr<TransportLauncher> launcher);
  ~Daemon();

  v1::NodeStatus Status() const;
  // `client`: "" for a process on this host, else the remote (TLS) caller.
  absl::Status ReportStep(const v1::ReportStepRequest& request, const std::string& client = "");
  absl::Status ReportCollective(const v1::CollectiveReport& report, const std::string& client = "");
  // Status.ProbeLink: admitted (ProbeLinkAdmission), then run by the
  // transport; `done` runs once, with its answer or why not.
  void ProbeLink(const v1::ProbeLinkRequest& request, StatusService::ProbeLinkDone done);
  // Periodic chores (expiring stale training series, rotating the sampled
  // peers when the epoch changes); call about once a second.
  void Tick();
  // Applies a new config (SIGHUP): peers added, removed or changed and new
  // schedules and thresholds, without touching healthy pairs. Refused, with
  // the running config kept, when it changes what needs a restart (node name,
  // listen addresses, the Gloo interface).
  absl::Status Reload(Config config);
  // Stops serving (in-flight calls get `grace`) and the transport process.
  void Shutdown(absl::Duration grace);
  // False when the transport process stopped answering or reports a stuck
  // probe thread (PeerProber::Stalled): the systemd watchdog ping is then
  // withheld. Cheap; call every main-loop tick.
  bool Healthy() const;

 private:
  // A peer probed now, and why (topology).
  struct Probed {
    std::shared_ptr<PeerTracker> tracker;
    Selection selection;
  };

  Daemon(Config config, const Clock* clock);
  // The steps of Start, in order.
  absl::Status ChooseGlooEndpoint(const Config& c);
  absl::Status ServeMetrics(const Config& c);
  std::vector<std::string> SelectFirstPeers(const Config& c);
  // The training reports and the reading of the ranks' sockets.
  void MakeTraining(const Config& c);
  void MakeServices(const Config& c, std::shared_ptr<TransportLauncher> launcher,
                    const std::vector<std::string>& probe_peers);
  absl::Status ServeGrpc(const Config& c, const TlsMaterial& tls);
  std::shared_ptr<PeerTracker> MakeTracker(const PeerConfig& peer) const;
  std::shared_ptr<PeerTracker> FindTracker(const std::string& peer) const;
  // Recomputes who we probe for `epoch` from config_: trackers of peers that
  // stay are kept, new ones made, the others dropped (and their series with
  // them). Returns the names to probe, for the transport.
  std::vector<std::string> Select(uint64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t CurrentEpoch() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The training gauges from a snapshot of the reports (Tick).
  void ExportTrainingState();

  // Serializes selection changes and their hand-over to the transport, which
  // happens outside mu_ (the transport's events need mu_ to be read).
  absl::Mutex select_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  Config config_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Topology> topology_ ABSL_GUARDED_BY(mu_);
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  const Clock* clock_;
  absl::Time started_at_;
  GlooEndpoint endpoint_;
  std::pair<uint32_t, uint32_t> ephemeral_ports_{0, 0};
  std::string hostname_;
  const std::shared_ptr<HostLoad> host_load_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<TcpSocketTable> socket_table_;
  std::unique_ptr<JobSockets> job_sockets_;
  absl::Duration job_sockets_read_at_;  // next read, monotonic; Tick only
  bool job_sockets_error_logged_ = false;
  // Serves metrics_->Render(), which reads probed_: reset before they go.
  std::unique_ptr<ScrapeServer> scrape_server_;
  std::unique_ptr<TrainingReports> training_;
  std::unique_ptr<ReportAdmission> report_admission_;  // set before the server starts
  std::unique_ptr<ProbeLinkAdmission> probe_link_admission_;
  // What the training gauges hold, to remove what is gone; Tick only.
  std::set<TrainingReports::Key> collective_series_;  // collective gauges
  std::set<TrainingReports::Key> process_series_;     // process state gauges
  std::set<std::string> ended_series_;                // jobs with an ended gauge
  // The peers probed now, in config order; trackers are shared so the
  // transport's events can still land on one that a reload or a rotation
  // just removed.
  std::vector<Probed> probed_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<TransportSupervisor> transport_;
  std::unique_ptr<StatusService> status_service_;
  std::unique_ptr<PeerService> peer_service_;
  std::unique_ptr<PreflightService> preflight_service_;
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

// "0.5.0 (Debian 0.0~git20220518)"-style description of the Gloo we run on.

}  // namespace gloowatch
