// What /proc says about the process of a training rank that reports to this
// daemon (TrainingJobStatus.process): whether a silent rank is stopped (its
// process exists in state T) or gone (no such process any more).
#pragma once

#include <cstdint>
#include <string>

namespace gloowatch {

struct RankProcess {
  uint32_t pid = 0;
  uint64_t start_time_ticks = 0;  // /proc/PID/stat field 22; 0: not checked
};

enum class RankProcessState { kUnknown, kRunning, kStopped, kGone };

// Reads <proc_root>/<pid>/stat. kGone when it is missing, a zombie, or a
// different process (another start time); kUnknown when it cannot be parsed.
RankProcessState RankProcessStateOf(const RankProcess& process,
                                    const std::string& proc_root = "/proc");

// "running", "stopped", "gone", "" for unknown.
const char* RankProcessStateName(RankProcessState state);

}  // namespace gloowatch
