#include "client/explain_log/unrecognised.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "re2/re2.h"

namespace gloowatch::client {
namespace {

RE2::Options Options(bool case_sensitive) {
  RE2::Options options;
  options.set_case_sensitive(case_sensitive);
  options.set_log_errors(false);
  options.set_encoding(RE2::Options::EncodingLatin1);
  return options;
}

bool Matches(const RE2& re, absl::string_view s) {
  return RE2::PartialMatch(re2::StringPiece(s.data(), s.size()), re);
}

const LogSignature kUnrecognised[] = {
    {kUnrecognisedId, "", LogSeverity::kError, Stage::kProcess,
     "An error of the distributed stack (PyTorch's c10d, Gloo, the launcher) that no signature "
     "knows; low confidence, the line itself is the evidence. By its words, most likely a "
     "process that died or was stopped.",
     "Find why the process ended: the rank's own log above the line, `dmesg -T` / `journalctl "
     "-k` for the OOM killer, the scheduler's record of the job."},
    {kUnrecognisedId, "", LogSeverity::kError, Stage::kSetup,
     "An error of the distributed stack (PyTorch's c10d, Gloo, the launcher) that no signature "
     "knows; low confidence, the line itself is the evidence. By its words, most likely the "
     "set-up: an argument, an option, the environment or the build.",
     "Check what the line names in the process group's set-up: init_method, MASTER_ADDR / "
     "MASTER_PORT, world size and rank, the backend, GLOO_SOCKET_IFNAME, one PyTorch version on "
     "every host (`gloowatch diagnose`, `gloowatch preflight`)."},
    {kUnrecognisedId, "", LogSeverity::kError, Stage::kConnect,
     "An error of the distributed stack (PyTorch's c10d, Gloo, the launcher) that no signature "
     "knows; low confidence, the line itself is the evidence. By its words, most likely "
     "connecting: reaching a peer or the store.",
     "Check that the address and port the line names are reachable from this host: the "
     "interface (GLOO_SOCKET_IFNAME), firewalls between the hosts, the store's host and port "
     "(`gloowatch preflight` connects the real Gloo mesh)."},
    {kUnrecognisedId, "", LogSeverity::kError, Stage::kPeerGone,
     "An error of the distributed stack (PyTorch's c10d, Gloo, the launcher) that no signature "
     "knows; low confidence, the line itself is the evidence. By its words, most likely a "
     "peer's connection that ended.",
     "Read the other ranks' logs around that time for the first failure (a killed or crashed "
     "rank); `gloowatch health` shows links that went down."},
    {kUnrecognisedId, "", LogSeverity::kError, Stage::kWait,
     "An error of the distributed stack (PyTorch's c10d, Gloo, the launcher) that no signature "
     "knows; low confidence, the line itself is the evidence. By its words, most likely a "
     "timeout: something never arrived.",
     "Find the rank that did not reach the same call (its log, `gloowatch job`) or a link that "
     "dropped traffic (`gloowatch health`)."},
};

}  // namespace

const char* FallbackPatternRegex(FallbackPattern p) {
  switch (p) {
    case kErrorShape:
      // An exception with its message (or alone at the end), Gloo's
      // enforce, an uncaught C++ exception, c10's error tag, a logger's
      // ERROR. Not c10d's "errno: N" alone: its socket warnings say it.
      return R"((?-i:\b(?:[A-Z]\w*)?(?:Error|Exception)(?::|$)|\[enforce fail at |terminate called after throwing|\bwhat\(\):|\[E(?:\d{3,4} [\d:.]+)? ?[\w.]+\.(?:cpp|cc|h|hpp):\d+\]|\b(?:ERROR|CRITICAL|FATAL)\b))";
    case kStackWords:
      return R"(gloo|c10d|processgroup|tcpstore|filestore|hashstore|prefixstore|store_based_barrier|rendezvous|torch\.distributed|torch/distributed|\bdist(?:backend|network|store)?error\b|\bsocket\b|init_process_group|master_(?:addr|port)|\bnccl|\berrno: ?\d+|connection (?:refused|reset|closed|timed out|aborted)|torchrun|\belastic\b|horovod|\bcollective|\ball_?reduce|\ball_?gather|reduce_scatter|\bbarrier\b|\bworld_size\b|\bmpirun\b|deepspeed)";
    case kOtherStack:
      return R"(https?://|https?connectionpool|urllib3|requests\.exceptions|huggingface|aiohttp|wandb)";
    case kTracebackStart:
      return R"(Traceback \(most recent call last\))";
    case kDistributedFrame:
      return R"(^\s*File "[^"]*(?:torch/distributed|/gloo))";
    case kFallbackPatterns:
      break;
  }
  return "";
}

const LogSignature& UnrecognisedSignature(Stage stage) {
  for (const LogSignature& s : kUnrecognised) {
    if (s.stage == stage) return s;
  }
  return kUnrecognised[1];  // setup
}

bool IsUnrecognised(const LogSignature& s) {
  return &s >= std::begin(kUnrecognised) && &s < std::end(kUnrecognised);
}

Stage UnrecognisedStage(absl::string_view line) {
  static const RE2* process = new RE2(
      R"(\bSIG(?:KILL|SEGV|ABRT|BUS|TERM|INT|HUP)\b|\bsignal \d+|\bkilled\b|segmentation fault|core dumped|\baborted\b|\bexit ?code\b|exitcode|exit status|out of memory|\boom\b)",
      Options(false));
  static const RE2* peer_gone = new RE2(
      R"(reset by peer|closed by peer|broken pipe|connection (?:was )?(?:reset|closed|lost|aborted)|peer (?:closed|disconnected|died|went away|is gone)|unexpected(?:ly)? (?:eof|end of file|closed)|\beof\b|socket (?:unexpectedly )?closed|remote (?:end|side|peer) (?:closed|hung up))",
      Options(false));
  static const RE2* connect = new RE2(
      R"(connect|refused|unreachable|no route|resolve|getaddrinfo|gai error|name or service|host not found|nodename|address not available|cannot assign requested address)",
      Options(false));
  static const RE2* timeout = new RE2(R"(timed? ?out|timeout|deadline exceeded)", Options(false));
  if (Matches(*process, line)) return Stage::kProcess;
  if (Matches(*peer_gone, line)) return Stage::kPeerGone;
  if (Matches(*connect, line)) return Stage::kConnect;
  if (Matches(*timeout, line)) return Stage::kWait;
  return Stage::kSetup;
}

const char* StageCategory(Stage stage) {
  switch (stage) {
    case Stage::kProcess:
      return "process";
    case Stage::kSetup:
      return "setup";
    case Stage::kConnect:
      return "connect";
    case Stage::kPeerGone:
      return "peer_gone";
    case Stage::kWait:
      return "timeout";
    case Stage::kExited:
      return "exited";
    case Stage::kAftermath:
      return "aftermath";
  }
  return "";
}

bool TracebackTracker::Ends(absl::string_view stream, absl::string_view text, bool traceback_start,
                            bool distributed_frame) {
  auto open =
      std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.stream == stream; });
  if (traceback_start) {
    if (open == open_.end()) {
      if (open_.size() >= 32) open_.erase(open_.begin());
      open_.push_back({std::string(stream), false});
    } else {
      open->distributed = false;
    }
    return false;
  }
  if (open == open_.end()) return false;
  if (distributed_frame) {
    open->distributed = true;
    return false;
  }
  // Frames and their code are indented; the first line that is not ends
  // the traceback, and is its exception when it has an exception's shape.
  if (text.empty() || text[0] == ' ' || text[0] == '\t') return false;
  static const RE2* exception = new RE2(
      R"(^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b(?::|$))", Options(true));
  const bool ends = open->distributed && Matches(*exception, text);
  open_.erase(open);
  return ends;
}

bool ReportUnrecognised(absl::string_view text, char prefix_level, bool logged_as_warning) {
  if (prefix_level == 'W' || prefix_level == 'I' || logged_as_warning) return false;
  static const RE2* info_tag =
      new RE2(R"(\[I(?:\d{3,4} [\d:.]+)? ?[\w.]+\.(?:cpp|cc|h|hpp):\d+\])", Options(true));
  // A Python logger's level near the start of the line (not "NCCL_DEBUG=INFO"
  // in a message).
  static const RE2* level = new RE2(
      R"(^.{0,64}?(?:^|[^=_\w])(WARNING|WARN|INFO|DEBUG|ERROR|CRITICAL|FATAL)\b)", Options(true));
  static const RE2* not_a_report =
      new RE2(R"(ChildFailedError|^\s*(?:raise\b|except\b|File "))", Options(true));
  // Errors the stack prints after the failure it already reported, or by
  // design (the catalogue's not_a_cause entries): never a cause of their own.
  static const RE2* follow_up = new RE2(
      R"(has been removed from elastic job|terminate called after throwing|server socket on \S+ is not listening for connections|subsequent GPU operations might run on corrupted|we are taking the entire process down|Received a (?:dump signal|global timeout)|Stack trace of the failed collective not found)",
      Options(true));
  if (Matches(*info_tag, text) || Matches(*not_a_report, text) || Matches(*follow_up, text)) {
    return false;
  }
  std::string word;
  if (RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *level, &word)) {
    if (word == "WARNING" || word == "WARN" || word == "INFO" || word == "DEBUG") return false;
  }
  return true;
}

}  // namespace gloowatch::client
