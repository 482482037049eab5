#include "daemon/proc_fs.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace gloowatch {

absl::StatusOr<std::string> ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

absl::StatusOr<std::vector<std::string>> ListProcDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return absl::NotFoundError(absl::StrCat("cannot list ", dir));
  std::vector<std::string> names;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

}  // namespace gloowatch
