#include "client/serve.h"

#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/html_page.h"
#include "client/render.h"

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

absl::Status ServeHealth(PageServer& server, const ObserveCluster& observe, absl::Duration refresh,
                         int stop_fd) {
  server.Publish(SnapshotOf(observe(), refresh));
  absl::Notification stop;
  // Each observation is bounded by the per-call deadline, so the join below
  // waits at most one of them.
  std::thread refresher([&] {
    while (!stop.WaitForNotificationWithTimeout(refresh)) {
      server.Publish(SnapshotOf(observe(), refresh));
    }
  });
  absl::Status served = server.Serve(stop_fd);
  stop.Notify();
  refresher.join();
  return served;
}

}  // namespace gloowatch::client
