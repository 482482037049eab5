// The prefixes that loggers, launchers and log collectors put in front of a
// message: timestamps (ISO, syslog, glog, dmesg), PyTorch's "[rankN]:",
// torchrun's "[default0]:", Ray's "(pid=123)", srun's "0: ", mpirun's
// "[1,0]<stderr>:", Kubernetes' "...Z stderr F ", journald's "host
// unit[pid]: ", docker compose's "svc-1  | ", pdsh's "worker-1: ". Peeling
// them leaves the message as its program printed it, so a pattern anchored at
// the start still matches and a wrapped message can be told from the next
// record of the same writer.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace gloowatch::client {

struct LinePrefix {
  // Bytes of the line the prefixes take (with the blank after them).
  size_t length = 0;
  // Who wrote the line: the prefixes that name a writer (rank, task, pid,
  // container, unit), times left out; "" when no such prefix.
  std::string stream;
  // Where the first timestamp starts, when one was peeled.
  bool timestamped = false;
  size_t time_at = 0;
  // glog's severity letter (I, W, E, F) when its prefix was peeled, else 0.
  char level = 0;
  // N of PyTorch's "[rankN]:", or "".
  std::string rank;
  // Kubernetes' CRI "P": the record goes on in the stream's next line.
  bool partial = false;
};

// The prefixes at the start of `line` (a line without its newline). Only
// shapes a logger writes there are taken: text that merely looks like one
// later in the line is message.
LinePrefix PeelPrefix(absl::string_view line);

}  // namespace gloowatch::client
