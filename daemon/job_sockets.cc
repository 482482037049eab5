#include "daemon/job_sockets.h"

#include <netinet/in.h>

#include <algorithm>
#include <utility>

#include "common/proto_time.h"

namespace gloowatch {
namespace {

// Every state but LISTEN: a connection the peer closed (close_wait) or one
// still connecting is evidence too.
constexpr uint32_t kStates = 0xfff & ~(1u << kTcpStateListen);

class SockDiagSocketTable final : public TcpSocketTable {
 public:
  absl::Status Visit(const std::function<void(const TcpDiagEntry&)>& visit) const override {
    for (int family : {AF_INET, AF_INET6}) {
      if (absl::Status s = DumpTcpSockets(family, kStates, visit); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
};

double Seconds(uint32_t ms) { return ms / 1e3; }

}  // namespace

std::unique_ptr<TcpSocketTable> NewSockDiagSocketTable() {
  return std::make_unique<SockDiagSocketTable>();
}

JobSockets::JobSockets(const Clock* clock, const TcpSocketTable* table,
                       std::vector<uint16_t> own_ports, absl::Duration loss_window)
    : clock_(clock), table_(table), own_ports_(std::move(own_ports)), loss_window_(loss_window) {}

absl::Status JobSockets::Read(const std::unordered_map<uint64_t, Wanted>& wanted) {
  std::vector<std::pair<TcpDiagEntry, Wanted>> found;
  absl::Status status = absl::OkStatus();
  if (!wanted.empty()) {
    status = table_->Visit([&](const TcpDiagEntry& e) {
      if (e.inode == 0 || !e.info) return;
      auto it = wanted.find(e.inode);
      if (it == wanted.end()) return;
      if (e.remote.SameHost(e.local) &&
          std::find(own_ports_.begin(), own_ports_.end(), e.remote.port) != own_ports_.end()) {
        return;  // the reporter's channel to us
      }
      found.emplace_back(e, it->second);
    });
  }
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  std::unordered_map<uint64_t, Socket> next;
  for (const auto& [entry, want] : found) {
    const uint64_t cookie = (uint64_t{entry.cookie[1]} << 32) | entry.cookie[0];
    Socket socket;
    auto old = sockets_.find(entry.inode);
    if (old != sockets_.end() && old->second.cookie == cookie) socket = std::move(old->second);
    socket.cookie = cookie;
    Update(socket, entry, want, now);
    next.emplace(entry.inode, std::move(socket));
  }
  sockets_ = std::move(next);
  return status;
}

void JobSockets::Update(Socket& s, const TcpDiagEntry& e, const Wanted& want,
                        absl::Time now) const {
  const TcpInfo& info = *e.info;
  v1::JobSocket& f = s.figures;
  f.set_local(e.local.ToString());
  f.set_remote(e.remote.ToString());
  const bool store =
      want.store_port != 0 && (e.local.port == want.store_port || e.remote.port == want.store_port);
  f.set_kind(store ? "store" : "pair");
  f.set_state(TcpStateName(e.state));
  *f.mutable_read_at() = ToProtoTimestamp(now);
  f.set_bytes_sent(info.bytes_sent);
  f.set_bytes_received(info.bytes_received);
  f.set_sent_segments(info.sent_segments);
  f.set_received_segments(info.received_segments);
  f.set_retransmitted_segments(info.retransmitted_segments);
  f.set_spurious_retransmitted_segments(info.spurious_retransmitted_segments);
  f.set_rtt_seconds(info.rtt_us / 1e6);
  // The send queue holds what was written and not acknowledged; of it,
  // notsent_bytes never left.
  const uint32_t notsent = std::min(info.notsent_bytes, e.send_queue);
  f.set_unacked_bytes(e.send_queue - notsent);
  f.set_notsent_bytes(notsent);
  f.set_backoff(info.backoff);
  f.set_receive_queue_bytes(e.receive_queue);
  f.set_zero_window(info.has_send_window && info.send_window == 0 &&
                    e.state == kTcpStateEstablished);
  f.set_since_last_send_seconds(Seconds(info.since_last_send_ms));
  f.set_since_last_receive_seconds(Seconds(info.since_last_receive_ms));
  f.set_since_last_ack_seconds(Seconds(info.since_last_ack_ms));

  // Unread: data waits in the receive queue and the process read nothing
  // since the previous read (what it has read, received - queued, stands).
  const uint64_t copied =
      info.bytes_received >= e.receive_queue ? info.bytes_received - e.receive_queue : 0;
  const bool first = s.history.empty();
  if (e.receive_queue == 0 || (!first && copied != s.copied_bytes)) {
    s.unread_since.reset();
  } else if (!first && !s.unread_since) {
    // Not read since the previous read at least.
    s.unread_since = s.history.back().at;
  }
  s.copied_bytes = copied;
  if (s.unread_since) {
    *f.mutable_unread_since() = ToProtoTimestamp(*s.unread_since);
  } else {
    f.clear_unread_since();
  }

  s.history.push_back(
      {now, info.sent_segments, info.retransmitted_segments, info.spurious_retransmitted_segments});
  while (s.history.size() > 2 && s.history[1].at <= now - loss_window_) s.history.pop_front();
  const Sample& from = s.history.front();
  const Sample& to = s.history.back();
  f.clear_loss_ratio();
  f.set_loss_window_seconds(absl::ToDoubleSeconds(to.at - from.at));
  f.set_loss_window_sent_segments(to.sent >= from.sent ? to.sent - from.sent : 0);
  if (s.history.size() >= 2 && to.sent > from.sent && to.retransmitted >= from.retransmitted &&
      to.spurious >= from.spurious) {
    const double lost = static_cast<double>(to.retransmitted - from.retransmitted) -
                        static_cast<double>(to.spurious - from.spurious);
    f.set_loss_ratio(std::max(0.0, lost) / static_cast<double>(to.sent - from.sent));
  }
}

std::optional<v1::JobSocket> JobSockets::Find(uint64_t inode) const {
  absl::MutexLock lock(&mu_);
  auto it = sockets_.find(inode);
  if (it == sockets_.end()) return std::nullopt;
  return it->second.figures;
}

size_t JobSockets::size() const {
  absl::MutexLock lock(&mu_);
  return sockets_.size();
}

}  // namespace gloowatch
