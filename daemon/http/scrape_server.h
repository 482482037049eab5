// The /metrics HTTP endpoint: one thread, non-blocking sockets, a deadline
// on every connection. A client that connects and sends nothing, trickles a
// request or never reads its answer holds a few kilobytes until its deadline,
// never a thread, so it cannot hold back other scrapers (a thread-per-
// connection server is blocked by as many silent sockets as it has threads).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config.h"
#include "common/http_request.h"
#include "daemon/http/basic_auth.h"
#include "daemon/http/tls_stream.h"

namespace gloowatch {

class ScrapeServer {
 public:
  struct Options {
    // Open connections; at the limit a new one evicts the oldest that has
    // not sent a whole request yet.
    size_t max_connections = 256;
    // From accepting a connection (or answering its previous request) to
    // the end of the next request's header.
    absl::Duration request_timeout = absl::Seconds(3);
    // To write a whole answer.
    absl::Duration response_timeout = absl::Seconds(10);
    size_t max_request_bytes = kMaxRequestHeadBytes;
    // TLS on every connection when set; plain HTTP otherwise.
    std::shared_ptr<const TlsServerContext> tls;
    // Every request must pass it when set (401 otherwise). Used only by the
    // server's thread.
    std::shared_ptr<BasicAuth> basic_auth;
  };
  // The body of a GET /metrics (Prometheus text format), rendered on the
  // server's thread for every scrape.
  using Render = std::function<std::string()>;

  // The TLS and basic auth `web` asks for, on the default limits. Fails
  // (never throws) when a TLS file is bad.
  static absl::StatusOr<Options> OptionsFor(const MetricsWebConfig& web);

  // Listens on host:port ("[::1]:9100" for IPv6) and serves until destroyed.
  static absl::StatusOr<std::unique_ptr<ScrapeServer>> Start(const std::string& host_port,
                                                             Render render, Options options);
  ~ScrapeServer();
  ScrapeServer(const ScrapeServer&) = delete;
  ScrapeServer& operator=(const ScrapeServer&) = delete;

  int port() const { return port_; }

 private:
  class Loop;
  ScrapeServer(std::unique_ptr<Loop> loop, int port);

  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  int port_;
};

}  // namespace gloowatch
