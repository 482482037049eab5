// netns_fault_bed: starts and stops a fault-catalogue bed that outlives one
// test process (tests/support/fault_bed_keeper.h), for ctest's fixtures:
//
//   netns_fault_bed up   --bed racks|job --dir DIR [--schedule fast|default]
//   netns_fault_bed down --bed racks|job --dir DIR
//
// `up` returns once the bed runs (exit 0; it prints "[  SKIPPED ]" without
// root, or for the job bed without torch); `down` removes it. See
// docs/testing.md, "The fault catalogue".
#include <iostream>
#include <string>
#include <vector>

#include "tests/support/fault_bed_keeper.h"
#include "tests/support/netns_cluster.h"

namespace {

int Usage() {
  std::cerr << "usage: netns_fault_bed up|down --bed racks|job --dir DIR "
               "[--schedule fast|default]\n";
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  using gloowatch::testing::CatalogueBed;
  using gloowatch::testing::CatalogueSchedule;
  if (argc < 2) return Usage();
  const std::string command = argv[1];
  std::string bed_name, dir, schedule_name = "fast";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--bed") {
      bed_name = value;
    } else if (flag == "--dir") {
      dir = value;
    } else if (flag == "--schedule") {
      schedule_name = value;
    } else {
      return Usage();
    }
  }
  const std::optional<CatalogueBed> bed = gloowatch::testing::CatalogueBedNamed(bed_name);
  if (!bed || dir.empty() || (schedule_name != "fast" && schedule_name != "default")) {
    return Usage();
  }
  if (command == "down") return gloowatch::testing::KeeperDown(dir, *bed);
  if (command != "up") return Usage();
  if (*bed == CatalogueBed::kJob &&
      !gloowatch::testing::RunCommand({"/usr/bin/python3", "-c", "import torch, grpc"},
                                      absl::Seconds(60))
           .ok()) {
    std::cout << "[  SKIPPED ] /usr/bin/python3 cannot import torch and grpc" << std::endl;
    return 0;
  }
  return gloowatch::testing::KeeperUp(
      dir, *bed, schedule_name == "fast" ? CatalogueSchedule::kFast : CatalogueSchedule::kDefault);
}
