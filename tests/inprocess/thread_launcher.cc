#include "tests/inprocess/thread_launcher.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "transport/transport.h"

namespace gloowatch::inprocess {
namespace {

class TransportThread final : public LaunchedTransport {
 public:
  TransportThread(std::unique_ptr<Transport> transport, std::shared_ptr<std::atomic<int>> alive)
      : transport_(std::move(transport)), alive_(std::move(alive)) {
    ++*alive_;
    thread_ = std::thread([this] { code_ = transport_->Run(); });
  }
  ~TransportThread() override {
    if (transport_ != nullptr) {
      Kill();
      Wait();
    }
  }

  std::string name() const override { return "thread"; }
  pid_t pid() const override { return -1; }
  void Kill() override {
    if (transport_ != nullptr) transport_->Stop();
  }
  std::string Wait() override {
    if (thread_.joinable()) thread_.join();
    if (transport_ != nullptr) {
      transport_.reset();
      --*alive_;
    }
    return absl::StrCat("exited with code ", code_);
  }

 private:
  std::unique_ptr<Transport> transport_;
  const std::shared_ptr<std::atomic<int>> alive_;
  int code_ = -1;  // written by thread_, read after joining it
  std::thread thread_;
};

}  // namespace

ThreadLauncher::ThreadLauncher(const Clock* clock)
    : clock_(clock), alive_(std::make_shared<std::atomic<int>>(0)) {}

absl::StatusOr<std::unique_ptr<LaunchedTransport>> ThreadLauncher::Launch(
    int fd, const std::string& gloo_address) {
  return std::make_unique<TransportThread>(std::make_unique<Transport>(gloo_address, fd, clock_),
                                           alive_);
}

}  // namespace gloowatch::inprocess
