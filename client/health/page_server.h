// The HTTP server of `gloowatch serve`: GET / (the heatmap page) and
// GET /health.json, from the latest snapshot another thread publishes. One
// poll thread, bounded everywhere: a request must arrive whole within the
// timeout and fit in max_request_bytes, at most max_connections are open
// (more get 503 at once), anything but GET of a known path gets 4xx; the
// request rules are the daemon's /metrics server's (common/http_request.h).
// One request a connection.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/core/targets.h"
#include "common/http_request.h"

namespace gloowatch::client {

struct PageServerOptions {
  absl::Duration request_timeout = absl::Seconds(5);  // accept to last byte sent
  size_t max_connections = 32;
  size_t max_request_bytes = kMaxRequestHeadBytes;
};

struct PageSnapshot {
  std::string html;
  std::string json;
};

class PageServer {
 public:
  // Binds and listens on `at` (a host name or literal address).
  static absl::StatusOr<std::unique_ptr<PageServer>> Listen(const Endpoint& at,
                                                            const PageServerOptions& options);
  ~PageServer();
  PageServer(const PageServer&) = delete;
  PageServer& operator=(const PageServer&) = delete;

  int port() const { return port_; }
  // Thread-safe; requests in flight keep the snapshot they started with.
  void Publish(PageSnapshot snapshot);
  // Serves until `stop_fd` (a pipe) becomes readable.
  absl::Status Serve(int stop_fd);

 private:
  PageServer(int fd, int port, const PageServerOptions& options)
      : fd_(fd), port_(port), options_(options) {}
  std::shared_ptr<const PageSnapshot> Current();

  const int fd_;
  const int port_;
  const PageServerOptions options_;
  absl::Mutex mu_;
  std::shared_ptr<const PageSnapshot> snapshot_ ABSL_GUARDED_BY(mu_);
};

// The response to one raw request head (through the blank line), with its
// body taken from `snapshot` (null: none yet, 503). Exposed for tests.
std::string RespondTo(absl::string_view request_head, const PageSnapshot* snapshot);

}  // namespace gloowatch::client
