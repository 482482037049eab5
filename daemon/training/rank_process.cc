#include "daemon/training/rank_process.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "daemon/system/proc_fs.h"

namespace gloowatch {

RankProcessState RankProcessStateOf(const RankProcess& p, const std::string& proc_root) {
  if (p.pid == 0) return RankProcessState::kUnknown;
  absl::StatusOr<std::string> stat = ReadProcFile(absl::StrCat(proc_root, "/", p.pid, "/stat"));
  if (!stat.ok()) return RankProcessState::kGone;
  // "pid (comm) S ppid ...": comm may hold spaces and parentheses, so the
  // fields are counted from the last ')'; the state is field 3, the start
  // time field 22.
  const size_t paren = stat->rfind(')');
  if (paren == std::string::npos) return RankProcessState::kUnknown;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(*stat).substr(paren + 1), ' ', absl::SkipEmpty());
  if (fields.size() < 20 || fields[0].size() != 1) return RankProcessState::kUnknown;
  uint64_t start = 0;
  if (!absl::SimpleAtoi(fields[19], &start)) return RankProcessState::kUnknown;
  if (p.start_time_ticks != 0 && start != p.start_time_ticks) return RankProcessState::kGone;
  switch (fields[0][0]) {
    case 'T':
    case 't':
      return RankProcessState::kStopped;
    case 'Z':
    case 'X':
    case 'x':
      return RankProcessState::kGone;
    default:
      return RankProcessState::kRunning;
  }
}

const char* RankProcessStateName(RankProcessState state) {
  switch (state) {
    case RankProcessState::kRunning:
      return "running";
    case RankProcessState::kStopped:
      return "stopped";
    case RankProcessState::kGone:
      return "gone";
    case RankProcessState::kUnknown:
      break;
  }
  return "";
}

}  // namespace gloowatch
