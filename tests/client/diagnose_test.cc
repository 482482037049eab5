#include "client/diagnose/diagnose.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

FetchResult Daemon(const std::string& node, uint32_t eph_lo, uint32_t eph_hi) {
  FetchResult r;
  r.target.name = node;
  r.target.endpoint = {"10.0.0." + std::to_string(node.back() - 'a' + 1), 7601};
  v1::NodeStatus s;
  s.set_node(node);
  s.set_version("0.1.0");
  s.set_gloo_version("0.5.0");
  s.mutable_gloo()->set_interface("eth0");
  s.mutable_gloo()->set_mtu(1500);
  s.set_ephemeral_port_low(eph_lo);
  s.set_ephemeral_port_high(eph_hi);
  auto* t = s.mutable_thresholds();
  t->set_latency_seconds(0.002);
  t->set_bandwidth_link_ratio(0.8);
  t->set_clock_offset_seconds(0.1);
  r.status = s;
  return r;
}

v1::PeerStatus* AddPeer(FetchResult& d, const std::string& name, const std::string& grpc,
                        v1::PeerState state) {
  auto* p = d.status->add_peers();
  p->set_name(name);
  p->set_grpc_address(grpc);
  p->set_state(state);
  return p;
}

HostScan Scan(const std::string& host, std::vector<std::pair<uint16_t, PortState>> ports) {
  HostScan s;
  s.host = host;
  for (auto [p, st] : ports) {
    PortResult r;
    r.port = p;
    r.state = st;
    s.ports.push_back(r);
  }
  return s;
}

TEST(CompressPorts, Ranges) {
  EXPECT_EQ(CompressPorts({1, 2, 3, 5, 7, 8}), "1-3,5,7-8");
  EXPECT_EQ(CompressPorts({}), "");
}

TEST(CheckPortScan, FilteredFails) {
  Check c = CheckPortScan(Scan("h", {{1, PortState::kOpen},
                                     {2, PortState::kFiltered},
                                     {3, PortState::kRefused},
                                     {4, PortState::kFiltered}}));
  EXPECT_EQ(c.status, Severity::kFail);
  EXPECT_THAT(c.evidence, Contains("filtered: 2,4"));
  EXPECT_THAT(c.remediation, HasSubstr("ephemeral"));
  EXPECT_EQ(CheckPortScan(Scan("h", {{1, PortState::kRefused}})).status, Severity::kPass);
}

TEST(CheckEphemeralPorts, TrapExplainedWhenRendezvousOpenButPeerDown) {
  FetchResult a = Daemon("node-a", 32768, 60999);
  AddPeer(a, "node-b", "10.0.0.2:7601", v1::PEER_STATE_DOWN)
      ->mutable_last_failure()
      ->set_message("Connect timeout [10.0.0.2]:45123");
  Check c = CheckEphemeralPorts({a}, {Scan("10.0.0.2", {{29500, PortState::kOpen}})});
  EXPECT_EQ(c.status, Severity::kFail);
  EXPECT_THAT(c.remediation, HasSubstr("pytorch/pytorch#44544"));
  EXPECT_THAT(c.remediation, HasSubstr("pytorch/gloo#54"));
  EXPECT_THAT(c.remediation, HasSubstr("EPHEMERAL"));
}

TEST(CheckEphemeralPorts, SmallRangeWarns) {
  Check c = CheckEphemeralPorts({Daemon("node-a", 50000, 55000)}, {});
  EXPECT_EQ(c.status, Severity::kWarn);
  EXPECT_THAT(c.remediation, HasSubstr("pytorch/pytorch#97677"));
  EXPECT_EQ(CheckEphemeralPorts({Daemon("node-a", 32768, 60999)}, {}).status, Severity::kPass);
}

TEST(CheckInterface, MissingDownNoAddressLoopback) {
  HostnameInfo h{"host", {"10.0.0.1"}, true, false};
  InterfaceFacts up{{"eth0", true, false, {"10.0.0.1", "fe80::1%eth0"}}, 1500};
  Check passed = CheckInterface({"eth0"}, {up}, h, true);
  EXPECT_EQ(passed.status, Severity::kPass);
  ASSERT_EQ(passed.evidence.size(), 1u);
  EXPECT_EQ(passed.evidence[0], "eth0: up, mtu 1500, addresses 10.0.0.1 fe80::1");
  InterfaceFacts down = up;
  down.info.up = false;
  EXPECT_EQ(CheckInterface({"eth0"}, {down}, h, true).status, Severity::kFail);
  InterfaceFacts noaddr = up;
  noaddr.info.addresses.clear();
  EXPECT_EQ(CheckInterface({"eth0"}, {noaddr}, h, true).status, Severity::kFail);
  Check c = CheckInterface({"eth9"}, {up}, h, true);  // the host has no eth9
  EXPECT_EQ(c.status, Severity::kFail);
  EXPECT_THAT(c.evidence[0], HasSubstr("Unable to find address for: eth9"));
  InterfaceFacts lo{{"lo", true, true, {"127.0.0.1"}}, 65536};
  EXPECT_EQ(CheckInterface({"lo"}, {lo}, h, true).status, Severity::kFail);
  EXPECT_EQ(CheckInterface({"lo"}, {lo}, h, false).status, Severity::kPass);
}

TEST(CheckInterface, HostnameOnLoopback) {
  HostnameInfo h{"box", {"127.0.1.1"}, true, true};
  EXPECT_EQ(CheckInterface({}, {}, h, true).status, Severity::kFail);
  EXPECT_EQ(CheckInterface({}, {}, h, false).status, Severity::kWarn);
}

TEST(CheckMtuAndConsistency, Differences) {
  FetchResult a = Daemon("node-a", 32768, 60999), b = Daemon("node-b", 32768, 60999);
  EXPECT_EQ(CheckMtu({a, b}).status, Severity::kPass);
  EXPECT_EQ(CheckConsistency({a, b}).status, Severity::kPass);
  b.status->mutable_gloo()->set_mtu(9000);
  b.status->set_gloo_version("0.6.0");
  EXPECT_EQ(CheckMtu({a, b}).status, Severity::kWarn);
  Check c = CheckConsistency({a, b});
  EXPECT_EQ(c.status, Severity::kWarn);
  EXPECT_THAT(c.summary, HasSubstr("gloo_version"));
}

TEST(CheckConsistency, DifferentNumbersOfGlooInterfacesFail) {
  FetchResult a = Daemon("node-a", 32768, 60999), b = Daemon("node-b", 32768, 60999);
  for (FetchResult* r : {&a, &b}) r->status->mutable_gloo()->set_source("env:GLOO_SOCKET_IFNAME");
  a.status->mutable_gloo()->add_socket_ifnames("eth0");
  a.status->mutable_gloo()->add_socket_ifnames("eth1");
  b.status->mutable_gloo()->add_socket_ifnames("eth0");
  Check c = CheckConsistency({a, b});
  EXPECT_EQ(c.status, Severity::kFail);
  EXPECT_THAT(c.summary, HasSubstr("different numbers of Gloo devices"));
  EXPECT_THAT(c.evidence,
              Contains(HasSubstr("2 Gloo devices: node-a (GLOO_SOCKET_IFNAME=eth0,eth1)")));
  EXPECT_THAT(c.evidence, Contains(HasSubstr("1 Gloo device: node-b (GLOO_SOCKET_IFNAME=eth0)")));
  // A host on its host name's address has one device too.
  b.status->mutable_gloo()->clear_socket_ifnames();
  b.status->mutable_gloo()->set_source("hostname");
  EXPECT_EQ(CheckConsistency({a, b}).status, Severity::kFail);
  // As many names everywhere (the names may differ per host): no failure.
  b.status->mutable_gloo()->set_source("env:GLOO_SOCKET_IFNAME");
  b.status->mutable_gloo()->add_socket_ifnames("ens5");
  b.status->mutable_gloo()->add_socket_ifnames("ens6");
  EXPECT_NE(CheckConsistency({a, b}).status, Severity::kFail);
  // A daemon whose own config picked the interface says nothing of the job's.
  b.status->mutable_gloo()->clear_socket_ifnames();
  b.status->mutable_gloo()->set_source("config:interface");
  EXPECT_NE(CheckConsistency({a, b}).status, Severity::kFail);
}

TEST(CheckConsistency, IPv4AndIPv6GlooAddressesFail) {
  FetchResult a = Daemon("node-a", 32768, 60999), b = Daemon("node-b", 32768, 60999);
  a.status->mutable_gloo()->set_address("10.0.0.1");
  b.status->mutable_gloo()->set_address("fd00::2");
  Check c = CheckConsistency({a, b});
  EXPECT_EQ(c.status, Severity::kFail);
  EXPECT_THAT(c.summary, HasSubstr("IPv4 and IPv6"));
  EXPECT_THAT(c.evidence, Contains(HasSubstr("node-b (fd00::2)")));
  b.status->mutable_gloo()->set_address("10.0.0.2");
  EXPECT_EQ(CheckConsistency({a, b}).status, Severity::kPass);
}

// Only literals and localhost: resolving them needs no name server.
TEST(CheckMasterAddr, WhatTheStoreWouldTrip) {
  EXPECT_EQ(CheckMasterAddr({}, true).status, Severity::kPass);
  Check with_port = CheckMasterAddr({{"MASTER_ADDR", "10.0.0.1:29500"}}, true);
  EXPECT_EQ(with_port.status, Severity::kFail);
  EXPECT_THAT(with_port.remediation, HasSubstr("MASTER_PORT"));
  EXPECT_EQ(CheckMasterAddr({{"MASTER_ADDR", "tcp://10.0.0.1"}}, true).status, Severity::kFail);
  EXPECT_EQ(CheckMasterAddr({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500x"}}, true).status,
            Severity::kFail);
  EXPECT_EQ(CheckMasterAddr({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}}, true).status,
            Severity::kPass);
  EXPECT_EQ(CheckMasterAddr({{"MASTER_ADDR", "fd00::1"}}, true).status, Severity::kPass);
  Check loopback = CheckMasterAddr({{"MASTER_ADDR", "127.0.0.1"}}, true);
  EXPECT_EQ(loopback.status, Severity::kFail);
  EXPECT_THAT(loopback.summary, HasSubstr("loopback"));
  EXPECT_EQ(CheckMasterAddr({{"MASTER_ADDR", "localhost"}}, false).status, Severity::kPass);
}

TEST(CheckThresholds, EachLimit) {
  FetchResult a = Daemon("node-a", 32768, 60999);
  auto* p = AddPeer(a, "node-b", "10.0.0.2:7601", v1::PEER_STATE_UP);
  p->mutable_latency()->set_p50_seconds(0.0005);
  p->mutable_bandwidth()->set_link_ratio(0.95);
  p->mutable_clock()->set_offset_seconds(0.001);
  EXPECT_EQ(CheckThresholds({a}).status, Severity::kPass);
  p->mutable_latency()->set_p50_seconds(0.005);
  p->mutable_bandwidth()->set_link_ratio(0.5);
  p->mutable_clock()->set_offset_seconds(-0.2);
  p->set_failures_in_window(3);
  Check c = CheckThresholds({a});
  EXPECT_EQ(c.status, Severity::kWarn);
  EXPECT_EQ(c.evidence.size(), 4u);
}

TEST(CheckEnvironment, DubiousVariables) {
  auto f = AuditEnvironment({{"GLOO_SOCKET_IFNAME", "^lo,docker0"},
                             {"GLOO_TIMEOUT_SECONDS", "3600"},
                             {"GLOO_DEVICE_TRANSPORT", "TCP"},
                             {"GLOO_TYPO_VAR", "1"},
                             {"PATH", "/bin"},
                             {"NCCL_SOCKET_IFNAME", "^lo"}});
  ASSERT_EQ(f.size(), 4u);  // map order
  EXPECT_EQ(f[0].name, "GLOO_DEVICE_TRANSPORT");
  EXPECT_EQ(f[0].severity, Severity::kPass);
  EXPECT_EQ(f[1].severity, Severity::kFail);  // ^ syntax
  EXPECT_THAT(f[1].message, HasSubstr("NCCL"));
  EXPECT_EQ(f[2].severity, Severity::kWarn);
  EXPECT_THAT(f[2].message, HasSubstr("init_process_group(timeout="));
  EXPECT_EQ(f[3].severity, Severity::kWarn);
  EXPECT_THAT(f[3].message, HasSubstr("unknown"));
  EXPECT_EQ(CheckEnvironment(f).status, Severity::kFail);
}

TEST(EnvTable, EveryListedVariable) {
  int pytorch = 0, gloo = 0, nobody = 0;
  for (const auto& v : KnownEnvVars()) {
    (v.reader == EnvReader::kPyTorch ? pytorch : v.reader == EnvReader::kGloo ? gloo : nobody)++;
  }
  EXPECT_EQ(pytorch, 7);
  EXPECT_EQ(gloo, 3);
  EXPECT_EQ(nobody, 9);
}

TEST(CheckTrainingConfig, LowTimeoutAndBackend) {
  const std::string path = ::testing::TempDir() + "/train.yaml";
  std::ofstream(path)
      << "dist_backend: nccl\ntimeout: 10\nnode_ip_addresses: [10.0.0.1, 10.0.0.9]\n";
  Check c = CheckTrainingConfig(path, {Daemon("node-a", 1, 2)});
  EXPECT_EQ(c.status, Severity::kWarn);
  EXPECT_THAT(c.remediation, HasSubstr("nccl"));
  EXPECT_THAT(c.remediation, HasSubstr("very low"));
  EXPECT_THAT(c.remediation, HasSubstr("10.0.0.9"));
  EXPECT_THAT(c.remediation, ::testing::Not(HasSubstr("10.0.0.1 ")));
  EXPECT_EQ(CheckTrainingConfig("/nonexistent.yaml", {}).status, Severity::kFail);
}

TEST(Report, ExitCodeAndJson) {
  Check pass, warn, fail;
  warn.status = Severity::kWarn;
  fail.status = Severity::kFail;
  EXPECT_EQ(MakeReport({pass}).ExitCode(), 0);
  EXPECT_EQ(MakeReport({pass, warn}).ExitCode(), 1);
  EXPECT_EQ(MakeReport({pass, warn, fail}).ExitCode(), 2);
  nlohmann::json j = ReportToJson(MakeReport({pass, warn}), DiagnoseOptions{});
  EXPECT_EQ(j["schema"], "gloowatch.diagnose.v1");
  EXPECT_EQ(j["summary"]["warn"], 1);
  EXPECT_EQ(j["summary"]["verdict"], "warn");
  EXPECT_EQ(j["exit_code"], 1);
}

PreflightHost Resolved(const std::string& name, const std::string& address,
                       const std::string& hostname_address) {
  PreflightHost h;
  h.target.name = name;
  v1::PreflightResolveResponse r;
  r.set_node(name);
  r.set_hostname(name);
  r.mutable_gloo()->set_address(address);
  r.mutable_gloo()->set_interface("eth0");
  r.mutable_gloo()->set_source("hostname");
  r.add_hostname_addresses(hostname_address);
  h.resolved = r;
  return h;
}

TEST(CheckJobResolution, PassesWhenEveryHostResolves) {
  Check c = CheckJobResolution(
      {Resolved("a", "10.0.0.1", "10.0.0.1"), Resolved("b", "10.0.0.2", "10.0.0.2")}, "");
  EXPECT_EQ(c.status, Severity::kPass);
  EXPECT_EQ(c.id, "job_resolution");
  EXPECT_THAT(c.summary, HasSubstr("resolves on 2 hosts (GLOO_SOCKET_IFNAME unset)"));
  EXPECT_THAT(c.evidence, Contains("a: 10.0.0.1 on eth0 (hostname)"));
}

TEST(CheckJobResolution, FailureMixLoopbackAndHostName) {
  PreflightHost missing = Resolved("c", "", "");
  missing.resolved->clear_gloo();
  missing.resolved->set_error("interface eth1 (from GLOO_SOCKET_IFNAME) does not exist");
  Check failed = CheckJobResolution({Resolved("a", "10.0.0.1", "10.0.0.1"), missing}, "eth1");
  EXPECT_EQ(failed.status, Severity::kFail);
  EXPECT_THAT(failed.summary, HasSubstr("GLOO_SOCKET_IFNAME=eth1: no Gloo address on c"));

  Check mixed = CheckJobResolution(
      {Resolved("a", "10.0.0.1", "10.0.0.1"), Resolved("b", "fd00::2", "fd00::2")}, "");
  EXPECT_EQ(mixed.status, Severity::kFail);
  EXPECT_THAT(mixed.summary, HasSubstr("IPv4 and IPv6 mixed"));

  Check loop = CheckJobResolution(
      {Resolved("a", "10.0.0.1", "10.0.0.1"), Resolved("b", "127.0.1.1", "127.0.1.1")}, "");
  EXPECT_EQ(loop.status, Severity::kFail);
  EXPECT_THAT(loop.summary, HasSubstr("loopback on b"));
  EXPECT_THAT(loop.summary, HasSubstr("host name of b resolves to loopback"));

  // The host name only matters when GLOO_SOCKET_IFNAME does not decide.
  Check named = CheckJobResolution(
      {Resolved("a", "10.0.0.1", "127.0.1.1"), Resolved("b", "10.0.0.2", "10.0.0.2")}, "");
  EXPECT_EQ(named.status, Severity::kWarn);
  EXPECT_EQ(
      CheckJobResolution(
          {Resolved("a", "10.0.0.1", "127.0.1.1"), Resolved("b", "10.0.0.2", "10.0.0.2")}, "eth0")
          .status,
      Severity::kPass);

  // An unreachable daemon is the "daemons" check's business.
  PreflightHost down;
  down.target.name = "d";
  down.resolve_error = "unavailable: Connection refused";
  Check quiet = CheckJobResolution({Resolved("a", "10.0.0.1", "10.0.0.1"), down}, "");
  EXPECT_EQ(quiet.status, Severity::kPass);
  EXPECT_THAT(quiet.evidence, Contains(HasSubstr("d: not asked")));
}

}  // namespace
}  // namespace gloowatch::client
