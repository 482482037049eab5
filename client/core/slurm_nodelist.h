// Slurm host lists ("node[01-04,07],gpu-a", as in SLURM_JOB_NODELIST and
// `scontrol show hostnames`) expanded into host names.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gloowatch::client {

// Expands every bracket group (several per name multiply: "r[1-2]n[1-2]" is
// four hosts), keeping the zero padding of the lower bound ("[08-10]" gives
// 08, 09, 10). More than `max_names` hosts, nested or unclosed brackets, a
// range whose start exceeds its end or a non-numeric bound are errors.
absl::StatusOr<std::vector<std::string>> ExpandNodeList(absl::string_view text,
                                                        size_t max_names = 4096);

}  // namespace gloowatch::client
