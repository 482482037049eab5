#include "client/health/link_state.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/failure.h"
#include "common/proto_time.h"

namespace gloowatch::client {
namespace {

// A loss ratio over enough segments to mean something, above the threshold,
// that its recent segments do not rule out.
bool LossCounts(const v1::PeerStatus& p, const EffectiveThresholds& t) {
  if (!p.tcp().has_loss_ratio() || p.tcp().loss_ratio() <= t.loss_ratio) return false;
  if (LossPast(p, t)) return false;
  return !p.tcp().has_window_sent_segments() ||
         p.tcp().window_sent_segments() >= t.loss_min_segments;
}

// "N failures", naming the latency probes lost among them (each one ended
// its session as a timeout).
std::string FailuresText(const v1::PeerStatus& p) {
  const uint64_t lost = p.latency().lost_probes_in_window();
  return absl::StrCat(p.failures_in_window(),
                      p.failures_in_window() == 1 ? " failure" : " failures",
                      lost > 0 ? absl::StrCat(" (", lost, " lost latency probes)") : "");
}

// The latency that stands for now: the last minute's p50 where the daemon
// reports it, else the window's.
bool RecentP50(const v1::PeerStatus& p, double* seconds) {
  if (p.latency().has_recent_p50_seconds()) {
    *seconds = p.latency().recent_p50_seconds();
    return true;
  }
  if (p.latency().has_p50_seconds()) {
    *seconds = p.latency().p50_seconds();
    return true;
  }
  return false;
}

std::optional<absl::Time> TimeOf(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return std::nullopt;
  return FromProtoTimestamp(t);
}

}  // namespace

const char* FindingWord(Finding f) {
  switch (f) {
    case Finding::kDown:
      return "down";
    case Finding::kFlapping:
      return "flapping";
    case Finding::kLossy:
      return "lossy";
    case Finding::kSlow:
      return "slow";
    case Finding::kLowBandwidth:
      return "below link speed";
    case Finding::kClockOffset:
      return "clock offset";
    case Finding::kConnecting:
      return "connecting";
    case Finding::kUnanswered:
      return "not answering";
  }
  return "down";
}

const char* HealthName(Health h) {
  switch (h) {
    case Health::kHealthy:
      return "healthy";
    case Health::kDegraded:
      return "degraded";
    case Health::kFailed:
      return "failed";
  }
  return "failed";
}

EffectiveThresholds ThresholdsOf(const v1::NodeStatus& s) {
  EffectiveThresholds t;
  const auto& p = s.thresholds();
  if (p.latency_seconds() > 0) t.latency_seconds = p.latency_seconds();
  if (p.bandwidth_link_ratio() > 0) t.link_ratio = p.bandwidth_link_ratio();
  if (p.clock_offset_seconds() > 0) t.clock_offset_seconds = p.clock_offset_seconds();
  if (p.communication_share() > 0) t.communication_share = p.communication_share();
  if (p.scheduling_delay_seconds() > 0) t.scheduling_delay_seconds = p.scheduling_delay_seconds();
  if (p.cpu_steal_ratio() > 0) t.cpu_steal_ratio = p.cpu_steal_ratio();
  return t;
}

const char* PeerStateWord(v1::PeerState s) {
  switch (s) {
    case v1::PEER_STATE_UP:
      return "up";
    case v1::PEER_STATE_DOWN:
      return "down";
    case v1::PEER_STATE_CONNECTING:
      return "connecting";
    default:
      return "unknown";
  }
}

std::string AgeText(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  const int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400)
    return absl::StrCat(s / 3600, "h", s % 3600 / 60 > 0 ? absl::StrCat(s % 3600 / 60, "m") : "");
  return absl::StrCat(s / 86400, "d",
                      s % 86400 / 3600 > 0 ? absl::StrCat(s % 86400 / 3600, "h") : "");
}

std::optional<LossCount> RecentLoss(const v1::TcpFigures& tcp) {
  if (!tcp.has_recent_sent_segments()) return std::nullopt;
  const LossCount recent{tcp.recent_lost_segments(), tcp.recent_sent_segments()};
  // The last loss is older than the recent part only when the recent part
  // lost nothing: then everything since it is clean.
  if (tcp.has_sent_since_last_loss() && recent.lost == 0 &&
      tcp.sent_since_last_loss() > recent.sent) {
    return LossCount{0, tcp.sent_since_last_loss()};
  }
  return recent;
}

bool LossPast(const v1::PeerStatus& p, const EffectiveThresholds& t) {
  const std::optional<LossCount> recent = RecentLoss(p.tcp());
  return recent && LossRuledOut(*recent, t.loss_ratio);
}

double PeerDaemonSilence(const v1::PeerStatus& p) {
  if (p.state() != v1::PEER_STATE_UP || !p.peer_daemon().has_silent_seconds()) return 0;
  const double s = p.peer_daemon().silent_seconds();
  return s > kDaemonSilentSeconds ? s : 0;
}

DirectionState JudgeDirection(const std::string& from, const std::string& to,
                              const v1::PeerStatus& p, const EffectiveThresholds& t, absl::Time now,
                              const DirectionContext& context) {
  DirectionState d;
  const std::string who = absl::StrCat(from, "->", to, ": ");
  std::vector<std::string> bad;
  // The last failure's reason says what kind of fault: refused (a firewall's
  // reject, nothing listening), timeout (drops), reset...
  const v1::FailureReason last = p.last_failure().reason();
  const std::string reason =
      last == v1::FAILURE_REASON_UNSPECIFIED ? "" : absl::StrCat(" (last: ", ReasonName(last), ")");
  const std::optional<absl::Time> last_failure_at = TimeOf(p.last_failure().time());

  // When the ends were last shown to accept pairs: the peer's transport's
  // start or a recovered session of either end, whichever is later.
  std::optional<absl::Time> accepting = context.peer_transport_started;
  bool recovered = false;
  if (context.recovered_since && (!accepting || *context.recovered_since > *accepting)) {
    accepting = context.recovered_since;
    recovered = true;
  }

  // Refused or reset while the peer's transport was starting, its
  // listeners not all up yet: the peer's start-up, not the link (a path
  // drops, it never refuses). Its next attempt, after its backoff, tells.
  const bool refused_while_starting =
      context.peer_transport_started && last_failure_at &&
      (last == v1::FAILURE_REASON_REFUSED || last == v1::FAILURE_REASON_RESET) &&
      *last_failure_at < *context.peer_transport_started + kPeerStartup;
  if (p.state() == v1::PEER_STATE_DOWN && !context.peer_transport_stopped && accepting &&
      last_failure_at &&
      (*last_failure_at < *accepting - kStalePairMargin || refused_while_starting)) {
    // Its last failure was to what the peer was before (a process that
    // died, a firewall since removed) or to its start-up: whatever its
    // reason says is about that. It has not tried since; its backoff runs.
    Worsen(d.health, Health::kDegraded);
    d.reconnecting = true;
    d.problems.push_back(
        *last_failure_at < *accepting - kStalePairMargin
            ? absl::StrCat(who, "reconnecting: down since before ",
                           recovered ? std::string("a session of either end recovered ")
                                     : absl::StrCat(to, "'s transport started "),
                           AgeText(now - *accepting), " ago, no failed attempt since", reason)
            : absl::StrCat(who, "reconnecting: ", ReasonName(last), " while ", to,
                           "'s transport was starting (",
                           AgeText(now - *context.peer_transport_started),
                           " ago), no failed attempt since"));
    d.findings.emplace_back(Finding::kConnecting, "");
  } else if (p.state() == v1::PEER_STATE_DOWN) {
    Worsen(d.health, Health::kFailed);
    d.problems.push_back(absl::StrCat(who, "down",
                                      p.last_failure().message().empty()
                                          ? ""
                                          : absl::StrCat(" (", p.last_failure().message(), ")")));
    d.findings.emplace_back(Finding::kDown, last == v1::FAILURE_REASON_UNSPECIFIED
                                                ? ""
                                                : std::string(ReasonName(last)));
    bad.push_back(absl::StrCat(
        "down", reason, p.failures_in_window() > 0 ? ", " + FailuresText(p) : "",
        context.peer_transport_stopped ? absl::StrCat(", ", to, "'s transport is not running")
                                       : ""));
    d.peer_restarted = context.peer_transport_stopped;
    std::optional<absl::Time> since = p.has_down_since() ? TimeOf(p.down_since()) : last_failure_at;
    // Down since before the ends were shown to accept pairs again (the peer
    // back from a restart): the link has been cut only since then, and may
    // still be settling (a peer's attempt during the peer's start-up).
    if (since && accepting && *accepting > *since) since = accepting;
    if (since && !d.peer_restarted) d.cut_for = now - *since;
  } else if (p.state() != v1::PEER_STATE_UP) {
    Worsen(d.health, Health::kDegraded);
    d.problems.push_back(absl::StrCat(who, PeerStateWord(p.state())));
    d.findings.emplace_back(Finding::kConnecting, "");
  } else if (context.peer_transport_stopped) {
    // Its daemon says no transport runs: the pair is to a process that died.
    Worsen(d.health, Health::kFailed);
    const std::string stopped =
        absl::StrCat("pair broken: ", to, "'s transport is not running (its daemon restarts it)");
    d.problems.push_back(who + stopped);
    d.findings.emplace_back(Finding::kDown, "restart");
    bad.push_back(stopped);
    d.cut = true;
    d.peer_restarted = true;
  } else if (p.has_unacknowledged() && accepting &&
             now - absl::Seconds(p.unacknowledged().seconds()) < *accepting - kStalePairMargin) {
    // Unacknowledged since before a session of either end recovered (or the
    // peer's transport started): what cut it is gone; the kernel's
    // retransmission back-off has not tried again yet.
    Worsen(d.health, Health::kDegraded);
    d.reconnecting = true;
    d.problems.push_back(absl::StrFormat(
        "%sretransmitting: sent data unacknowledged for %.1f s, since before %s %s ago", who,
        p.unacknowledged().seconds(),
        recovered ? "a session of either end recovered" : absl::StrCat(to, "'s transport started"),
        AgeText(now - *accepting)));
    d.findings.emplace_back(Finding::kConnecting, "");
  } else if (p.has_unacknowledged()) {
    // The kernel knows before the probe times out: nothing gets through.
    Worsen(d.health, Health::kFailed);
    const std::string unanswered = absl::StrFormat(
        "not answering: sent data unacknowledged for %.1f s, retransmitted %d times",
        p.unacknowledged().seconds(), p.unacknowledged().retransmissions());
    d.problems.push_back(who + unanswered);
    d.findings.emplace_back(Finding::kUnanswered, "");
    bad.push_back(unanswered);
    d.cut = true;
    d.cut_for = absl::Seconds(p.unacknowledged().seconds());
  } else if (const std::optional<absl::Time> up_since = TimeOf(p.up_since());
             context.peer_transport_started && up_since &&
             *up_since < *context.peer_transport_started - kStalePairMargin) {
    // Up since before the peer's transport restarted: the pair is to the
    // process that died, and fails at its next command.
    Worsen(d.health, Health::kFailed);
    const std::string stale = absl::StrCat("pair broken: ", to, "'s transport restarted ",
                                           AgeText(now - *context.peer_transport_started),
                                           " ago, after this pair came up");
    d.problems.push_back(who + stale);
    d.findings.emplace_back(Finding::kDown, "restart");
    bad.push_back(stale);
    d.cut = true;
    d.peer_restarted = true;
  } else if (p.drops_in_window() >= kFlappingDrops && last_failure_at &&
             now - *last_failure_at <= kFlappingRecent) {
    // Up now, but it keeps dropping: that is present, not past.
    Worsen(d.health, Health::kDegraded);
    const std::string flapping =
        absl::StrCat("flapping: down ", p.drops_in_window(), " times within the window, last ",
                     AgeText(now - *last_failure_at), " ago", reason);
    d.problems.push_back(who + flapping);
    d.findings.emplace_back(Finding::kFlapping, absl::StrCat(p.drops_in_window(), " drops"));
    bad.push_back(flapping);
  }
  if (double p50 = 0; RecentP50(p, &p50) && p50 >= t.latency_seconds) {
    Worsen(d.health, Health::kDegraded);
    d.problems.push_back(absl::StrFormat("%slatency p50 %.3f ms >= %.3f ms", who, p50 * 1e3,
                                         t.latency_seconds * 1e3));
    bad.push_back(absl::StrFormat("latency p50 %.3f ms", p50 * 1e3));
    d.findings.emplace_back(Finding::kSlow, absl::StrFormat("%.2f ms", p50 * 1e3));
  }
  // A transfer measured while an end was short of CPU crawled for that
  // host's reason (named overloaded_host while it lasts), not the link's.
  const bool starved_transfer =
      context.starved_until && p.bandwidth().has_measured_at() &&
      FromProtoTimestamp(p.bandwidth().measured_at()) <= *context.starved_until + kStalePairMargin;
  if (p.bandwidth().has_link_ratio() && p.bandwidth().link_ratio() < t.link_ratio &&
      !starved_transfer) {
    Worsen(d.health, Health::kDegraded);
    d.problems.push_back(
        absl::StrFormat("%slink ratio %.2f < %.2f", who, p.bandwidth().link_ratio(), t.link_ratio));
    bad.push_back(absl::StrFormat("link ratio %.2f", p.bandwidth().link_ratio()));
    d.findings.emplace_back(Finding::kLowBandwidth,
                            absl::StrFormat("%.0f%%", p.bandwidth().link_ratio() * 100));
  }
  if (p.clock().has_offset_seconds() &&
      std::abs(p.clock().offset_seconds()) >= t.clock_offset_seconds) {
    Worsen(d.health, Health::kDegraded);
    d.problems.push_back(absl::StrFormat("%sclock offset %+.1f ms, |offset| >= %.1f ms", who,
                                         p.clock().offset_seconds() * 1e3,
                                         t.clock_offset_seconds * 1e3));
    d.findings.emplace_back(Finding::kClockOffset,
                            absl::StrFormat("%+.0f ms", p.clock().offset_seconds() * 1e3));
  }
  if (LossCounts(p, t)) {
    Worsen(d.health, Health::kDegraded);
    d.problems.push_back(absl::StrFormat("%sTCP loss %.2f%% > %.2f%%", who,
                                         p.tcp().loss_ratio() * 100, t.loss_ratio * 100));
    bad.push_back(absl::StrFormat("TCP loss %.2f%%", p.tcp().loss_ratio() * 100));
    d.findings.emplace_back(Finding::kLossy, absl::StrFormat("%.1f%%", p.tcp().loss_ratio() * 100));
  } else if (p.tcp().has_loss_ratio() && p.tcp().loss_ratio() > t.loss_ratio) {
    d.inconclusive = true;
  }
  if (!bad.empty()) d.bad = absl::StrCat(who, absl::StrJoin(bad, ", "));

  // The past: failures of a direction that is up again.
  if (p.state() == v1::PEER_STATE_UP && p.failures_in_window() > 0) {
    const std::optional<absl::Time> up_since = TimeOf(p.up_since());
    const std::optional<absl::Time> recovered = up_since ? up_since : last_failure_at;
    d.history = absl::StrCat(who, "recovered",
                             recovered ? absl::StrCat(" ", AgeText(now - *recovered), " ago") : "",
                             " after ", FailuresText(p), reason);
  }
  return d;
}

}  // namespace gloowatch::client
