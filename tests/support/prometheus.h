// The one way tests run a real Prometheus server (Debian's package): its
// config and its process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/daemon_process.h"

namespace gloowatch::testing {

inline constexpr char kPrometheus[] = "/usr/bin/prometheus";

// "127.0.0.1:<port>" for each of `ports`.
std::vector<std::string> LoopbackTargets(const std::vector<int>& ports);

// A prometheus.yml that scrapes every "host:port" of `targets` every second
// as job "gloowatch" (and evaluates `rule_file`, if given).
std::string PrometheusYaml(const std::vector<std::string>& targets,
                           const std::string& rule_file = "");

struct PrometheusOptions {
  // Appended to Prometheus's own flags (e.g. --web.config.file=...).
  std::vector<std::string> extra_flags;
  // Put in front of the command, e.g. {"ip", "netns", "exec", ns} to run it
  // in a namespace (where it listens on that namespace's loopback).
  std::vector<std::string> wrapper;
};

// Starts kPrometheus on 127.0.0.1:port with `config`, its TSDB and log in
// `dir`.
std::unique_ptr<Process> StartPrometheus(const std::string& config, const std::string& dir,
                                         int port, const PrometheusOptions& options = {});

// An instant query (/api/v1/query) of the Prometheus on 127.0.0.1:port: the
// answer's "data" object, or why not (no answer, or not "success": the body).
absl::StatusOr<nlohmann::json> PrometheusQuery(int port, const std::string& promql);

}  // namespace gloowatch::testing
