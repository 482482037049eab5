#include "client/health/serve.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/health/html_page.h"
#include "client/health/render.h"

namespace gloowatch::client {

PageSnapshot SnapshotOf(const absl::StatusOr<ClusterPicture>& picture, absl::Duration refresh) {
  const int seconds = static_cast<int>(std::ceil(absl::ToDoubleSeconds(refresh)));
  if (picture.ok()) {
    return {RenderHealthHtml(*picture, {seconds}), HealthToJson(*picture).dump(2)};
  }
  const std::string error(picture.status().message());
  return {absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<meta http-equiv=\"refresh\" content=\"",
                       seconds,
                       "\"><title>gloowatch: no cluster picture</title></head><body>"
                       "<h1 id=\"verdict\">no cluster picture</h1><p id=\"error\">",
                       HtmlEscape(error), "</p></body></html>\n"),
          nlohmann::json{{"schema", "gloowatch.health.v1"}, {"error", error}}.dump(2)};
}

namespace {
int stop_pipe[2] = {-1, -1};
}  // namespace

absl::Status ServeHealth(PageServer& server, const ObserveCluster& observe,
                         absl::Duration refresh) {
  // The signals write to a pipe the server polls, whichever thread (gRPC has
  // its own) they land on.
  if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  struct sigaction stop {};
  stop.sa_handler = [](int) { (void)!write(stop_pipe[1], "x", 1); };
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  server.Publish(SnapshotOf(observe(), refresh));
  absl::Notification done;
  // Each observation is bounded by the per-call deadline, so the join below
  // waits at most one of them.
  std::thread refresher([&] {
    while (!done.WaitForNotificationWithTimeout(refresh)) {
      server.Publish(SnapshotOf(observe(), refresh));
    }
  });
  absl::Status served = server.Serve(stop_pipe[0]);
  done.Notify();
  refresher.join();
  close(stop_pipe[0]);
  close(stop_pipe[1]);
  return served;
}

}  // namespace gloowatch::client
