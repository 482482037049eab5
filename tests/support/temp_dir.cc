#include "tests/support/temp_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace gloowatch::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = absl::StrCat(base ? base : "/tmp", "/gloowatch-test-XXXXXX");
  path_ = mkdtemp(templ.data());
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  const std::string path = absl::StrCat(path_, "/", name);
  std::ofstream(path) << contents;
  return path;
}

}  // namespace gloowatch::testing
