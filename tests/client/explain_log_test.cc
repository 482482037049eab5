#include "client/explain_log/explain_log.h"

#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/explain_log/log_input.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/subprocess.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;

struct Expected {
  std::string id;
  int count, first, last;
};

// The fixture's ground truth, counted by hand; see fixtures/mixed_failures.log.
const std::vector<Expected> kFixtureTruth = {
    {"loopback_fallback", 1, 2, 2},           {"collective_timeout", 3, 4, 14},
    {"peer_connection_closed", 1, 6, 6},      {"store_connect_timeout", 1, 9, 9},
    {"bad_interface_nccl_syntax", 1, 10, 10}, {"bad_interface", 1, 11, 11},
    {"pair_connect_refused", 1, 12, 12},
};

LogExplanation ExplainFixture() {
  std::ifstream in(gloowatch::testing::SourceDir() + "/tests/client/fixtures/mixed_failures.log");
  EXPECT_TRUE(in.good());
  return ExplainLog(in, "mixed_failures.log");
}

TEST(SignatureTable, WellFormed) {
  std::set<std::string> ids;
  for (size_t i = 0; i < LogSignatures().size(); ++i) {
    const LogSignature& s = LogSignatures()[i];
    EXPECT_TRUE(ids.insert(s.id).second) << "duplicate id " << s.id;
    EXPECT_TRUE(SignatureCompiles(i)) << s.id;
    EXPECT_GT(std::string(s.cause).size(), 10u) << s.id;
    EXPECT_GT(std::string(s.fix).size(), 10u) << s.id;
  }
  EXPECT_GE(ids.size(), 15u);
}

TEST(ExplainLog, FixtureExactCountsAndLines) {
  LogExplanation e = ExplainFixture();
  EXPECT_EQ(e.lines, 15);
  EXPECT_FALSE(e.binary);
  ASSERT_EQ(e.hits.size(), kFixtureTruth.size());
  for (size_t i = 0; i < kFixtureTruth.size(); ++i) {
    SCOPED_TRACE(kFixtureTruth[i].id);
    EXPECT_EQ(e.hits[i].id, kFixtureTruth[i].id);  // ordered by first line
    EXPECT_EQ(e.hits[i].count, kFixtureTruth[i].count);
    EXPECT_EQ(e.hits[i].first_line, kFixtureTruth[i].first);
    EXPECT_EQ(e.hits[i].last_line, kFixtureTruth[i].last);
  }
  EXPECT_THAT(e.hits[1].example, HasSubstr("Timed out waiting 1800000ms"));
  EXPECT_EQ(e.hits[1].detail, "a recv waited 1800000 ms, the timeout in force");
  EXPECT_EQ(e.hits[0].severity, LogSeverity::kWarning);  // the loopback fallback
  EXPECT_EQ(e.hits[1].severity, LogSeverity::kError);
  // Of the errors, the earliest set-up fault is the root: the timeouts and
  // the closed pair come later in the chain.
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "bad_interface_nccl_syntax");
  EXPECT_EQ(ExplanationExitCode(e), 2);
}

// One line per cause, each in the form the code that prints it uses (Gloo's
// GLOO_ENFORCE "[enforce fail at FILE:LINE] COND. A vs B", c10d's socket and
// store messages in their 1.x and 2.x wordings, torch elastic, the kernel):
// the signature, severity and detail each must give.
struct LineCase {
  std::string line;
  std::string id;
  LogSeverity severity;
  std::string detail;
};

class SignatureLines : public ::testing::TestWithParam<LineCase> {};

TEST_P(SignatureLines, NamesTheCauseWithTheValuesOfTheLine) {
  std::istringstream in("step 1\n" + GetParam().line + "\n");
  LogExplanation e = ExplainLog(in, "case");
  ASSERT_EQ(e.hits.size(), 1u) << GetParam().line;
  EXPECT_EQ(e.hits[0].id, GetParam().id) << GetParam().line;
  EXPECT_EQ(e.hits[0].first_line, 2);
  EXPECT_EQ(e.hits[0].severity, GetParam().severity) << GetParam().line;
  EXPECT_EQ(e.hits[0].detail, GetParam().detail) << GetParam().line;
}

INSTANTIATE_TEST_SUITE_P(
    FromTheSources, SignatureLines,
    ::testing::Values(
        LineCase{"[ 4211.812] Out of memory: Killed process 31337 (python3) total-vm:91234kB",
                 "rank_killed", LogSeverity::kError, ""},
        LineCase{"    exitcode  : -9 (pid: 4242)", "rank_killed", LogSeverity::kError, ""},
        LineCase{"torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
                 "local_rank: 1 (pid: 77) of binary: /usr/bin/python3",
                 "rank_killed", LogSeverity::kError, ""},
        LineCase{"Killed", "rank_killed", LogSeverity::kError, ""},
        // Kubernetes' and a shell's view of the same SIGKILL (128 + 9), and mpirun's.
        LineCase{"    Last State:     Terminated, Reason: OOMKilled, Exit Code: 137", "rank_killed",
                 LogSeverity::kError, ""},
        LineCase{"subprocess.CalledProcessError: Command '['python', 'train.py']' returned "
                 "non-zero exit status 137.",
                 "rank_killed", LogSeverity::kError, ""},
        LineCase{"mpirun noticed that process rank 3 with PID 4242 on node n7 exited on signal 9 "
                 "(Killed).",
                 "rank_killed", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "device.cc:127] rp != nullptr. Unable to find address for: trainer-7",
                 "hostname_unresolvable", LogSeverity::kError, "host trainer-7"},
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "address.cc:45] sizeof(impl_) == bytes.size(). 136 vs 68",
                 "version_mismatch", LogSeverity::kError, "address sizes 136 vs 68 bytes"},
        // A Python logger's WARNING around a Gloo exception is still the error.
        LineCase{"(pid=1) 2020-05-07 21:07:16,707 WARNING trainer.py:413 -- [/pytorch/"
                 "third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:72] Timed out waiting "
                 "10000ms for recv operation to complete",
                 "collective_timeout", LogSeverity::kError,
                 "a recv waited 10000 ms, the timeout in force"},
        // c10's own warning behind a launcher's prefix is a retry, but one that
        // timed out (errno 110) went unanswered: it stays an error.
        LineCase{"trainer/0 [1]:[W socket.cpp:558] [c10d] The client socket has failed to "
                 "connect to [::ffff:10.0.0.5]:40323 (errno: 110 - Connection timed out).",
                 "store_connect_timeout", LogSeverity::kError,
                 "store [::ffff:10.0.0.5]:40323, connect timed out (errno 110)"},
        // The 2.x wording names the store as host:port.
        LineCase{"[E socket.cpp:860] [c10d] The client socket has timed out after 60s while "
                 "trying to connect to 10.0.0.1:29500",
                 "store_connect_timeout", LogSeverity::kError, "store 10.0.0.1:29500 after 60s"},
        LineCase{"RuntimeError: Timed out initializing process group in store based barrier on "
                 "rank: 0, for key: store_based_barrier_key:1 (world_size=2, worker_count=4, "
                 "timeout=0:02:00)",
                 "store_barrier_overcount", LogSeverity::kError,
                 "4 workers joined a barrier of world_size 2"},
        LineCase{"RuntimeError: Timed out initializing process group in store based barrier on "
                 "rank 3, for key: store_based_barrier_key:1 (world_size=8, "
                 "num_workers_joined=4, timeout=0:30:00 error=)",
                 "store_barrier_timeout", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:538] Write error "
                 "[10.0.0.7]:4411: Connection timed out",
                 "peer_connection_timed_out", LogSeverity::kError,
                 "Write error, peer [10.0.0.7]:4411 timed out"},
        LineCase{"torch.distributed.elastic.rendezvous.api.RendezvousClosedError",
                 "rendezvous_failed", LogSeverity::kError, ""},
        // ProcessGroupWrapper's report, in the 1.11 and the 2.1+ wordings.
        LineCase{"RuntimeError: Detected mismatch between collectives on ranks. Rank 3 is "
                 "running inconsistent collective: CollectiveFingerPrint(OpType=BARRIER)",
                 "collective_mismatch", LogSeverity::kError, "rank 3 ran BARRIER"},
        LineCase{"RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is "
                 "running collective: CollectiveFingerPrint(SequenceNumber=12, "
                 "OpType=ALLREDUCE, TensorShape=[20, 10], TensorDtypes=Float), but Rank 1 is "
                 "running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=REDUCE, "
                 "TensorShape=[20, 10], TensorDtypes=Float). Collectives differ in the "
                 "following aspects:   Op type: ALLREDUCEvs REDUCE",
                 "collective_mismatch", LogSeverity::kError,
                 "rank 0 ran ALLREDUCE, rank 1 ran REDUCE; they differ in: Op type: ALLREDUCEvs "
                 "REDUCE"},
        // c10d's TCPStore, 2.x: the server's wait, a client's broken connection.
        LineCase{"torch.distributed.DistStoreError: Timed out after 601 seconds waiting for "
                 "clients. 1/4 clients joined.",
                 "store_clients_missing", LogSeverity::kError, "1 of 4 ranks joined within 601 s"},
        LineCase{"[rank1]:[W901 07:40:19.968570826 TCPStore.cpp:125] [c10d] recvValue failed on "
                 "SocketImpl(fd=64, addr=[localhost]:35986, remote=[localhost]:45489): Failed to "
                 "recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown "
                 "or crash?",
                 "store_connection_reset", LogSeverity::kWarning, ""},
        // Gloo's own wordings (device.cc, helpers.h, debug_logger.cc).
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "device.cc:215] bind_rv == 0. Unable to find address for trainer-3; bind(2) "
                 "for [10.9.8.7]:0 failed with: Cannot assign requested address",
                 "hostname_not_local", LogSeverity::kError,
                 "host trainer-3 resolves to [10.9.8.7]:0, which does not bind here: Cannot "
                 "assign requested address"},
        LineCase{"RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
                 "transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection timed "
                 "out, remote=[10.0.0.1]:45677",
                 "pair_connect_timeout", LogSeverity::kError, "peer [10.0.0.1]:45677"},
        // Each failed attempt of Gloo's connect loop is logged at ERROR; one
        // that will be retried is not the failure yet.
        LineCase{"[gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, willRetry=1, "
                 "retry=1, retryLimit=3, rank=1, size=2, local=[10.0.0.2]:41234, "
                 "remote=[10.0.0.1]:45677, error=SO_ERROR: Connection refused, "
                 "remote=[10.0.0.1]:45677",
                 "pair_connect_refused", LogSeverity::kWarning, "peer [10.0.0.1]:45677"},
        LineCase{"[gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, willRetry=0, "
                 "retry=4, retryLimit=3, rank=1, size=2, local=[10.0.0.2]:41234, "
                 "remote=[10.0.0.1]:45677, error=SO_ERROR: Connection refused, "
                 "remote=[10.0.0.1]:45677",
                 "pair_connect_refused", LogSeverity::kError, "peer [10.0.0.1]:45677"},
        LineCase{"    exitcode  : -6 (pid: 4243)", "rank_crashed", LogSeverity::kError, ""},
        LineCase{"RuntimeError: Gloo connectFullMesh failed with [enforce fail at "
                 "../third_party/gloo/gloo/transport/tcp/pair.cc:799] ss1.ss_family == "
                 "ss2.ss_family. 2 vs 10",
                 "address_family_mismatch", LogSeverity::kError,
                 "address families 2 vs 10 (2 = IPv4, 10 = IPv6)"},
        LineCase{"RuntimeError: Gloo connectFullMesh failed with "
                 "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
                 "connect_full_mesh", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "pair.cc:446] op.preamble.length <= op.nbytes. 8773632 vs 8386560",
                 "collective_mismatch", LogSeverity::kError,
                 "received 8773632 bytes for a 8386560-byte buffer"},
        LineCase{"RuntimeError: No backend type associated with device type cpu",
                 "backend_mismatch", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect "
                 "[127.0.1.1]:45677: Connection refused",
                 "loopback_refused", LogSeverity::kError, "loopback address 127.0.1.1"},
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect "
                 "[10.1.2.3]:45677: Connection refused",
                 "pair_connect_refused", LogSeverity::kError, "peer [10.1.2.3]:45677"},
        // Gloo's tcp connect loop (newer Gloo): SystemError names the remote.
        LineCase{"RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
                 "transport/tcp/pair.cc:144] timed out connecting: SO_ERROR: Connection refused, "
                 "remote=[10.1.2.3]:20901",
                 "pair_connect_refused", LogSeverity::kError, "peer [10.1.2.3]:20901"},
        LineCase{"RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
                 "transport/tcp/pair.cc:144] timed out connecting: SO_ERROR: Connection timed "
                 "out, remote=[10.1.2.3]:20901",
                 "pair_connect_timeout", LogSeverity::kError, "peer [10.1.2.3]:20901"},
        // Gloo's libuv transport (Windows) in libuv's words.
        LineCase{"RuntimeError: [..\\third_party\\gloo\\gloo\\transport\\uv\\pair.cc:103] Error "
                 "connecting to [192.168.1.20]:60123: connection timed out",
                 "pair_connect_timeout", LogSeverity::kError, "peer [192.168.1.20]:60123"},
        LineCase{"RuntimeError: [..\\third_party\\gloo\\gloo\\transport\\uv\\pair.cc:103] Error "
                 "connecting to [192.168.1.20]:60123: connection refused",
                 "pair_connect_refused", LogSeverity::kError, "peer [192.168.1.20]:60123"},
        // pair.cc's connect deadline: "Connect timeout " and the peer.
        LineCase{"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:769] "
                 "Connect timeout [10.0.0.2]:40315",
                 "pair_connect_timeout", LogSeverity::kError, "peer [10.0.0.2]:40315"},
        LineCase{"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:272] "
                 "SO_ERROR: Connection refused",
                 "pair_connect_refused", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "pair.cc:150] rv != -1. -1 vs -1. bind: Address already in use",
                 "pair_bind_in_use", LogSeverity::kError, ""},
        LineCase{"torch.distributed.DistNetworkError: The server socket has failed to listen on "
                 "any local network address. The server socket has failed to bind to [::]:29500 "
                 "(errno: 98 - Address already in use).",
                 "store_port_in_use", LogSeverity::kError, ""},
        LineCase{"RuntimeError: connect() timed out. Original timeout was 1800000 ms.",
                 "store_connect_timeout", LogSeverity::kError, "store connect timeout 1800000 ms"},
        LineCase{"torch.distributed.DistNetworkError: The client socket has timed out after "
                 "600s while trying to connect to (10.0.0.1, 29500).",
                 "store_connect_timeout", LogSeverity::kError, "store 10.0.0.1:29500 after 600s"},
        // A retry the store client logs as a warning: the run may still succeed.
        LineCase{"[W socket.cpp:464] [c10d] The client socket has failed to connect to "
                 "[localhost]:29500 (errno: 111 - Connection refused).",
                 "store_connect_refused", LogSeverity::kWarning, ""},
        LineCase{"torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
                 "rendezvous_failed", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] "
                 "Timed out waiting 10000ms for send operation to complete",
                 "collective_timeout", LogSeverity::kError,
                 "a send waited 10000 ms, the timeout in force"},
        LineCase{"RuntimeError: Wait timeout for key(s): [\"rank_1\"]", "store_wait_timeout",
                 LogSeverity::kError, ""},
        // c10d's socket.cpp: getaddrinfo of the store's host failed (a retry,
        // logged as a warning); IPv6 alone is a warning.
        LineCase{"[W socket.cpp:601] [c10d] The IPv6 network addresses of (node-0, 29500) "
                 "cannot be retrieved (gai error: -2 - Name or service not known).",
                 "store_host_no_ipv6", LogSeverity::kWarning,
                 "store host node-0 (port 29500) did not resolve: Name or service not known"},
        LineCase{"[W socket.cpp:601] [c10d] The IPv4 network addresses of (master-svc, 23456) "
                 "cannot be retrieved (gai error: -3 - Temporary failure in name resolution).",
                 "store_host_unresolvable", LogSeverity::kWarning,
                 "store host master-svc (port 23456) does not resolve: Temporary failure in name "
                 "resolution"},
        // TCPStore.cpp (2.3+): TCPStore::wait throws DistStoreError.
        LineCase{"torch.distributed.DistStoreError: wait timeout after 300000ms, keys: "
                 "/default_pg/0//cuda//0",
                 "store_wait_timeout", LogSeverity::kError,
                 "waited 300000 ms for /default_pg/0//cuda//0"},
        // ProcessGroupGloo.cpp's monitoredBarrier.
        LineCase{"RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms",
                 "monitored_barrier_timeout", LogSeverity::kError,
                 "rank 1 did not arrive within 2000 ms"},
        LineCase{
            "RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors "
            "while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.",
            "monitored_barrier_rank0_failed", LogSeverity::kError, "rank 1 arrived; rank 0 failed"},
        LineCase{"RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 120000 ms",
                 "monitored_barrier_timeout", LogSeverity::kError,
                 "rank 1, 3 did not arrive within 120000 ms"},
        // torch/distributed/rendezvous.py: a rendezvous without a value it needs.
        LineCase{"ValueError: Error initializing torch.distributed using env:// rendezvous: "
                 "environment variable MASTER_ADDR expected, but not set",
                 "init_method_incomplete", LogSeverity::kError, "env:// needs MASTER_ADDR"},
        LineCase{"ValueError: Error initializing torch.distributed using tcp:// rendezvous: port "
                 "number missing",
                 "init_method_incomplete", LogSeverity::kError, "tcp://: port number missing"},
        // torch/distributed/rendezvous.py: an init_method scheme with no handler.
        LineCase{"RuntimeError: No rendezvous handler for tpc://", "bad_init_method",
                 LogSeverity::kError, "scheme 'tpc://'"},
        // An all-digit host name ("189") that getaddrinfo read as 0.0.0.189.
        LineCase{"RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/"
                 "device.cc:212] ifa != nullptr. Unable to find interface for: [0.0.0.189]",
                 "bad_address", LogSeverity::kError,
                 "address 0.0.0.189 (an all-digit host name read as IPv4)"},
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "device.cc:83] ifa != nullptr. Unable to find interface for: [10.1.2.3]",
                 "bad_address", LogSeverity::kError, "address [10.1.2.3]"},
        // The algorithms' check of context->getPair (allreduce_ring.h and others).
        LineCase{"RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/allreduce.cc:37] "
                 "context->getPair(recvRank). missing connection between rank 0 (this process) "
                 "and rank 0",
                 "pair_missing", LogSeverity::kError, "rank 0 has no pair to rank 0"},
        LineCase{"RuntimeError: [enforce fail at gloo/broadcast.cc:61] context->getPair(prev). "
                 "missing connection between rank 3 and previous ring rank 2",
                 "pair_missing", LogSeverity::kError, "rank 3 has no pair to rank 2"},
        // Gloo's pair.cc names the peer as sockaddr's str().
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
                 "closed by peer [10.0.0.3]:19722",
                 "peer_connection_closed", LogSeverity::kError, "peer [10.0.0.3]:19722"},
        LineCase{"RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:575] "
                 "Connection closed by peer [2401:db00:eef0:1100:3560:0:1c05:25d]:8594",
                 "peer_connection_closed", LogSeverity::kError,
                 "peer [2401:db00:eef0:1100:3560:0:1c05:25d]:8594"},
        // c10d's Utils.hpp SYSCHECK on a store socket: strerror's text alone,
        // as DistNetworkError (2.x) or std::system_error (1.x).
        LineCase{"torch.distributed.DistNetworkError: Broken pipe", "store_connection_reset",
                 LogSeverity::kError, ""},
        LineCase{"torch.distributed.DistNetworkError: Connection reset by peer",
                 "store_connection_reset", LogSeverity::kError, ""},
        LineCase{"RuntimeError: Connection reset by peer", "store_connection_reset",
                 LogSeverity::kError, ""},
        LineCase{"RuntimeError: Connection timed out", "store_connect_timeout", LogSeverity::kError,
                 ""},
        LineCase{"torch.distributed.DistNetworkError: Connection refused", "store_connect_refused",
                 LogSeverity::kError, ""},
        // The same with the "[rankN]:" prefix PyTorch 2.x puts on a rank's lines.
        LineCase{"[rank3]: torch.distributed.DistNetworkError: Connection reset by peer",
                 "store_connection_reset", LogSeverity::kError, ""},
        // ProcessGroupNCCL.cpp's broadcastUniqueNCCLID quotes the store's error.
        LineCase{"torch.distributed.DistBackendError: [1] is setting up NCCL communicator and "
                 "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but "
                 "store->get('0') got error: Connection reset by peer",
                 "store_connection_reset", LogSeverity::kError, ""},
        // Gloo's pair.cc: a pair socket's read failed; the peer is named.
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
                 "[192.168.70.92]:25266: Connection reset by peer",
                 "peer_connection_reset", LogSeverity::kError, "peer [192.168.70.92]:25266"},
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:411] writev "
                 "[10.0.0.5]:51234: Broken pipe",
                 "peer_connection_reset", LogSeverity::kError, "peer [10.0.0.5]:51234"},
        LineCase{"[W1203 10:01:02.123456789 socket.cpp:449] waitForInput: poll for socket "
                 "SocketImpl(fd=12, addr=[node-1]:50312, remote=[node-0]:29500) returned 0, likely "
                 "a timeout",
                 "store_wait_timeout", LogSeverity::kWarning, ""},
        // torch elastic: a rank stopped by SIGTERM (the agent's report,
        // ChildFailedError's, mp.spawn's), the agent's own signal, and its
        // stopping the others (information only).
        LineCase{"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) "
                 "local_rank: 2 (pid: 4710) of binary: /usr/bin/python3",
                 "rank_terminated", LogSeverity::kError,
                 "local rank 2 (pid 4710) stopped by SIGTERM"},
        LineCase{"  traceback : Signal 15 (SIGTERM) received by PID 4710", "rank_terminated",
                 LogSeverity::kError, "pid 4710 stopped by SIGTERM"},
        LineCase{"torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with "
                 "signal SIGTERM",
                 "rank_terminated", LogSeverity::kError, "rank 3 stopped by SIGTERM"},
        LineCase{"WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, "
                 "shutting down workers",
                 "launcher_signalled", LogSeverity::kError,
                 "the launcher got signal 15 (terminate: a scheduler, a user or a parent process)"},
        LineCase{"W0616 00:37:22.830000 4015698 torch/distributed/elastic/agent/server/api.py:719] "
                 "Received Signals.SIGHUP death signal, shutting down workers",
                 "launcher_signalled", LogSeverity::kError,
                 "the launcher got signal SIGHUP (hangup: its terminal or SSH session closed)"},
        LineCase{"torch.distributed.elastic.multiprocessing.api.SignalException: Process 4015698 "
                 "got signal: 1",
                 "launcher_signalled", LogSeverity::kError,
                 "the launcher got signal 1 (hangup: its terminal or SSH session closed)"},
        LineCase{"W0726 10:59:50.786825 140538811684672 torch/distributed/elastic/multiprocessing/"
                 "api.py:858] Sending process 147865 closing signal SIGTERM",
                 "launcher_stops_workers", LogSeverity::kInfo, "stopping pid 147865 with SIGTERM"},
        LineCase{"W0227 17:39:41.936000 293814 site-packages/torch/distributed/elastic/"
                 "multiprocessing/api.py:766] Closing process 293866 via signal SIGTERM",
                 "launcher_stops_workers", LogSeverity::kInfo, "stopping pid 293866 with SIGTERM"},
        LineCase{"    exitcode  : -7 (pid: 4244)", "rank_crashed", LogSeverity::kError, ""},
        // 1.x TCPStore: getaddrinfo's failure thrown as ValueError at once.
        LineCase{"ValueError: host not found: Temporary failure in name resolution",
                 "store_host_unresolvable", LogSeverity::kError,
                 "store host does not resolve: Temporary failure in name resolution"},
        // socket.cpp's waitForInput gave up: logged as a warning, but the store's
        // wait throws right after it (a DistStoreError), so it is no retry.
        LineCase{"[W1203 10:01:02.123456789 socket.cpp:460] waitForInput: socket SocketImpl(fd=12, "
                 "addr=[node-1]:50312, remote=[node-0]:29500) timed out after 300000ms",
                 "store_wait_timeout", LogSeverity::kError, "store reply waited 300000 ms"},
        // Horovod's HTTPStore (Gloo's rendezvous through horovodrun or Ray).
        LineCase{"RuntimeError: [../horovod/common/gloo/http_store.cc:57] Wait timeout after 30 "
                 "seconds for key(s): 0. You may want to increase the timeout via "
                 "HOROVOD_GLOO_TIMEOUT_SECONDS",
                 "store_wait_timeout", LogSeverity::kError, ""},
        // Gloo before 2023: pair.cc's connect named the mismatch in words.
        LineCase{"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:210] address "
                 "family mismatch",
                 "address_family_mismatch", LogSeverity::kError, ""},
        // The store's port is privileged (EACCES), not taken.
        LineCase{"RuntimeError: The server socket has failed to listen on any local network "
                 "address. The server socket has failed to bind to [::]:97 (errno: 13 - "
                 "Permission denied). The server socket has failed to bind to 0.0.0.0:97 (errno: "
                 "13 - Permission denied).",
                 "store_port_denied", LogSeverity::kError, "port 97 denied"},
        LineCase{"torch.distributed.DistNetworkError: The server socket has failed to listen on "
                 "any local network address. useIpv6: 0, code: -13, name: EACCES, message: "
                 "permission denied",
                 "store_port_denied", LogSeverity::kError, ""},
        // A rank out of memory (c10's CUDACachingAllocator, alloc_cpu.cpp).
        LineCase{"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 "
                 "MiB. GPU 3 has a total capacity of 79.10 GiB of which 98.00 MiB is free.",
                 "rank_out_of_memory", LogSeverity::kError,
                 "tried to allocate 132.00 MiB on the GPU"},
        LineCase{
            "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 MiB (GPU 0; 15.90 GiB "
            "total capacity; 14.25 GiB already allocated)",
            "rank_out_of_memory", LogSeverity::kError, "tried to allocate 1024.00 MiB on the GPU"},
        LineCase{"RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: "
                 "can't allocate memory: you tried to allocate 4294967296 bytes. Error code 12 "
                 "(Cannot allocate memory)",
                 "rank_out_of_memory", LogSeverity::kError,
                 "tried to allocate 4294967296 bytes of host memory"},
        // A rank that raised: the agent's report, ChildFailedError's, mp.spawn's.
        LineCase{
            "[ERROR] failed (exitcode: 1) local_rank: 5 (pid: 59469) of binary: /usr/bin/python3",
            "rank_exited", LogSeverity::kError, "local rank 5 (pid 59469) exited with code 1"},
        LineCase{"  exitcode  : 1 (pid: 59469)", "rank_exited", LogSeverity::kError,
                 "pid 59469 exited with code 1"},
        LineCase{"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with "
                 "exit code 1",
                 "rank_exited", LogSeverity::kError, "process 1 exited with code 1"},
        // The script's own use of torch.distributed and DDP.
        LineCase{"ValueError: Default process group has not been initialized, please make sure "
                 "to call init_process_group.",
                 "process_group_not_initialized", LogSeverity::kError, ""},
        LineCase{"RuntimeError: Expected to have finished reduction in the prior iteration before "
                 "starting a new one. This error indicates that your module has parameters that "
                 "were not used in producing loss.",
                 "ddp_unused_parameters", LogSeverity::kError, ""},
        LineCase{"RuntimeError: DDP expects same model across all ranks, but Rank 1 has 228 "
                 "params, while rank 0 has inconsistent 230 params.",
                 "ddp_model_mismatch", LogSeverity::kError,
                 "rank 1 has 228 parameters, rank 0 has 230"},
        // Set-up: no NCCL, no libuv, a foreign reply on MASTER_PORT, no fds.
        LineCase{"RuntimeError: Distributed package doesn't have NCCL built in", "nccl_unavailable",
                 LogSeverity::kError, ""},
        LineCase{"torch.distributed.DistStoreError: use_libuv was requested but PyTorch was build "
                 "without libuv support",
                 "store_libuv_missing", LogSeverity::kError, ""},
        LineCase{"RuntimeError: Stop_waiting response is expected", "store_protocol_mismatch",
                 LogSeverity::kError, ""},
        LineCase{"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
                 "device.cc:68] false. accept: Too many open files",
                 "too_many_open_files", LogSeverity::kError, ""},
        LineCase{"RuntimeError: [gloo/transport/tcp/pair.cc:185] listen: Address already in use",
                 "pair_bind_in_use", LogSeverity::kError, ""},
        // A killed rank behind a launcher's tag (horovodrun, mpirun
        // --tag-output) and horovod's exit report; mpirun's crash report.
        LineCase{"[0]<stderr>:Killed", "rank_killed", LogSeverity::kError, ""},
        LineCase{"Process 0 exit with status code 137.", "rank_killed", LogSeverity::kError, ""},
        LineCase{"mpirun noticed that process rank 1 with PID 29013 on node node-2 exited on "
                 "signal 11 (Segmentation fault).",
                 "rank_crashed", LogSeverity::kError, ""},
        // 128 + 6 (SIGABRT) and 128 + 11 (SIGSEGV), as a shell and Python's
        // subprocess report a crashed child.
        LineCase{"Process 2 exit with status code 134.", "rank_crashed", LogSeverity::kError, ""},
        LineCase{"subprocess.CalledProcessError: Command '['bash', 'train.sh']' returned "
                 "non-zero exit status 139.",
                 "rank_crashed", LogSeverity::kError, ""},
        // Windows: an address of the store's name that cannot be used
        // (WSAEADDRNOTAVAIL, in the system's language); c10d tries the next.
        LineCase{"[W ..\\torch\\csrc\\distributed\\c10d\\socket.cpp:601] [c10d] The client "
                 "socket has failed to connect to [DESKTOP-UDLTJ95]:29500 (system error: 10049 - "
                 "The requested address is not valid in its context.).",
                 "store_address_not_valid", LogSeverity::kWarning,
                 "store address [DESKTOP-UDLTJ95]:29500 is not usable from this host"},
        // Gloo since 2025 checks getaddrinfo's return in device.cc.
        LineCase{"RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/"
                 "device.cc:88] rv == 0. -2 vs 0",
                 "hostname_unresolvable", LogSeverity::kError,
                 "getaddrinfo error -2 (-2 name unknown, -3 DNS temporarily failing)"},
        // Newer Gloo names a pair's peer as "rank N ([ADDR]:PORT)".
        LineCase{"RuntimeError: [gloo/transport/tcp/pair.cc:560] Connection closed by peer rank 3 "
                 "([10.0.0.3]:19722). This is typically caused by a remote worker crashing. Check "
                 "the logs of the remote worker before reporting an error.",
                 "peer_connection_closed", LogSeverity::kError, "rank 3 at [10.0.0.3]:19722"},
        LineCase{"RuntimeError: [gloo/transport/tcp/pair.cc:540] Read error rank 1 "
                 "([10.0.0.1]:4100): Connection reset by peer. This is typically caused by a "
                 "remote worker hanging or bugs in the application.",
                 "peer_connection_reset", LogSeverity::kError, "rank 1 at [10.0.0.1]:4100"},
        LineCase{"RuntimeError: [gloo/transport/tcp/pair.cc:540] Read error rank 1 "
                 "([10.0.0.1]:4100): Connection timed out. This is typically caused by a remote "
                 "worker hanging or bugs in the application.",
                 "peer_connection_timed_out", LogSeverity::kError,
                 "Read error, rank 1 at [10.0.0.1]:4100 timed out"},
        LineCase{"RuntimeError: [gloo/transport/tcp/pair.cc:510] Read timeout rank 2 "
                 "([10.0.0.2]:4000)",
                 "pair_io_timeout", LogSeverity::kError, ""},
        // Gloo's ibverbs transport: an error work completion.
        LineCase{"  what():  [enforce fail at gloo/transport/ibverbs/pair.cc:462] wc->status == "
                 "IBV_WC_SUCCESS. 12 vs 0. Memory region send for slot 0: transport retry counter "
                 "exceeded",
                 "ibverbs_completion_error", LogSeverity::kError,
                 "ibverbs status 12 on send slot 0: transport retry counter exceeded"},
        // Gloo's CUDA_CHECK after the CUDA runtime unloaded at exit.
        LineCase{"  what():  [enforce fail at gloo/cuda_private.h:40] error == cudaSuccess. 29 vs "
                 "0. Error at: gloo/cuda_private.h:40: driver shutting down",
                 "cuda_driver_shutting_down", LogSeverity::kError, ""},
        // TCPStore's ping after connecting got a foreign answer: an error even
        // as a retry warning, since a foreign listener answers alike each time.
        LineCase{"[W TCPStore.cpp:384] TCP client failed to connect/validate to host "
                 "127.0.0.1:20237 - retrying: Ping failed, invalid value returned from server. "
                 "Expected: 3058192, Got: 759714643",
                 "store_protocol_mismatch", LogSeverity::kError,
                 "the store echoed 759714643 to the ping 3058192"},
        LineCase{"[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) "
                 "address. Using the loopback address as fallback. Manually set the network "
                 "interface to bind to with GLOO_SOCKET_IFNAME. (function operator())",
                 "loopback_fallback", LogSeverity::kWarning, ""}));

// Lines that name a signature's words but are not its failure.
TEST(ExplainLog, ABarrierStillFillingAndATracebacksRaiseAreNotErrors) {
  std::istringstream in(
      "Waiting in store based barrier to initialize process group for rank: 0, key: "
      "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)\n"
      "    raise RendezvousClosedError()\n");
  LogExplanation e = ExplainLog(in, "waiting");
  EXPECT_TRUE(e.hits.empty());
  EXPECT_EQ(ExplanationExitCode(e), 0);
}

TEST(ExplainLog, NearMissesOfTheKilledAndCudaSignaturesAreNotThem) {
  std::istringstream in(
      "[0]<stdout>:step 5: 3 stale workers Killed\n"
      "  what():  [enforce fail at gloo/cuda.cu:249] error == cudaSuccess. 2 vs 0. Error at: "
      "gloo/cuda.cu:249: out of memory\n"
      "Process 0 exit with status code 1370.\n"
      "exit status 1341 from the data loader\n"
      "Read timeout rank 2 of the data loader, retrying\n"
      "[enforce fail at gloo/common/linux.cc:93] rv == 0. -2 vs 0\n"
      "[enforce fail at gloo/transport/tcp/device.cc:156] rv == 0. -1 vs 0\n");
  LogExplanation e = ExplainLog(in, "near");
  // getaddrinfo's -1 (EAI_BADFLAGS) is no resolution failure: only the
  // catch-all for Gloo's transport checks names it.
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "gloo_enforce_failed");
  EXPECT_EQ(e.hits[0].first_line, 7);
}

// libstdc++ aborts a process whose C++ exception no one caught; when the
// exception's message names a cause, the abort is its echo, not the root.
TEST(ExplainLog, AnAbortAfterANamedUncaughtExceptionIsItsEcho) {
  std::istringstream in(
      "terminate called after throwing an instance of 'gloo::IoException'\n"
      "  what():  [gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:3210: Connection "
      "refused\n"
      "Aborted (core dumped)\n");
  LogExplanation e = ExplainLog(in, "abort");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "loopback_refused");
  ASSERT_EQ(e.hits.size(), 2u);
  EXPECT_EQ(e.hits[1].id, "rank_crashed");
  EXPECT_EQ(e.hits[1].severity, LogSeverity::kWarning);
}

TEST(ExplainLog, ACrashNotExplainedByTheUncaughtExceptionStaysTheRoot) {
  // The message names nothing known: the abort is all there is.
  std::istringstream unnamed(
      "terminate called after throwing an instance of 'std::bad_function_call'\n"
      "  what():  bad_function_call\n"
      "Aborted (core dumped)\n");
  LogExplanation a = ExplainLog(unnamed, "unnamed");
  ASSERT_GE(a.root_cause, 0);
  EXPECT_EQ(a.hits[a.root_cause].id, "rank_crashed");
  // A segmentation fault is no abort: a crash of its own.
  std::istringstream segv(
      "terminate called after throwing an instance of 'gloo::IoException'\n"
      "  what():  [gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.3]:19722\n"
      "Segmentation fault (core dumped)\n");
  LogExplanation b = ExplainLog(segv, "segv");
  ASSERT_GE(b.root_cause, 0);
  EXPECT_EQ(b.hits[b.root_cause].id, "rank_crashed");
  // An abort far from the exception is another process's.
  std::string far =
      "terminate called after throwing an instance of 'gloo::IoException'\n"
      "  what():  [gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.3]:19722\n";
  for (int i = 0; i < 30; ++i) far += "step\n";
  far += "Aborted (core dumped)\n";
  std::istringstream later(far);
  LogExplanation c = ExplainLog(later, "later");
  ASSERT_GE(c.root_cause, 0);
  EXPECT_EQ(c.hits[c.root_cause].id, "rank_crashed");
}

// Windows' unusable store address is a warning: noise before another failure
// (NCCL missing there), and one reason of a store connect that fails after it.
TEST(ExplainLog, AnUnusableStoreAddressOnWindowsIsAWarningNotTheRoot) {
  const std::string unusable =
      "[W socket.cpp:697] [c10d] The client socket has failed to connect to [fw]:29500 (system "
      "error: 10049 - The requested address is not valid in its context.).\n";
  std::istringstream nccl(unusable +
                          "RuntimeError: Distributed package doesn't have NCCL built in\n");
  LogExplanation a = ExplainLog(nccl, "nccl");
  ASSERT_GE(a.root_cause, 0);
  EXPECT_EQ(a.hits[a.root_cause].id, "nccl_unavailable");
  std::istringstream store(unusable +
                           "[E socket.cpp:753] [c10d] The client socket has failed to connect to "
                           "any network address of (fw, 29500).\n");
  LogExplanation b = ExplainLog(store, "store");
  ASSERT_GE(b.root_cause, 0);
  EXPECT_EQ(b.hits[b.root_cause].id, "store_connect_timeout");
  EXPECT_EQ(b.hits[0].id, "store_address_not_valid");
  EXPECT_EQ(b.hits[0].severity, LogSeverity::kWarning);
  // Another Windows error on the same socket is not this one.
  std::istringstream refused(
      "[W socket.cpp:697] [c10d] The client socket has failed to connect to [fw]:29500 (system "
      "error: 10061 - No connection could be made because the target machine actively refused "
      "it.).\n");
  LogExplanation c = ExplainLog(refused, "refused");
  for (const auto& h : c.hits) EXPECT_NE(h.id, "store_address_not_valid");
}

TEST(ExplainLog, AnErrorLineStandsForItsCauseBeforeTheRetriesThatLedToIt) {
  std::istringstream in(
      "[W socket.cpp:697] [c10d] The client socket has failed to connect to 10.0.0.9:47389 "
      "(errno: 110 - Connection timed out).\n"
      "[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address "
      "of (node-9, 47389).\n");
  LogExplanation e = ExplainLog(in, "retries");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].line_of_example, 2);
  EXPECT_EQ(e.hits[0].detail, "store node-9:47389, no address of it answered");
  EXPECT_EQ(e.hits[0].severity, LogSeverity::kError);
}

// The terminal waitForInput warning is an error (a log may end with it), but
// the DistStoreError it leads to is the line that stands for the cause.
TEST(ExplainLog, AStoreWaitTimeoutIsAnErrorAloneAndItsExceptionLineWithIt) {
  const std::string warning =
      "[rank0]:[W1203 10:01:02.123456789 socket.cpp:494] [c10d] waitForInput: socket "
      "SocketImpl(fd=12, addr=[node-1]:50312, remote=[node-0]:29500) timed out after 1800000ms\n";
  std::istringstream alone(warning);
  LogExplanation e = ExplainLog(alone, "alone");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_wait_timeout");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 1);
  std::istringstream with(warning +
                          "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: "
                          "/default_pg/0//cuda//0\n");
  e = ExplainLog(with, "with");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
}

// A launcher's worker that did not inherit GLOO_SOCKET_IFNAME binds loopback:
// the full mesh that fails after the warning is its echo.
TEST(ExplainLog, TheLoopbackFallbackExplainsTheFullMeshThatFails) {
  std::istringstream in(
      "(RayWorkerWrapper pid=1234, ip=10.41.0.8) INFO worker started\n"
      "[rank9]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) "
      "address. Using the loopback address as fallback. Manually set the network interface to "
      "bind to with GLOO_SOCKET_IFNAME. (function operator())\n"
      "[rank8]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with "
      "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n");
  LogExplanation e = ExplainLog(in, "ray");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "loopback_fallback");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
  EXPECT_EQ(e.hits[e.root_cause].severity, LogSeverity::kError);
}

TEST(ExplainLog, TheKilledRankIsTheRootNotTheTimeoutsItCaused) {
  std::istringstream in(
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.3]:19722\n"
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] Timed out "
      "waiting 1800000ms for send operation to complete\n"
      "    exitcode  : -9 (pid: 4242)\n");
  LogExplanation e = ExplainLog(in, "ranks");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "rank_killed");
  nlohmann::json j = ExplanationToJson(e);
  EXPECT_EQ(j["root_cause"]["id"], "rank_killed");
  EXPECT_EQ(j["root_cause"]["line"], 3);
  EXPECT_EQ(j["severity"], "error");
}

// socket.cpp retries a store host that does not resolve until its connect
// timeout: the retries, each a warning, are the cause of that timeout.
TEST(ExplainLog, AnUnresolvableStoreHostIsTheCauseOfTheConnectTimeout) {
  for (const char* family : {"IPv4 ", "", "IPv6 "}) {
    SCOPED_TRACE(family);
    std::istringstream in(absl::StrCat(
        "starting\n"
        "[W socket.cpp:601] [c10d] The ",
        family,
        "network addresses of (master-svc, 23456) cannot be retrieved (gai error: -2 - Name or "
        "service not known).\n"
        "[W socket.cpp:601] [c10d] The ",
        family,
        "network addresses of (master-svc, 23456) cannot be retrieved (gai error: -2 - Name or "
        "service not known).\n"
        "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to "
        "connect to (master-svc, 23456).\n"
        "torch.distributed.DistNetworkError: The client socket has timed out after 60s while "
        "trying to connect to (master-svc, 23456).\n"));
    LogExplanation e = ExplainLog(in, "unresolvable");
    ASSERT_GE(e.root_cause, 0);
    const SignatureHit& root = e.hits[e.root_cause];
    EXPECT_EQ(root.id,
              std::string(family) == "IPv6 " ? "store_host_no_ipv6" : "store_host_unresolvable");
    EXPECT_EQ(root.line_of_example, 2);
    EXPECT_EQ(root.severity, LogSeverity::kError);
    EXPECT_THAT(root.detail, HasSubstr("master-svc (port 23456)"));
    EXPECT_EQ(ExplanationExitCode(e), 2);
  }
}

// c10d looks the store's host up as IPv6 (with IPv4 mapped in), then as
// IPv4: when both miss, the IPv4 line, which no reader takes for an IPv6
// matter, stands for the cause.
TEST(ExplainLog, TheStoreHostsFailedIPv4LookupOutranksItsIPv6One) {
  std::istringstream in(
      "[0]:[W socket.cpp:558] [c10d] The IPv6 network addresses of (head-svc, 50176) cannot be "
      "retrieved (gai error: -2 - Name or service not known).\n"
      "[0]:[W socket.cpp:558] [c10d] The IPv4 network addresses of (head-svc, 50176) cannot be "
      "retrieved (gai error: -2 - Name or service not known).\n"
      "[0]:[E socket.cpp:610] [c10d] The client socket has failed to connect to any network "
      "address of (head-svc, 50176).\n");
  const LogExplanation e = ExplainLog(in, "both families");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_host_unresolvable");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
  EXPECT_EQ(e.hits[e.root_cause].severity, LogSeverity::kError);
}

// torch elastic's error_handler report prints the wrapper's message before
// the traceback of its inner exception (one JSON string): the store connect
// timeout inside is the cause, and what explains it explains the wrapper.
TEST(ExplainLog, TheRendezvousWrapperIsExplainedByTheStoreTimeoutInsideIt) {
  const std::string report =
      "ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{\n"
      "  \"message\": {\n"
      "    \"message\": \"RendezvousConnectionError: The connection to the C10d store has "
      "failed. See inner exception for details.\",\n"
      "    \"extraInfo\": {\n"
      "      \"py_callstack\": \"Traceback (most recent call last):\\n  File "
      "\\\"c10d_rendezvous_backend.py\\\", line 155, in _create_tcp_store\\n    store = "
      "TCPStore(\\nRuntimeError: connect() timed out. Original timeout was 60000 ms.\\n\\nThe "
      "above exception was the direct cause of the following exception:\\n\"\n";
  std::istringstream alone(report);
  LogExplanation e = ExplainLog(alone, "report");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_connect_timeout");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 5);
  std::istringstream unresolvable(
      "[W socket.cpp:558] [c10d] The IPv4 network addresses of (master, 29400) cannot be "
      "retrieved (gai error: -2 - Name or service not known).\n" +
      report);
  e = ExplainLog(unresolvable, "unresolvable");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_host_unresolvable");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 1);
}

// The store's connect-and-validate loop numbers its tries: a connection
// accepted and reset once may be a passing glitch, but from the third try
// on it is the failure; a refused connect stays a retry however often.
// c10d tries to bind the store's port on each address, logging each failure
// as a warning, then raises that none worked: a log that ends on those
// warnings was cut before the error, which they are. One that goes on (a
// port retry that then found one) has no error.
TEST(ExplainLog, ALogEndingOnTheStoresBindWarningsHasThemAsItsRootCause) {
  const std::string binds =
      "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - "
      "Address already in use).\n"
      "[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: "
      "98 - Address already in use).\n";
  std::istringstream cut("step 1\n" + binds + "\n");
  LogExplanation e = ExplainLog(cut, "cut");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_port_in_use");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
  EXPECT_EQ(e.hits[e.root_cause].severity, LogSeverity::kError);
  EXPECT_THAT(e.hits[e.root_cause].detail, HasSubstr("the log ends while it retries"));
  EXPECT_EQ(ExplanationExitCode(e), 2);
  std::istringstream went_on(binds + "epoch 1 loss 0.3\n");
  e = ExplainLog(went_on, "went on");
  EXPECT_EQ(e.root_cause, -1);
  std::istringstream lookup(
      "[W socket.cpp:558] [c10d] The IPv6 network addresses of (workers-0.workers, 3389) cannot "
      "be retrieved (gai error: -2 - Name or service not known).\n");
  e = ExplainLog(lookup, "lookup");
  EXPECT_EQ(e.root_cause, -1);
}

TEST(ExplainLog, AResetTryAfterTryIsTheFailureARefusalIsStillARetry) {
  auto retry = [](int tries, const char* why) {
    return absl::StrCat(
        "[W1210 11:08:45.455238000 TCPStore.cpp:347] [c10d] TCP client failed to "
        "connect/validate to host 26.26.26.1:53376 - retrying (try=",
        tries, ", timeout=1800000ms, delay=487ms): ", why, "\n");
  };
  std::istringstream early(retry(0, "Connection reset by peer") +
                           retry(2, "Connection reset by peer") + "epoch 1 loss 0.3\n");
  LogExplanation e = ExplainLog(early, "early");
  EXPECT_EQ(e.root_cause, -1);
  EXPECT_EQ(ExplanationExitCode(e), 1);
  std::istringstream persistent(retry(2, "Connection reset by peer") +
                                retry(3, "Connection reset by peer") +
                                retry(4, "Failed to recv, got 0 bytes"));
  e = ExplainLog(persistent, "persistent");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_no_reply");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
  std::istringstream refused(retry(11, "Connection refused"));
  e = ExplainLog(refused, "refused");
  EXPECT_EQ(e.root_cause, -1);
}

// ProcessGroupGloo's loopback warning, its sentences broken over indented
// lines as a form or a description quotes it: its first sentence alone
// names it, and it explains the mesh that fails to reach 127.0.0.1.
TEST(ExplainLog, TheLoopbackWarningsFirstSentenceAloneNamesIt) {
  std::istringstream in(
      "[rank8] Warning: Unable to resolve hostname to a (local) address. Using the loopback\n"
      "        address as fallback. Manually set the network interface with GLOO_SOCKET_IFNAME\n"
      "[rank8] Gloo connectFullMesh failed ... timed out connecting: SO_ERROR: Connection "
      "refused,\n"
      "        remote=[127.0.0.1]:14215\n"
      "RuntimeError: Gloo connectFullMesh failed ...\n");
  const LogExplanation e = ExplainLog(in, "quoted");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "loopback_fallback");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 1);
}

// Only a miss before the timeout explains it; one after it (another
// connection's retry) does not, and a miss alone is no error.
TEST(ExplainLog, AResolutionMissAfterTheTimeoutOrAloneIsNotItsCause) {
  const std::string miss =
      "[W socket.cpp:601] [c10d] The IPv6 network addresses of (node-0, 29500) cannot be "
      "retrieved (gai error: -2 - Name or service not known).\n";
  std::istringstream after(
      "torch.distributed.DistNetworkError: The client socket has timed out after 60s while "
      "trying to connect to (10.0.0.1, 29500).\n" +
      miss);
  LogExplanation e = ExplainLog(after, "after");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_connect_timeout");
  std::istringstream alone(miss + "epoch 1 loss 0.3\n");
  e = ExplainLog(alone, "alone");
  EXPECT_EQ(e.root_cause, -1);
  EXPECT_EQ(ExplanationExitCode(e), 1);  // a warning
}

// A Gloo connect that failed at an address no other host can reach is the
// interface a rank chose, not a plain mesh failure; the same failure at a
// routable address stays the connect timeout.
TEST(ExplainLog, AConnectToAnAddressOnTheWrongInterfaceIsTheInterface) {
  for (const std::string address : {"172.17.0.2", "127.0.1.1", "169.254.3.1"}) {
    SCOPED_TRACE(address);
    std::istringstream in(
        "epoch 0 step 0\n"
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
        "pair.cc:144] timed out connecting: SO_ERROR: Connection timed out, remote=[" +
        address + "]:41234\n");
    LogExplanation e = ExplainLog(in, "wrong");
    ASSERT_GE(e.root_cause, 0);
    EXPECT_EQ(e.hits[e.root_cause].id, "pair_wrong_interface");
    EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
    EXPECT_THAT(e.hits[e.root_cause].detail, HasSubstr(address));
  }
  std::istringstream routable(
      "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
      "pair.cc:144] timed out connecting: SO_ERROR: Connection timed out, "
      "remote=[10.1.2.5]:41234\n");
  LogExplanation e = ExplainLog(routable, "routable");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "pair_connect_timeout");
  // Gloo's connect log names this rank's own address too: bound to loopback.
  std::istringstream local(
      "[E0501 12:00:00.000 debug_logger.cc:9] failed to connect, willRetry=0, retry=3, "
      "retryLimit=3, rank=1, size=2, local=[127.0.1.1]:41234, remote=[10.1.2.5]:41234, "
      "error=SO_ERROR: Connection timed out, remote=[10.1.2.5]:41234\n");
  e = ExplainLog(local, "local");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "pair_wrong_interface");
}

// A store that cannot be reached is the firewall when the log shows one
// denying the connect, before or after the timeout; with no such evidence
// the timeout stays the cause, and "No route to host" (a REJECT rule's
// ICMP answer) explains it only as the retry that came before it.
TEST(ExplainLog, AStoreTimeoutNextToFirewallEvidenceIsTheFirewall) {
  const std::string timeout =
      "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to "
      "connect to (10.1.2.5, 29400).\n"
      "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the "
      "C10d store has failed. See inner exception for details.\n";
  const std::string denied =
      "[W socket.cpp:558] [c10d] The client socket has failed to connect to [node-b]:29400 "
      "(errno: 1 - Operation not permitted).\n";
  for (const std::string& log : {denied + timeout, timeout + denied}) {
    std::istringstream in(log);
    LogExplanation e = ExplainLog(in, "firewall");
    ASSERT_GE(e.root_cause, 0);
    EXPECT_EQ(e.hits[e.root_cause].id, "firewall_blocked");
    EXPECT_EQ(e.hits[e.root_cause].severity, LogSeverity::kError);
  }
  const std::string no_route =
      "[W socket.cpp:558] [c10d] The client socket has failed to connect to [node-b]:29400 "
      "(errno: 113 - No route to host).\n";
  std::istringstream before(no_route + timeout);
  LogExplanation e = ExplainLog(before, "no route before");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "no_route");
  std::istringstream after(timeout + no_route);
  e = ExplainLog(after, "no route after");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_connect_timeout");
  std::istringstream alone(timeout);
  e = ExplainLog(alone, "alone");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_connect_timeout");
}

// The loopback fallback is a state of the rank, so it explains the mesh
// failure even when another thread's output puts it after the error.
TEST(ExplainLog, TheLoopbackFallbackExplainsTheMeshFailureInEitherOrder) {
  std::istringstream in(
      "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
      "pair.cc:144] no error\n"
      "[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. "
      "Using the loopback address as fallback. Manually set the network interface to bind to "
      "with GLOO_SOCKET_IFNAME. (function operator())\n");
  LogExplanation e = ExplainLog(in, "after");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "loopback_fallback");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
}

// A traceback quotes the source of the raise, whose message is often
// written into it: the exception's own line is the error.
TEST(ExplainLog, ATracebacksQuotedSourceIsNotTheError) {
  std::istringstream in(
      "  File \".../horovod/run/run.py\", line 722, in run\n"
      "    raise ValueError('Gloo support has not been built.  If this is not expected, ensure "
      "CMake is installed '\n"
      "ValueError: Gloo support has not been built.  If this is not expected, ensure CMake is "
      "installed and reinstall Horovod with HOROVOD_WITH_GLOO=1 to debug the build error.\n"
      "  File \".../torch/distributed/distributed_c10d.py\", line 496, in helper\n"
      "    \"Distributed package doesn't have MPI built in.\"\n");
  LogExplanation e = ExplainLog(in, "source");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "backend_not_built");
  EXPECT_EQ(e.hits[0].first_line, 3);
  EXPECT_EQ(e.hits[0].count, 1);
  // A JSON error report's field is output, not source.
  std::istringstream json(
      "    \"message\": \"ValueError: Unsupported nproc_per_node value: 4(x2)\",\n");
  e = ExplainLog(json, "json");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "launcher_bad_argument");
  EXPECT_THAT(e.hits[0].detail, HasSubstr("4(x2)"));
}

// The store answered the connect but not its first exchange: something in
// between (a proxy, a VPN's fake IP) took the connection.
TEST(ExplainLog, AStoreConnectionAcceptedButNeverAnsweredIsNoReply) {
  std::istringstream in(
      "[W1206 19:45:43.875072000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=26, "
      "addr=[::26.26.26.1]:50817, remote=[::ffff:26.26.26.1]:50810): Connection reset by peer\n"
      "[W1206 19:45:43.892069000 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate "
      "to host 26.26.26.1:50810 - retrying (try=0, timeout=1800000ms, delay=487ms): Connection "
      "reset by peer\n"
      "[E1206 20:15:44.000000000 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate "
      "to host 26.26.26.1:50810 - timed out (try=9, timeout=1800000ms): Connection reset by "
      "peer\n");
  LogExplanation e = ExplainLog(in, "proxy");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "store_no_reply");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 3);
  EXPECT_THAT(e.hits[e.root_cause].detail, HasSubstr("26.26.26.1:50810"));
}

// torch elastic stops the surviving ranks with SIGTERM after one failed: the
// killed rank is the root, the SIGTERMs its echo.
TEST(ExplainLog, TheAgentsSigtermsAreTheEchoOfTheRankThatFailed) {
  std::istringstream in(
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 closing "
      "signal SIGTERM\n"
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -15) local_rank: 0 "
      "(pid: 812914) of binary: /usr/bin/python3\n"
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 "
      "(pid: 812917) of binary: /usr/bin/python3\n");
  LogExplanation e = ExplainLog(in, "agent");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "rank_killed");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 3);
  ASSERT_EQ(e.hits.size(), 3u);
  EXPECT_EQ(e.hits[0].id, "launcher_stops_workers");
  EXPECT_EQ(e.hits[0].severity, LogSeverity::kInfo);
  EXPECT_EQ(e.hits[1].id, "rank_terminated");
}

// With nothing else failing, the SIGTERM is the root: the job was stopped.
TEST(ExplainLog, ASigtermAloneIsTheRoot) {
  // 2.x logs the agent's line at W (glog style); a signal is no retry, so
  // it stays the error and the example.
  std::istringstream in(
      "epoch 7 loss 0.2\n"
      "W0616 00:37:22.830000 160 torch/distributed/elastic/agent/server/api.py:719] Received "
      "Signals.SIGTERM death signal, shutting down workers\n"
      "W0616 00:37:22.831000 160 torch/distributed/elastic/multiprocessing/api.py:900] Sending "
      "process 165 closing signal SIGTERM\n"
      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 160 got signal: "
      "15\n");
  LogExplanation e = ExplainLog(in, "stopped");
  ASSERT_GE(e.root_cause, 0);
  const SignatureHit& root = e.hits[e.root_cause];
  EXPECT_EQ(root.id, "launcher_signalled");
  EXPECT_EQ(root.severity, LogSeverity::kError);
  EXPECT_EQ(root.line_of_example, 2);
  EXPECT_EQ(root.detail,
            "the launcher got signal SIGTERM (terminate: a scheduler, a user or a parent process)");
  EXPECT_EQ(root.count, 2);
}

// ChildFailedError lists the ranks the agent stopped (-15) before the
// "Root Cause (first observed failure)": the rank that raised is the root.
TEST(ExplainLog, TheRankThatRaisedIsTheRootNotTheOnesTheAgentStopped) {
  std::istringstream in(
      "Failures:\n"
      "[1]:\n"
      "  exitcode  : -15 (pid: 1235)\n"
      "  traceback : Signal 15 (SIGTERM) received by PID 1235\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  exitcode  : 1 (pid: 1234)\n");
  LogExplanation e = ExplainLog(in, "child-failed");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "rank_exited");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 7);
}

// A framework that catches an out-of-memory error and skips the batch says
// so in its own words: not the exception's line, not an error.
TEST(ExplainLog, AnOutOfMemoryCaughtAndSkippedIsNotTheError) {
  std::istringstream in(
      "WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 20.00 "
      "MiB; skipping batch\n");
  LogExplanation e = ExplainLog(in, "skipped");
  EXPECT_TRUE(e.hits.empty());
}

// A traceback shows the source line that raises an exception; the error is
// the exception's own line.
TEST(ExplainLog, ATracebacksRaiseIsNotTheExceptionsLine) {
  std::istringstream in(
      "--> 358         raise RuntimeError(\"Default process group has not been initialized, \"\n"
      "    raise RuntimeError(\"Distributed package doesn't have NCCL built in\")\n"
      "RuntimeError: Default process group has not been initialized, please make sure to call "
      "init_process_group.\n");
  LogExplanation e = ExplainLog(in, "traceback");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "process_group_not_initialized");
  EXPECT_EQ(e.hits[0].first_line, 3);
}

// rendezvous.py formats the scheme into its message: the source line a
// traceback quotes is no URL (pytorch/pytorch#53135).
TEST(ExplainLog, ARaisesFormatStringIsNotTheScheme) {
  std::istringstream in(
      "    raise RuntimeError(\"No rendezvous handler for {}://\".format(result.scheme))\n"
      "RuntimeError: No rendezvous handler for env://\n");
  LogExplanation e = ExplainLog(in, "traceback");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "bad_init_method");
  EXPECT_EQ(e.hits[0].first_line, 2);
  EXPECT_EQ(e.hits[0].detail, "scheme 'env://'");
}

TEST(ExplainLog, HealthyRunWithKnownWarningsHasNoError) {
  std::istringstream in(
      "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. "
      "Using the loopback address as fallback. Manually set the network interface to bind to "
      "with GLOO_SOCKET_IFNAME. (function operator())\n"
      "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 "
      "(errno: 97 - Address family not supported by protocol).\n"
      "[W socket.cpp:464] [c10d] The client socket has failed to connect to [localhost]:29500 "
      "(errno: 111 - Connection refused).\n"
      "epoch 3 loss 0.12\n");
  LogExplanation e = ExplainLog(in, "healthy");
  EXPECT_EQ(e.root_cause, -1);
  EXPECT_EQ(e.worst, LogSeverity::kWarning);
  EXPECT_EQ(ExplanationExitCode(e), 1);
  EXPECT_THAT(RenderExplanationText(e), HasSubstr("no errors; warnings only"));
}

TEST(ExplainLog, AMessageDeepInsideAFlattenedTracebackIsFound) {
  // Ray and some launchers put a whole traceback on one line.
  std::string line(200000, 'x');
  line += " RuntimeError: Connection closed by peer [10.0.0.2]:4000";
  std::istringstream in(line + "\n");
  LogExplanation e = ExplainLog(in, "ray");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
}

TEST(ExplainLog, JsonFieldByField) {
  nlohmann::json j = nlohmann::json::parse(ExplanationToJson(ExplainFixture()).dump());
  EXPECT_EQ(j["schema"], "gloowatch.explain_log.v1");
  EXPECT_EQ(j["source"], "mixed_failures.log");
  EXPECT_EQ(j["lines"], 15);
  EXPECT_EQ(j["binary"], false);
  ASSERT_EQ(j["signatures"].size(), kFixtureTruth.size());
  for (size_t i = 0; i < kFixtureTruth.size(); ++i) {
    const auto& s = j["signatures"][i];
    EXPECT_EQ(s["id"], kFixtureTruth[i].id);
    EXPECT_EQ(s["count"], kFixtureTruth[i].count);
    EXPECT_EQ(s["first_line"], kFixtureTruth[i].first);
    EXPECT_EQ(s["last_line"], kFixtureTruth[i].last);
    EXPECT_TRUE(s["cause"].is_string() && !s["cause"].get<std::string>().empty());
    EXPECT_TRUE(s["fix"].is_string() && !s["fix"].get<std::string>().empty());
    EXPECT_TRUE(s["example"].is_string());
    EXPECT_TRUE(s["severity"] == "error" || s["severity"] == "warning") << s;
    EXPECT_TRUE(s["detail"].is_string());
  }
  EXPECT_EQ(j["severity"], "error");
  EXPECT_EQ(j["root_cause"]["id"], "bad_interface_nccl_syntax");
  EXPECT_THAT(j["signatures"][1]["fix"].get<std::string>(), HasSubstr("init_process_group"));
}

TEST(ExplainLog, EmptyInput) {
  std::istringstream in("");
  LogExplanation e = ExplainLog(in, "empty");
  EXPECT_EQ(e.lines, 0);
  EXPECT_EQ(e.bytes, 0u);
  EXPECT_TRUE(e.hits.empty());
  EXPECT_TRUE(InputError(e).ok());  // an empty log is a log
  EXPECT_EQ(RenderExplanationText(e), "empty: empty input, nothing to explain\n");
  EXPECT_EQ(ExplanationToJson(e)["empty"], true);
  EXPECT_EQ(ExplanationExitCode(e), 0);
}

TEST(ExplainLog, UnknownText) {
  std::istringstream in("hello\nworld\nall good\n");
  LogExplanation e = ExplainLog(in, "x");
  EXPECT_EQ(e.lines, 3);
  EXPECT_TRUE(e.hits.empty());
}

TEST(ExplainLog, BinaryGarbageIsScannedSafely) {
  std::string garbage;
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1103515245 + 12345;
    garbage.push_back(static_cast<char>(x >> 16));
  }
  garbage += "\nConnection closed by peer [1.2.3.4]:5\n";
  garbage += std::string(100000, 'A');  // one very long line
  std::istringstream in(garbage);
  LogExplanation e = ExplainLog(in, "garbage");
  // Not a text log: said so, nothing "explained" from it, and the scan
  // stopped once the first 64 KiB told.
  EXPECT_TRUE(e.binary);
  EXPECT_THAT(e.not_text, HasSubstr("binary data"));
  EXPECT_TRUE(e.hits.empty());
  EXPECT_LT(e.bytes, garbage.size());
  const absl::Status error = InputError(e);
  EXPECT_TRUE(absl::IsInvalidArgument(error));
  EXPECT_THAT(std::string(error.message()), HasSubstr("garbage: not a text log: binary data"));
  // JSON must serialise even with invalid UTF-8 around.
  EXPECT_NO_THROW(
      ExplanationToJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

TEST(ExplainLog, CrLfAndFirstMatchWins) {
  std::istringstream in("Unable to find address for: ^eth\r\nUnable to find address for: x\r\n");
  LogExplanation e = ExplainLog(in, "crlf");
  ASSERT_EQ(e.hits.size(), 2u);
  EXPECT_EQ(e.hits[0].id, "bad_interface_nccl_syntax");
  EXPECT_EQ(e.hits[0].count, 1);  // not also counted as bad_interface
  EXPECT_EQ(e.hits[1].id, "bad_interface");
}

LogExplanation Explain(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  return ExplainLog(in, source);
}

// The fallback: an error of the distributed stack that no signature knows is
// reported with its most likely category, low confidence. The messages are
// made up, so that no signature can ever know them.
TEST(UnrecognisedError, IsReportedWithTheCategoryItsWordsSuggest) {
  struct Case {
    std::string line;
    Stage stage;
    std::string category;
  };
  for (const Case& c : std::vector<Case>{
           {"RuntimeError: [c10d] could not connect the quux socket to host zork:1234",
            Stage::kConnect, "connect"},
           {"torch.distributed.DistBackendError: [c10d] the quux handshake timed out after 30s",
            Stage::kWait, "timeout"},
           {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/quux.cc:12] the quux peer "
            "reset by peer",
            Stage::kPeerGone, "peer_gone"},
           {"RuntimeError: ProcessGroupGloo quux worker got signal 11", Stage::kProcess, "process"},
           {"ValueError: the quux option is not supported by this ProcessGroup build",
            Stage::kSetup, "setup"},
           {"[E quux.cpp:99] [c10d] the store frobnicated its keys", Stage::kSetup, "setup"},
           {"[enforce fail at ../third_party/gloo/gloo/quux.cc:7] quux == 0. 3 vs 0", Stage::kSetup,
            "setup"},
           {"E0501 12:00:00.123456 4242 quux.cc:9] gloo quux went sideways", Stage::kSetup,
            "setup"},
           {"2024-05-01 12:00:00,123 - torch.distributed.quux - ERROR - rendezvous quux lost its "
            "keys",
            Stage::kSetup, "setup"},
       }) {
    SCOPED_TRACE(c.line);
    const LogExplanation e = Explain("step 1\n" + c.line + "\nstep 2\n", "log");
    ASSERT_EQ(e.hits.size(), 1u);
    const SignatureHit& h = e.hits[0];
    EXPECT_EQ(h.id, "unrecognised_distributed_error");
    EXPECT_TRUE(h.unrecognised());
    EXPECT_EQ(h.line_of_example, 2);
    EXPECT_EQ(h.severity, LogSeverity::kError);
    EXPECT_EQ(h.signature->stage, c.stage);
    EXPECT_EQ(e.root_cause, 0);
    EXPECT_EQ(ExplanationExitCode(e), 2);
    const nlohmann::json j = ExplanationToJson(e);
    EXPECT_EQ(j["root_cause"]["id"], "unrecognised_distributed_error");
    EXPECT_EQ(j["root_cause"]["confidence"], "low");
    EXPECT_EQ(j["root_cause"]["category"], c.category);
    EXPECT_EQ(j["signatures"][0]["confidence"], "low");
    const std::string text = RenderExplanationText(e);
    EXPECT_THAT(text, HasSubstr("log: no known signatures and an unrecognised distributed error"));
    EXPECT_THAT(text, HasSubstr("root cause (low confidence): unrecognised_distributed_error "
                                "(line 2), most likely " +
                                c.category));
  }
}

// Words of the stack in a warning, an information line, a traceback's code,
// another stack's error, the launcher's summary: none is an unrecognised
// error.
TEST(UnrecognisedError, NotForWarningsInformationCodeOrOtherStacks) {
  const LogExplanation e = Explain(
      "[W quux.cpp:1] [c10d] RuntimeError: the quux socket is slow\n"
      "[I quux.cpp:1] [c10d] RuntimeError seen before, the quux socket recovered\n"
      "W0501 12:00:00.123456 4242 quux.cc:9] gloo RuntimeError: quux retried\n"
      "WARNING:torch.distributed.run:RuntimeError: quux, setting OMP_NUM_THREADS\n"
      "INFO:torch.distributed.elastic:RuntimeError: quux rendezvous round 2\n"
      "quux.py:12: UserWarning: RuntimeError: the quux ProcessGroup is deprecated\n"
      "    raise RuntimeError(\"quux rendezvous\")\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 9\n"
      "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', "
      "port=443): Max retries exceeded (Caused by ConnectTimeoutError: the socket's connect "
      "gave up)\n"
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
      "Epoch 3: connection quality good, socket buffers 4 MiB\n",
      "quiet");
  for (const auto& h : e.hits) EXPECT_FALSE(h.unrecognised()) << h.example;
  EXPECT_EQ(ExplanationExitCode(e), 0) << RenderExplanationText(e);
}

// A signature's error is always the root; the fallback is listed after it.
// Lines next to a signature's (a C++ exception's wrapper, the traceback's
// repeat) are its output, not an error of their own.
TEST(UnrecognisedError, NeverOutranksASignature) {
  const LogExplanation e = Explain(
      "RuntimeError: [c10d] the quux store lost its keys\n"
      "step 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\n"
      "terminate called after throwing an instance of 'gloo::IoException'\n"
      "  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.2]:42311\n"
      "Aborted (core dumped)\n"
      "2024-05-01 12:00:00,500 ERROR failed (exitcode: -15) local_rank: 0 (pid: 80) of "
      "binary: /usr/bin/python3\n",
      "mixed");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_FALSE(e.hits[e.root_cause].unrecognised());
  EXPECT_EQ(e.hits[e.root_cause].id, "peer_connection_closed");
  std::vector<std::string> ids;
  for (const auto& h : e.hits) ids.push_back(h.id);
  EXPECT_THAT(ids, ::testing::Contains("unrecognised_distributed_error"));
  for (const auto& h : e.hits) {
    if (h.unrecognised()) {
      EXPECT_EQ(h.count, 1);  // the terminate line next to the signature is not counted
      EXPECT_EQ(h.line_of_example, 1);
    }
  }
  // Even a signature of the last stage (the agent's SIGTERM) outranks it.
  const LogExplanation late = Explain(
      "RuntimeError: [c10d] the quux store lost its keys\n"
      "step 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\n"
      "2024-05-01 12:00:00,500 ERROR failed (exitcode: -15) local_rank: 0 (pid: 80) of "
      "binary: /usr/bin/python3\n",
      "late");
  ASSERT_GE(late.root_cause, 0);
  EXPECT_EQ(late.hits[late.root_cause].id, "rank_terminated");
  // And across logs: another log's signature is the job's root.
  std::vector<LogExplanation> logs;
  logs.push_back(Explain("RuntimeError: [c10d] the quux store lost its keys\n", "rank0.log"));
  logs.push_back(Explain(
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
      "waiting 1800000ms for recv operation to complete\n",
      "rank1.log"));
  const JobExplanation job = ExplainJob(std::move(logs));
  ASSERT_EQ(job.root.log, 1);
  ASSERT_EQ(job.echoes.size(), 1u);
  EXPECT_EQ(job.echoes[0].log, 0);
  EXPECT_EQ(JobToJson(job)["echoes"][0]["confidence"], "low");
}

// The exception that ends a traceback through torch.distributed is the
// stack's even when its own words do not say so; one through user code only
// is not.
TEST(UnrecognisedError, TheExceptionEndingATracebackThroughTorchDistributed) {
  const std::string frames =
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 12, in <module>\n"
      "[rank1]:     main()\n";
  const LogExplanation through =
      Explain(frames +
                  "[rank1]:   File \"/usr/lib/python3/dist-packages/torch/distributed/"
                  "distributed_c10d.py\", line 1536, in all_reduce\n"
                  "[rank1]:     work = group.allreduce([tensor], opts)\n"
                  "[rank1]: ValueError: tensors of the quux kind differ\n",
              "through");
  ASSERT_EQ(through.hits.size(), 1u);
  EXPECT_TRUE(through.hits[0].unrecognised());
  EXPECT_EQ(through.hits[0].line_of_example, 6);
  EXPECT_EQ(through.hits[0].rank, "1");
  const LogExplanation user = Explain(frames +
                                          "[rank1]:   File \"data.py\", line 7, in load\n"
                                          "[rank1]:     x = table[key]\n"
                                          "[rank1]: KeyError: 'quux'\n",
                                      "user");
  EXPECT_TRUE(user.hits.empty());
}

TEST(ExplainJob, TheKilledRankIsTheRootAndTheOthersItsEchoInTimeOrder) {
  std::vector<LogExplanation> logs;
  logs.push_back(Explain(
      "2024-05-01 12:04:41,100 [rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
      "unbound_buffer.cc:84] Timed out waiting 10000ms for recv operation to complete\n",
      "logs/rank0.log"));
  logs.push_back(Explain(
      "2024-05-01 12:04:20,000 RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
      "Connection closed by peer [10.0.0.3]:19722\n",
      "logs/node2-rank2.txt"));
  logs.push_back(
      Explain("2024-05-01 12:04:11,000 INFO step 10\n"
              "2024-05-01 12:04:11,500 [ERROR] failed (exitcode: -9) local_rank: 1 "
              "(pid: 77) of binary: /usr/bin/python3\n",
              "logs/rank1.log"));
  logs.push_back(Explain("epoch 3 loss 0.1\n", "logs/rank3.log"));
  const JobExplanation job = ExplainJob(std::move(logs));
  ASSERT_EQ(job.root.log, 2);
  EXPECT_EQ(job.logs[2].rank, "rank 1");
  EXPECT_EQ(job.logs[2].hits[job.root.hit].id, "rank_killed");
  ASSERT_EQ(job.echoes.size(), 2u);
  EXPECT_EQ(job.echoes[0].log, 1);  // 12:04:20, before rank 0's 12:04:41
  EXPECT_EQ(job.echoes[1].log, 0);
  EXPECT_EQ(JobExitCode(job), 2);
  const std::string text = RenderJobText(job);
  EXPECT_THAT(text, HasSubstr("root cause: rank 1 (logs/rank1.log line 2, 2024-05-01 "
                              "12:04:11,500): rank_killed"));
  EXPECT_THAT(text, HasSubstr("rank 0 (logs/rank0.log line 1, 2024-05-01 12:04:41,100): "
                              "collective_timeout (a recv waited 10000 ms"));
  nlohmann::json j = JobToJson(job);
  EXPECT_EQ(j["root_cause"]["rank"], "rank 1");
  EXPECT_EQ(j["root_cause"]["time"], "2024-05-01 12:04:11,500");
  EXPECT_EQ(j["echoes"].size(), 2u);
  EXPECT_EQ(j["logs"].size(), 4u);
  EXPECT_EQ(j["severity"], "error");
}

// A rank killed at 12:04:11 and reported by its agent only at 12:04:30;
// meanwhile a peer saw the connection close, another timed out, and the
// agent on the killed rank's host stopped its other ranks with SIGTERM.
// The kill is the root though its report is not the earliest line; the
// echoes read in time order.
TEST(ExplainJob, TheFirstCauseWinsOverItsEchoesReportedEarlier) {
  std::vector<LogExplanation> logs;
  logs.push_back(Explain(
      "2024-05-01 12:04:41,100 [rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
      "unbound_buffer.cc:84] Timed out waiting 30000ms for recv operation to complete\n",
      "logs/rank0.log"));
  logs.push_back(Explain(
      "2024-05-01 12:04:12,000 [rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
      "pair.cc:598] Connection closed by peer [10.0.0.3]:19722\n",
      "logs/rank1.log"));
  logs.push_back(Explain(
      "2024-05-01 12:04:29,900 WARNING Sending process 80 closing signal SIGTERM\n"
      "2024-05-01 12:04:30,000 ERROR failed (exitcode: -9) local_rank: 1 (pid: 79) of binary: "
      "/usr/bin/python3\n"
      "2024-05-01 12:04:30,100 ERROR failed (exitcode: -15) local_rank: 0 (pid: 80) of binary: "
      "/usr/bin/python3\n",
      "logs/host-b-rank3.log"));
  logs.push_back(Explain(
      "2024-05-01 12:04:35,000 ERROR failed (exitcode: -15) local_rank: 0 (pid: 90) of binary: "
      "/usr/bin/python3\n",
      "logs/rank2.log"));
  const JobExplanation job = ExplainJob(std::move(logs));
  ASSERT_EQ(job.root.log, 2);
  EXPECT_EQ(job.logs[2].hits[job.root.hit].id, "rank_killed");
  EXPECT_EQ(job.logs[2].hits[job.root.hit].line_of_example, 2);
  ASSERT_EQ(job.echoes.size(), 3u);
  EXPECT_EQ(job.echoes[0].log, 1);  // closed by peer, 12:04:12
  EXPECT_EQ(job.echoes[1].log, 3);  // SIGTERM, 12:04:35
  EXPECT_EQ(job.echoes[2].log, 0);  // timeout, 12:04:41
  EXPECT_EQ(job.logs[3].hits[job.echoes[1].hit].id, "rank_terminated");
}

TEST(ExplainJob, SameStageTheEarlierInTimeIsTheRoot) {
  std::vector<LogExplanation> logs;
  logs.push_back(
      Explain("E0501 12:00:09.000000 1 x] Connection closed by peer [10.0.0.1]:1\n", "a.log"));
  logs.push_back(
      Explain("E0501 12:00:02.000000 1 x] Connection closed by peer [10.0.0.2]:1\n", "b.log"));
  const JobExplanation job = ExplainJob(std::move(logs));
  EXPECT_EQ(job.root.log, 1);
}

TEST(ExplainJob, NoErrorsAnywhere) {
  std::vector<LogExplanation> logs;
  logs.push_back(Explain("fine\n", "a.log"));
  logs.push_back(Explain("fine\n", "b.log"));
  const JobExplanation job = ExplainJob(std::move(logs));
  EXPECT_EQ(job.root.log, -1);
  EXPECT_EQ(JobExitCode(job), 0);
  EXPECT_TRUE(JobToJson(job)["root_cause"].is_null());
}

// Logs as users attach them: gzip and zstd are read like the plain text.
class CompressedLogs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gloowatch-logs-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  std::filesystem::path dir_;
  const std::string text_ =
      "step 1\nRuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
      "closed by peer [10.0.0.2]:42311\n";
};

TEST_F(CompressedLogs, GzipAndZstdReadAsText) {
  gzFile gz = gzopen(Path("a.log.gz").c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text_.data(), text_.size()), static_cast<int>(text_.size()));
  gzclose(gz);
  std::string zst(ZSTD_compressBound(text_.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), text_.data(), text_.size(), 3));
  std::ofstream(Path("b.log.zst"), std::ios::binary) << zst;
  std::ofstream(Path("c.log"), std::ios::binary) << text_;
  auto paths = ExpandLogPaths({dir_.string()});
  ASSERT_TRUE(paths.ok());
  ASSERT_EQ(paths->size(), 3u);
  for (const LogPath& listed : *paths) {
    const std::string& path = listed.path;
    SCOPED_TRACE(path);
    EXPECT_TRUE(listed.in_directory);
    auto in = OpenLog(path);
    ASSERT_TRUE(in.ok()) << in.status();
    LogExplanation e = ExplainLog(**in, path);
    EXPECT_EQ(e.lines, 2);
    ASSERT_EQ(e.hits.size(), 1u);
    EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
    EXPECT_EQ(e.hits[0].first_line, 2);
  }
}

TEST_F(CompressedLogs, CorruptGzipEndsTheInputWithoutCrashing) {
  std::ofstream(Path("bad.gz"), std::ios::binary) << std::string("\x1f\x8b\x08\x00garbage", 12);
  auto in = OpenLog(Path("bad.gz"));
  ASSERT_TRUE(in.ok());
  LogExplanation e = ExplainLog(**in, "bad.gz");
  EXPECT_TRUE(e.hits.empty());
}

TEST(OpenLog, MissingFileIsNamed) {
  auto in = OpenLog("/nonexistent/rank0.log");
  ASSERT_FALSE(in.ok());
  EXPECT_TRUE(absl::IsNotFound(in.status()));
  EXPECT_THAT(std::string(in.status().message()), HasSubstr("/nonexistent/rank0.log"));
}

}  // namespace
}  // namespace gloowatch::client
