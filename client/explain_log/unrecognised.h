// The fallback when no signature matches: a line that is plainly an error of
// the distributed stack (an exception, c10's "[E ...]", Gloo's "[enforce
// fail at", a logger's ERROR, c10d's "errno: N", together with words of
// torch.distributed, c10d, Gloo, the store, rendezvous, sockets; or the
// exception that ends a traceback through torch.distributed) is still
// reported, as "unrecognised_distributed_error", with the most likely
// category by its words and low confidence. It never outranks a signature.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/explain_log/signatures.h"

namespace gloowatch::client {

inline constexpr char kUnrecognisedId[] = "unrecognised_distributed_error";

// What the fallback adds to the signature set, after the table's patterns:
// whether a line has an error's shape, words of the distributed stack, words
// of another stack that uses the same ones (HTTP clients), a traceback's
// start, or a frame in torch.distributed.
enum FallbackPattern {
  kErrorShape,
  kStackWords,
  kOtherStack,
  kTracebackStart,
  kDistributedFrame,
  kFallbackPatterns,
};
const char* FallbackPatternRegex(FallbackPattern p);

// The pseudo-signature an unrecognised error of `stage` is reported as:
// process, setup, connect, peer gone or wait (timeout).
const LogSignature& UnrecognisedSignature(Stage stage);
bool IsUnrecognised(const LogSignature& s);
// The most likely stage of an error by its words (setup when none says).
Stage UnrecognisedStage(absl::string_view line);
// "process", "setup", "connect", "peer_gone", "timeout", "exited", "aftermath".
const char* StageCategory(Stage stage);

// Follows each writer's tracebacks (by its prefix), so that the exception
// line ending one that went through torch.distributed counts as the stack's
// even when its own words do not say so. Bounded: a log with very many
// writers forgets the oldest.
class TracebackTracker {
 public:
  // Feeds one logical line (no signature matched it or not) with the set's
  // view of it; returns whether it is the exception line that ends a
  // traceback through torch.distributed.
  bool Ends(absl::string_view stream, absl::string_view text, bool traceback_start,
            bool distributed_frame);

 private:
  struct Open {
    std::string stream;
    bool distributed = false;
  };
  std::vector<Open> open_;
};

// Whether a line with an error's shape and the stack's words (or ending a
// distributed traceback) is reported: not when it was logged as a warning or
// information, nor the launcher's summary (ChildFailedError, its own causes
// are listed below it), nor a traceback's code line.
bool ReportUnrecognised(absl::string_view text, char prefix_level, bool logged_as_warning);

}  // namespace gloowatch::client
