#include "daemon/training/job_sockets.h"

#include <netinet/in.h>

#include <algorithm>
#include <utility>

#include "common/proto_time.h"

namespace gloowatch {
namespace {

// The states of sockets a process holds: a connection the peer closed
// (close_wait) or one still connecting is evidence too. Not LISTEN, nor
// TIME_WAIT (6) and NEW_SYN_RECV (12), which belong to no process.
constexpr uint32_t kStates = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 7) |
                             (1u << 8) | (1u << 9) | (1u << 11);

class SockDiagSocketTable final : public TcpSocketTable {
 public:
  absl::Status Visit(int family, const std::function<bool(uint64_t inode)>& keep,
                     const std::function<void(const TcpDiagEntry&)>& visit) const override {
    return DumpTcpSockets(family, kStates, keep, visit);
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
  absl::MutexLock read_lock(&read_mu_);
  std::vector<std::pair<TcpDiagEntry, Wanted>> found;
  found.reserve(wanted.size());
  // The wanted inodes the walks met (found, or the reporter's channel).
  size_t met = 0;
  std::vector<uint64_t> passed_over;
  const Wanted* want = nullptr;  // of the inode `keep` just accepted
  auto keep = [&](uint64_t inode) {
    auto it = inode == 0 ? wanted.end() : wanted.find(inode);
    want = it == wanted.end() ? nullptr : &it->second;
    return want != nullptr;
  };
  bool ipv6 = false;
  auto visit = [&](const TcpDiagEntry& e) {
    ++met;
    if (!e.info || (e.remote.SameHost(e.local) && std::find(own_ports_.begin(), own_ports_.end(),
                                                            e.remote.port) != own_ports_.end())) {
      passed_over.push_back(e.inode);  // the reporter's channel to us
      return;
    }
    ipv6 = ipv6 || e.local.family == AF_INET6;
    found.emplace_back(e, *want);
  };
  absl::Status status = absl::OkStatus();
  if (!wanted.empty()) status = table_->Visit(AF_INET, keep, visit);
  // Inodes the IPv4 walk did not meet: only these need the IPv6 table.
  auto unmet = [&] {
    std::unordered_set<uint64_t> seen(passed_over.begin(), passed_over.end());
    for (const auto& f : found) seen.insert(f.first.inode);
    std::vector<uint64_t> out;
    for (const auto& [inode, w] : wanted) {
      if (!seen.count(inode)) out.push_back(inode);
    }
    return out;
  };
  bool walk_ipv6 = ipv6_found_;
  if (!walk_ipv6 && met < wanted.size()) {
    for (uint64_t inode : unmet()) walk_ipv6 = walk_ipv6 || !absent_.count(inode);
  }
  if (status.ok() && walk_ipv6) {
    status = table_->Visit(AF_INET6, keep, visit);
    ipv6_found_ = ipv6;
    const std::vector<uint64_t> absent = unmet();
    absent_ = std::unordered_set<uint64_t>(absent.begin(), absent.end());
  }
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  // Updated in place: a 64-rank job has 4,032 sockets on one host, read
  // every few seconds.
  ++generation_;
  for (const auto& [entry, want] : found) {
    const uint64_t cookie = (uint64_t{entry.cookie[1]} << 32) | entry.cookie[0];
    auto [it, added] = sockets_.try_emplace(entry.inode);
    Socket& socket = it->second;
    if (!added && socket.cookie != cookie) {
      socket = Socket{};  // the inode of another socket now
      added = true;
    }
    socket.cookie = cookie;
    socket.generation = generation_;
    Update(socket, entry, want, now, added);
  }
  for (auto it = sockets_.begin(); it != sockets_.end();) {
    it = it->second.generation == generation_ ? std::next(it) : sockets_.erase(it);
  }
  return status;
}

void JobSockets::Update(Socket& s, const TcpDiagEntry& e, const Wanted& want, absl::Time now,
                        bool added) const {
  const TcpInfo& info = *e.info;
  v1::JobSocket& f = s.figures;
  if (added) {  // a socket's addresses never change
    f.set_local(e.local.ToString());
    f.set_remote(e.remote.ToString());
  }
  const bool store =
      want.store_port != 0 && (e.local.port == want.store_port || e.remote.port == want.store_port);
  if (added || store != (f.kind() == "store")) f.set_kind(store ? "store" : "pair");
  if (added || e.state != s.state) f.set_state(TcpStateName(e.state));
  s.state = e.state;
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
