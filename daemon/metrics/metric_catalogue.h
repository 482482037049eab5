// Every metric family gloowatchd exports, in one place: name, type, help and
// label names. The code that exports a family builds it from its entry here
// (metrics, peers/peer_series, process_metrics, host_load), docs/metrics.md
// documents each entry, and metrics_doc_test checks the catalogue against
// the doc and against a real daemon's /metrics.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/labels.h"
#include "prometheus/metric_type.h"

namespace gloowatch {

struct MetricSpec {
  absl::string_view name;
  prometheus::MetricType type;
  absl::string_view help;
  // The label names, in the order MetricLabels takes their values; unused
  // slots are empty.
  std::array<absl::string_view, 4> labels;

  constexpr size_t label_count() const {
    size_t n = 0;
    while (n < labels.size() && !labels[n].empty()) ++n;
    return n;
  }
};

// The type as Prometheus' text format writes it: "counter", "gauge", ...
absl::string_view MetricTypeName(prometheus::MetricType type);

// The labels of one series of `spec`: one value a label name, in order.
prometheus::Labels MetricLabels(const MetricSpec& spec, std::initializer_list<std::string> values);

namespace metric {

using prometheus::MetricType;

// --- the node ----------------------------------------------------------------
// Also one label per topology label of the node (its `labels:`), which no
// list can name.
inline constexpr MetricSpec kBuildInfo{
    "gloowatch_build_info",
    MetricType::Gauge,
    "Always 1; labels carry the gloowatch and Gloo versions, the node's group and its topology "
    "labels",
    {"node", "version", "gloo_version", "group"}};
inline constexpr MetricSpec kLinkSpeed{"gloowatch_link_speed_bytes_per_second",
                                       MetricType::Gauge,
                                       "Link speed of the interface the Gloo pairs use",
                                       {"node", "interface"}};
inline constexpr MetricSpec kBandwidthProbeSeconds{
    "gloowatch_bandwidth_probe_seconds_total",
    MetricType::Counter,
    "Time this node's link spent in bandwidth probe transfers, its own and the peers' it served",
    {"node"}};
inline constexpr MetricSpec kTransportRestarts{
    "gloowatch_transport_restarts_total",
    MetricType::Counter,
    "Restarts of the probe transport process after it died",
    {"node"}};

// --- the thresholds the verdict uses (node) ----------------------------------
inline constexpr MetricSpec kThresholdLatency{"gloowatch_threshold_latency_seconds",
                                              MetricType::Gauge,
                                              "Latency p50 at or above which a link is degraded",
                                              {"node"}};
inline constexpr MetricSpec kThresholdBandwidthLinkRatio{
    "gloowatch_threshold_bandwidth_link_ratio",
    MetricType::Gauge,
    "Link ratio below which a link is degraded",
    {"node"}};
inline constexpr MetricSpec kThresholdClockOffset{
    "gloowatch_threshold_clock_offset_seconds",
    MetricType::Gauge,
    "Absolute clock offset at or above which a link is degraded",
    {"node"}};
inline constexpr MetricSpec kThresholdFailureWindow{
    "gloowatch_threshold_failure_window_seconds",
    MetricType::Gauge,
    "Window in which any probe failure degrades a link",
    {"node"}};
inline constexpr MetricSpec kThresholdCommunicationShare{
    "gloowatch_threshold_communication_share",
    MetricType::Gauge,
    "Communication share of step time above which a training job is degraded",
    {"node"}};
inline constexpr MetricSpec kThresholdSchedulingDelay{
    "gloowatch_threshold_scheduling_delay_seconds",
    MetricType::Gauge,
    "Mean scheduling delay of gloowatch's threads at or above which the host is overloaded",
    {"node"}};
inline constexpr MetricSpec kThresholdCpuSteal{
    "gloowatch_threshold_cpu_steal_ratio",
    MetricType::Gauge,
    "CPU steal ratio at or above which the host is overloaded",
    {"node"}};

// --- the host's load (host_load) ---------------------------------------------
inline constexpr MetricSpec kHostSchedulingDelay{
    "gloowatch_host_scheduling_delay_seconds",
    MetricType::Gauge,
    "Mean wait of gloowatch's threads from runnable to running over the last 10 s",
    {"node"}};
inline constexpr MetricSpec kHostRecentSchedulingDelay{
    "gloowatch_host_recent_scheduling_delay_seconds",
    MetricType::Gauge,
    "Mean wait of the daemon's and the transport's main threads from runnable to running over "
    "the last 3 s",
    {"node"}};
inline constexpr MetricSpec kHostCpuSteal{
    "gloowatch_host_cpu_steal_ratio",
    MetricType::Gauge,
    "Share of the host's CPU time stolen by the hypervisor over the last 10 s",
    {"node"}};
inline constexpr MetricSpec kHostCpuPressure{
    "gloowatch_host_cpu_pressure_ratio",
    MetricType::Gauge,
    "Share of time some task waited for a CPU, host-wide (PSI cpu some avg10)",
    {"node"}};

// --- each probed peer (peers/peer_series) ------------------------------------
inline constexpr MetricSpec kPeerUp{
    "gloowatch_peer_up",
    MetricType::Gauge,
    "1 when the Gloo probe pair to the peer is connected and answering",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerRtt{"gloowatch_peer_rtt_seconds",
                                     MetricType::Histogram,
                                     "Round-trip time of small messages over the Gloo pair",
                                     {"node", "peer"}};
inline constexpr MetricSpec kPeerRttP50{"gloowatch_peer_rtt_p50_seconds",
                                        MetricType::Gauge,
                                        "Median round-trip time over the sliding window",
                                        {"node", "peer"}};
inline constexpr MetricSpec kPeerRttP99{"gloowatch_peer_rtt_p99_seconds",
                                        MetricType::Gauge,
                                        "99th percentile round-trip time over the sliding window",
                                        {"node", "peer"}};
inline constexpr MetricSpec kPeerRttJitter{
    "gloowatch_peer_rtt_jitter_seconds",
    MetricType::Gauge,
    "Latency jitter: p99 minus p50 round-trip time over the sliding window",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerRttRecentP50{
    "gloowatch_peer_rtt_recent_p50_seconds",
    MetricType::Gauge,
    "Median round-trip time over the last 60 s (absent without a round trip in it)",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerLatencyProbesLost{
    "gloowatch_peer_latency_probes_lost_total",
    MetricType::Counter,
    "Latency probes whose ping timed out (each also ends the session as a timeout failure)",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerBandwidth{
    "gloowatch_peer_bandwidth_bytes_per_second",
    MetricType::Gauge,
    "Throughput of the last timed bulk transfer (direction tx|rx)",
    {"node", "peer", "direction"}};
inline constexpr MetricSpec kPeerBandwidthLinkRatio{
    "gloowatch_peer_bandwidth_link_ratio",
    MetricType::Gauge,
    "Last measured bandwidth over the local link speed (direction tx|rx)",
    {"node", "peer", "direction"}};
inline constexpr MetricSpec kPeerClockOffset{
    "gloowatch_peer_clock_offset_seconds",
    MetricType::Gauge,
    "Peer wall clock minus ours, best sample of the last burst",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerClockOffsetError{
    "gloowatch_peer_clock_offset_error_seconds",
    MetricType::Gauge,
    "Error bound (half the round trip) of the clock offset",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerProbeFailures{
    "gloowatch_peer_probe_failures_total",
    MetricType::Counter,
    "Failed probes and connection attempts, by classified reason",
    {"node", "peer", "reason"}};
inline constexpr MetricSpec kPeerProbes{"gloowatch_peer_probes_total",
                                        MetricType::Counter,
                                        "Completed probes by kind (latency|skew|bandwidth)",
                                        {"node", "peer", "kind"}};
inline constexpr MetricSpec kPeerDrops{
    "gloowatch_peer_drops_total",
    MetricType::Counter,
    "Times the peer went from up to down (a restart or partition is one, however many reconnects "
    "fail after it)",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerLastFailureTimestamp{
    "gloowatch_peer_last_failure_timestamp_seconds",
    MetricType::Gauge,
    "Unix time of the last failed probe or connection attempt to the peer",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerDaemonSilent{
    "gloowatch_peer_daemon_silent_seconds",
    MetricType::Gauge,
    "How long the peer's daemon had been silent when its transport last answered us (over 3: "
    "frozen while its transport answers)",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerTcpSent{
    "gloowatch_peer_tcp_sent_segments_total",
    MetricType::Counter,
    "TCP data segments the probe pairs' sockets sent to the peer, retransmissions included",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerTcpRetransmitted{
    "gloowatch_peer_tcp_retransmitted_segments_total",
    MetricType::Counter,
    "TCP segments the probe pairs' sockets retransmitted to the peer (kernel tcp_info)",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerTcpSpuriousRetransmitted{
    "gloowatch_peer_tcp_spurious_retransmitted_segments_total",
    MetricType::Counter,
    "Of those, retransmissions the peer reported it already had (DSACK)",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerTcpLossRatio{
    "gloowatch_peer_tcp_loss_ratio",
    MetricType::Gauge,
    "Lost (retransmitted, not spurious) over sent TCP segments of the probe pairs, last 60 s",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerTcpRtt{
    "gloowatch_peer_tcp_rtt_seconds",
    MetricType::Gauge,
    "Kernel's smoothed round-trip time of the command pair's TCP connection",
    {"node", "peer"}};
inline constexpr MetricSpec kPeerTcpRttVariation{
    "gloowatch_peer_tcp_rtt_variation_seconds",
    MetricType::Gauge,
    "Kernel's round-trip time variation of the same connection",
    {"node", "peer"}};
// Per flow of probe.flows: `flow` is "0" .. "7" (bounded by kMaxProbeFlows).
inline constexpr MetricSpec kPeerFlowSent{
    "gloowatch_peer_flow_sent_segments_total",
    MetricType::Counter,
    "TCP data segments one probe flow's command pair sent to the peer, retransmissions included",
    {"node", "peer", "flow"}};
inline constexpr MetricSpec kPeerFlowLost{"gloowatch_peer_flow_lost_segments_total",
                                          MetricType::Counter,
                                          "Of those, retransmitted and not reported spurious "
                                          "(DSACK) by the peer: lost on the flow's path",
                                          {"node", "peer", "flow"}};
inline constexpr MetricSpec kPeerFlowLossRatio{
    "gloowatch_peer_flow_loss_ratio",
    MetricType::Gauge,
    "Lost over sent TCP segments of one probe flow, last 60 s",
    {"node", "peer", "flow"}};
inline constexpr MetricSpec kPeerFlowFailures{
    "gloowatch_peer_flow_failures_total",
    MetricType::Counter,
    "Probes over one probe flow that timed out (the session then ended)",
    {"node", "peer", "flow"}};

// --- training processes' reports, per (job, rank) ----------------------------
inline constexpr MetricSpec kTrainingStepSeconds{"gloowatch_training_step_seconds_total",
                                                 MetricType::Counter,
                                                 "Wall time of reported training steps",
                                                 {"node", "training_job", "rank"}};
inline constexpr MetricSpec kTrainingCommunicationSeconds{
    "gloowatch_training_communication_seconds_total",
    MetricType::Counter,
    "Time reported training steps spent in communication",
    {"node", "training_job", "rank"}};
inline constexpr MetricSpec kTrainingSteps{"gloowatch_training_steps_total",
                                           MetricType::Counter,
                                           "Number of reported training steps",
                                           {"node", "training_job", "rank"}};
inline constexpr MetricSpec kTrainingCollectiveSeconds{
    "gloowatch_training_collective_seconds",
    MetricType::Gauge,
    "How long the rank has been inside its current collective (0: between collectives)",
    {"node", "training_job", "rank"}};
inline constexpr MetricSpec kTrainingCollectiveSeq{
    "gloowatch_training_collective_seq",
    MetricType::Gauge,
    "Sequence number of the rank's current or last collective",
    {"node", "training_job", "rank"}};
inline constexpr MetricSpec kTrainingReportAge{
    "gloowatch_training_report_age_seconds",
    MetricType::Gauge,
    "Time since the rank's last report (steps or heartbeat); grows while the rank is stopped, "
    "hung or gone",
    {"node", "training_job", "rank"}};
inline constexpr MetricSpec kTrainingRankProcessState{
    "gloowatch_training_rank_process_state",
    MetricType::Gauge,
    "1 for the current state (running, stopped, gone) of the rank's process in /proc, 0 for the "
    "others; no series when unknown",
    {"node", "training_job", "rank", "state"}};
inline constexpr MetricSpec kTrainingJobEnded{
    "gloowatch_training_job_ended",
    MetricType::Gauge,
    "1 while every process of the job's ranks on this node is gone; how: died_in_collective "
    "(killed or crashed inside a call) or exited",
    {"node", "training_job", "how"}};

// --- the training ranks' own Gloo pair connections, per (job, rank, remote) -
// At most kMaxJobLinkSeries label sets (job_link_series.h).
inline constexpr MetricSpec kTrainingLinkSentSegments{
    "gloowatch_training_link_sent_segments_total",
    MetricType::Counter,
    "Data segments a rank's Gloo pair connection sent, retransmissions included",
    {"node", "training_job", "rank", "remote"}};
inline constexpr MetricSpec kTrainingLinkRetransmittedSegments{
    "gloowatch_training_link_retransmitted_segments_total",
    MetricType::Counter,
    "Segments of that connection the kernel retransmitted",
    {"node", "training_job", "rank", "remote"}};
inline constexpr MetricSpec kTrainingLinkSpuriousRetransmittedSegments{
    "gloowatch_training_link_spurious_retransmitted_segments_total",
    MetricType::Counter,
    "Of those, the ones the other end reported it already had (DSACK)",
    {"node", "training_job", "rank", "remote"}};
inline constexpr MetricSpec kTrainingLinkRtt{"gloowatch_training_link_rtt_seconds",
                                             MetricType::Gauge,
                                             "The kernel's smoothed RTT of the connection",
                                             {"node", "training_job", "rank", "remote"}};
inline constexpr MetricSpec kTrainingLinkUnackedBytes{
    "gloowatch_training_link_unacked_bytes",
    MetricType::Gauge,
    "Bytes the rank sent on the connection that are not acknowledged yet",
    {"node", "training_job", "rank", "remote"}};
inline constexpr MetricSpec kTrainingLinkReceiveQueueBytes{
    "gloowatch_training_link_receive_queue_bytes",
    MetricType::Gauge,
    "Bytes that arrived on the connection and the rank has not read yet",
    {"node", "training_job", "rank", "remote"}};
inline constexpr MetricSpec kTrainingLinkBackoff{
    "gloowatch_training_link_backoff",
    MetricType::Gauge,
    "Exponent of the connection's retransmission timer backoff (0 when healthy)",
    {"node", "training_job", "rank", "remote"}};

// --- Prometheus' standard process collector (process_metrics) ----------------
// The daemon's own series carry no label, as every exporter's do; its
// transport child's carry process="transport".
inline constexpr MetricSpec kProcessCpuSeconds{"process_cpu_seconds_total",
                                               MetricType::Counter,
                                               "Total user and system CPU time spent in seconds.",
                                               {"process"}};
inline constexpr MetricSpec kProcessResidentMemory{"process_resident_memory_bytes",
                                                   MetricType::Gauge,
                                                   "Resident memory size in bytes.",
                                                   {"process"}};
inline constexpr MetricSpec kProcessVirtualMemory{"process_virtual_memory_bytes",
                                                  MetricType::Gauge,
                                                  "Virtual memory size in bytes.",
                                                  {"process"}};
inline constexpr MetricSpec kProcessStartTime{
    "process_start_time_seconds",
    MetricType::Gauge,
    "Start time of the process since unix epoch in seconds.",
    {"process"}};
inline constexpr MetricSpec kProcessOpenFds{
    "process_open_fds", MetricType::Gauge, "Number of open file descriptors.", {"process"}};
inline constexpr MetricSpec kProcessMaxFds{
    "process_max_fds", MetricType::Gauge, "Maximum number of open file descriptors.", {"process"}};

}  // namespace metric

// Every entry above, once.
inline constexpr const MetricSpec* kMetricCatalogue[] = {
    &metric::kBuildInfo,
    &metric::kLinkSpeed,
    &metric::kBandwidthProbeSeconds,
    &metric::kTransportRestarts,
    &metric::kThresholdLatency,
    &metric::kThresholdBandwidthLinkRatio,
    &metric::kThresholdClockOffset,
    &metric::kThresholdFailureWindow,
    &metric::kThresholdCommunicationShare,
    &metric::kThresholdSchedulingDelay,
    &metric::kThresholdCpuSteal,
    &metric::kHostSchedulingDelay,
    &metric::kHostRecentSchedulingDelay,
    &metric::kHostCpuSteal,
    &metric::kHostCpuPressure,
    &metric::kPeerUp,
    &metric::kPeerRtt,
    &metric::kPeerRttP50,
    &metric::kPeerRttP99,
    &metric::kPeerRttJitter,
    &metric::kPeerRttRecentP50,
    &metric::kPeerLatencyProbesLost,
    &metric::kPeerBandwidth,
    &metric::kPeerBandwidthLinkRatio,
    &metric::kPeerClockOffset,
    &metric::kPeerClockOffsetError,
    &metric::kPeerProbeFailures,
    &metric::kPeerProbes,
    &metric::kPeerDrops,
    &metric::kPeerLastFailureTimestamp,
    &metric::kPeerDaemonSilent,
    &metric::kPeerTcpSent,
    &metric::kPeerTcpRetransmitted,
    &metric::kPeerTcpSpuriousRetransmitted,
    &metric::kPeerTcpLossRatio,
    &metric::kPeerTcpRtt,
    &metric::kPeerTcpRttVariation,
    &metric::kPeerFlowSent,
    &metric::kPeerFlowLost,
    &metric::kPeerFlowLossRatio,
    &metric::kPeerFlowFailures,
    &metric::kTrainingStepSeconds,
    &metric::kTrainingCommunicationSeconds,
    &metric::kTrainingSteps,
    &metric::kTrainingCollectiveSeconds,
    &metric::kTrainingCollectiveSeq,
    &metric::kTrainingReportAge,
    &metric::kTrainingRankProcessState,
    &metric::kTrainingJobEnded,
    &metric::kTrainingLinkSentSegments,
    &metric::kTrainingLinkRetransmittedSegments,
    &metric::kTrainingLinkSpuriousRetransmittedSegments,
    &metric::kTrainingLinkRtt,
    &metric::kTrainingLinkUnackedBytes,
    &metric::kTrainingLinkReceiveQueueBytes,
    &metric::kTrainingLinkBackoff,
    &metric::kProcessCpuSeconds,
    &metric::kProcessResidentMemory,
    &metric::kProcessVirtualMemory,
    &metric::kProcessStartTime,
    &metric::kProcessOpenFds,
    &metric::kProcessMaxFds,
};

}  // namespace gloowatch
