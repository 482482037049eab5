// explain-log's reading stage (log_lines.h, line_prefix.h, log_input.h) on
// synthetic input: messages wrapped at several columns with and without the
// prefix repeated, every prefix a launcher or a collector writes, CRLF, ANSI
// sequences, interleaved ranks, Windows paths; input that is no log (ELF,
// PNG, random bytes, NUL, UTF-16) and gzip / zstd streams cut short or
// damaged, made here. Each wrapped message must give what the same message
// on one line gives (its signature, severity and detail), on the line where
// it starts.
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/explain_log/explain_log.h"
#include "client/explain_log/line_prefix.h"
#include "client/explain_log/log_input.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gloowatch::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LogExplanation Explain(const std::string& text, const std::string& source = "log") {
  std::istringstream in(text);
  return ExplainLog(in, source);
}

// Messages as the code that prints them words them, with the signature each
// names on one line.
struct Message {
  std::string text, id;
};
const std::vector<Message>& Messages() {
  static const auto* messages = new std::vector<Message>{
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed "
       "by peer [10.0.0.2]:42311",
       "peer_connection_closed"},
      {"RuntimeError: The client socket has timed out after 1800s while trying to connect to "
       "(node-1, 29500).",
       "store_connect_timeout"},
      {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
       "waiting 1800000ms for recv operation to complete",
       "collective_timeout"},
      {"RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:127] "
       "rp != nullptr. Unable to find address for: trainer-7",
       "hostname_unresolvable"},
      {"[E socket.cpp:753] [c10d] The client socket has failed to connect to any network "
       "address of (node-9, 47389).",
       "store_connect_timeout"},
      {"RuntimeError: Timed out initializing process group in store based barrier on rank: 0, "
       "for key: store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:02:00)",
       "store_barrier_overcount"},
  };
  return *messages;
}

// The hit a message gives on a line of its own: what every wrapped form of
// it must give too.
SignatureHit Reference(const Message& m) {
  const LogExplanation e = Explain("step 1\n" + m.text + "\n");
  EXPECT_EQ(e.hits.size(), 1u) << m.text;
  if (e.hits.empty()) return {};
  EXPECT_EQ(e.hits[0].id, m.id) << m.text;
  return e.hits[0];
}

// `text` cut into pieces of `width` columns (a terminal: mid-word), or
// wrapped at the last blank before it, the blank dropped (a form).
std::vector<std::string> Cut(const std::string& text, size_t width, bool word) {
  std::vector<std::string> pieces;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = std::min(text.size(), at + width), next = end;
    if (word && end < text.size()) {
      const size_t blank = text.rfind(' ', end);
      if (blank != std::string::npos && blank > at + width / 2) {
        end = blank;
        next = blank + 1;
      }
    }
    pieces.push_back(text.substr(at, end - at));
    at = next;
  }
  return pieces;
}

// Wraps: how the pieces after the first are written.
enum class Continuation { kBare, kPrefixOnFirstOnly, kPrefixRepeated };

struct WrapCase {
  size_t width;
  bool word;
  Continuation continuation;
};

std::string Name(const WrapCase& c) {
  return absl::StrCat(c.word ? "word" : "cut", c.width,
                      c.continuation == Continuation::kBare                ? "_bare"
                      : c.continuation == Continuation::kPrefixOnFirstOnly ? "_prefix_once"
                                                                           : "_prefix_repeated");
}

class WrappedMessages : public ::testing::TestWithParam<WrapCase> {};

// A log of a few records whose long lines all went through the same wrap,
// the message among them: found on its first line with its values.
TEST_P(WrappedMessages, AreMatchedOnTheLineTheyStartOn) {
  const WrapCase& c = GetParam();
  const std::string prefix = c.continuation == Continuation::kBare ? "" : "[rank0]: ";
  for (const Message& m : Messages()) {
    SCOPED_TRACE(m.text);
    const SignatureHit reference = Reference(m);
    std::vector<std::string> lines;
    // A terminal or a form wraps the whole line, prefix and all; a shipper
    // cuts the message and repeats the prefix on each piece.
    auto add = [&](const std::string& record) {
      if (c.continuation != Continuation::kPrefixRepeated) {
        for (const std::string& piece : Cut(prefix + record, c.width, c.word)) {
          lines.push_back(piece);
        }
        return;
      }
      for (const std::string& piece : Cut(record, c.width, c.word)) lines.push_back(prefix + piece);
    };
    // Records of a job's log before it, long enough to wrap too: they
    // show the wrap's width and style.
    add("2024-05-01 12:00:00,123 INFO train.py:88 epoch 3 step 1200 loss 0.5132 lr 3.0e-4 "
        "throughput 1834.2 samples/s");
    add("Waiting for the data loader workers to start, 8 of them, each with its own CUDA "
        "stream and a prefetch factor of 2 batches per worker");
    add("step 1 loss 0.5132 lr 3.0e-4 throughput 1834.2 samples/s on 8 ranks, grad norm 1.23");
    add("Checkpoint saved to checkpoints/run-7/epoch-3/step-1200.pt in 4.21 s (1.7 GiB, "
        "sharded over 8 ranks, the optimizer state included)");
    add("step 2 loss 0.5101 lr 3.0e-4 throughput 1830.9 samples/s on 8 ranks, grad norm 1.19");
    const int line = static_cast<int>(lines.size()) + 1;
    add(m.text);
    const int pieces = static_cast<int>(lines.size()) + 1 - line;
    add("Epoch 3 stopped");
    const LogExplanation e = Explain(absl::StrJoin(lines, "\n") + "\n");
    EXPECT_EQ(e.lines, static_cast<int>(lines.size()));
    ASSERT_EQ(e.hits.size(), 1u) << absl::StrJoin(lines, "\n");
    EXPECT_EQ(e.hits[0].id, reference.id) << absl::StrJoin(lines, "\n");
    EXPECT_EQ(e.hits[0].line_of_example, line) << absl::StrJoin(lines, "\n");
    EXPECT_EQ(e.hits[0].severity, reference.severity);
    // A cut keeps every character; a form's wrap drops the blank it broke
    // at, which comes back where the log's other wide lines show the wrap
    // (see AloneOverTwoOrThreeLines): the cause is right either way.
    if (!c.word) {
      EXPECT_EQ(e.hits[0].detail, reference.detail) << absl::StrJoin(lines, "\n");
      if (pieces > 1) {
        EXPECT_THAT(e.hits[0].example, HasSubstr(m.text.substr(m.text.size() - 12)));
      }
    }
  }
}

std::vector<WrapCase> WrapCases() {
  std::vector<WrapCase> cases;
  for (size_t width : {40, 56, 64, 80, 100, 120}) {
    for (bool word : {false, true}) {
      for (Continuation k :
           {Continuation::kBare, Continuation::kPrefixOnFirstOnly, Continuation::kPrefixRepeated}) {
        cases.push_back({width, word, k});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Columns, WrappedMessages, ::testing::ValuesIn(WrapCases()),
                         [](const auto& info) { return Name(info.param); });

// The first wrapped line of a paste, with nothing before it to tell the
// width: over two and three lines, cut inside a word or at a blank the copy
// trimmed.
TEST(WrappedMessage, AloneOverTwoOrThreeLines) {
  for (const Message& m : Messages()) {
    SCOPED_TRACE(m.text);
    const SignatureHit reference = Reference(m);
    for (size_t width : {size_t{48}, m.text.size() / 2 + 1, m.text.size() / 3 + 1}) {
      for (bool word : {false, true}) {
        SCOPED_TRACE(absl::StrCat(width, word ? " word" : " cut"));
        const std::vector<std::string> pieces = Cut(m.text, width, word);
        const LogExplanation e = Explain(absl::StrJoin(pieces, "\n") + "\n");
        ASSERT_EQ(e.hits.size(), 1u) << absl::StrJoin(pieces, "\n");
        EXPECT_EQ(e.hits[0].id, reference.id) << absl::StrJoin(pieces, "\n");
        EXPECT_EQ(e.hits[0].line_of_example, 1);
        EXPECT_EQ(e.hits[0].severity, reference.severity);
        // With nothing else to show the style, a join at the widest line is
        // read as a terminal's cut inside a word unless the other reading
        // names a more specific cause: a form's wrap there may lose its
        // blank in the values shown (not in the cause).
        if (!word) {
          EXPECT_EQ(e.hits[0].detail, reference.detail) << absl::StrJoin(pieces, "\n");
        }
      }
    }
  }
}

// Joining must not swallow a record: a line of its own after a wide line
// keeps its signature and its line, and lines of one kind in a row stay
// apart.
TEST(WrappedMessage, RecordsAfterAWideLineKeepTheirOwnLines) {
  const LogExplanation e = Explain(
      "[0]<stderr>:RuntimeError: check_rank and exit epoch=1 batch=0 start_rank=0 rank=0\n"
      "[0]<stderr>:Killed\n"
      "[Gloo] Rank 1 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
      "[Gloo] Rank 2 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
      "  what():  [gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:3210: Connection refused\n"
      "Aborted (core dumped)\n"
      "    exitcode  : 1 (pid: 4242)\n");
  std::map<std::string, int> line_of;
  for (const auto& h : e.hits) line_of[h.id] = h.line_of_example;
  EXPECT_EQ(line_of["rank_killed"], 2);
  EXPECT_EQ(line_of["loopback_refused"], 5);
  EXPECT_EQ(line_of["rank_crashed"], 6);
  EXPECT_EQ(line_of["rank_exited"], 7);
}

// A program's own message ("ssh: ...", argparse's "train.py: error: ...")
// after a line as wide as the widest (the launch command, a usage line) is
// a record of its own, not that line's wrap, and counts on its own line.
TEST(WrappedMessage, AProgramsOwnMessageAfterAWideLineIsItsOwnRecord) {
  LogExplanation e = Explain(
      "deepspeed --num_nodes 1 --num_gpus 1 --hostfile /mnt/hostfile /mnt/finetune.py "
      "--model-parallel-size 4 --batch-size 16 --deepspeed --do_train\n"
      "ssh: Could not resolve hostname node0: Name or service not known\n");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "launcher_ssh_failed");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
  e = Explain(
      "usage: trainval_distributed.py [-h] [--work-dir WORK_DIR] [--local_rank LOCAL_RANK]\n"
      "trainval_distributed.py: error: unrecognized arguments: --local-rank=1\n");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "launcher_bad_argument");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2);
}

// A form's word wrap after a long dotted exception name ("...api.SignalException:")
// left a line with no blank in its second half, which a terminal's cut inside a
// word leaves too: both readings are tried, so the blank the wrap ate is put
// back. An IPv6 address ("[2401:db00:21:604e:...]", or its rest after a cut
// inside it) is no time of day opening a record: the line goes on.
TEST(WrappedMessage, AWordWrapAfterAnExceptionNameAndAnIPv6AddressJoin) {
  LogExplanation e = Explain(
      "ptuning/train.sh: torch.distributed.elastic.multiprocessing.api.SignalException:\n"
      "Process 8665 got signal: 1\n");
  ASSERT_GE(e.root_cause, 0);
  EXPECT_EQ(e.hits[e.root_cause].id, "launcher_signalled");
  EXPECT_EQ(e.hits[e.root_cause].line_of_example, 1);
  EXPECT_EQ(e.hits[e.root_cause].detail,
            "the launcher got signal 1 (hangup: its terminal or SSH session closed)");
  const std::string line =
      "[E thread_pool.cpp:112] Exception in thread pool task: [/src/pytorch/third_party/gloo/"
      "gloo/transport/tcp/pair.cc:563] Read error [2401:db00:21:604e:face:0:13:0]:8835: "
      "Connection reset by peer";
  for (bool word : {false, true}) {
    SCOPED_TRACE(word ? "word" : "cut");
    std::string log = "Process process 2:\n";
    for (int i = 0; i < 3; ++i) log += absl::StrJoin(Cut(line, 80, word), "\n") + "\n";
    e = Explain(log);
    ASSERT_GE(e.root_cause, 0) << log;
    EXPECT_EQ(e.hits[e.root_cause].id, "peer_connection_reset") << log;
    EXPECT_EQ(e.hits[e.root_cause].line_of_example, 2) << log;
    EXPECT_EQ(e.hits[e.root_cause].detail, "peer [2401:db00:21:604e:face:0:13:0]:8835") << log;
  }
}

// Lines of two ranks alternate; each rank's long message is cut and its
// continuation repeats the rank's prefix. Nothing joins across ranks.
TEST(WrappedMessage, InterleavedRanksAreNotJoined) {
  std::vector<std::string> lines;
  for (int step = 0; step < 3; ++step) {
    lines.push_back(absl::StrCat("[rank0]: step ", step, " loss 0.51 throughput 1834.2 samples/s"));
    lines.push_back(absl::StrCat("[rank1]: step ", step, " loss 0.52 throughput 1830.9 samples/s"));
  }
  const std::vector<std::string> closed =
      Cut("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed "
          "by peer [10.0.0.2]:42311",
          60, false);
  const std::vector<std::string> timeout =
      Cut("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
          "waiting 1800000ms for recv operation to complete",
          60, false);
  // A shipper writes a cut line's pieces one after the other; the ranks'
  // records interleave around them.
  lines.push_back("[rank1]: " + timeout[0]);  // line 7
  lines.push_back("[rank1]: " + timeout[1]);
  lines.push_back("[rank1]: " + timeout[2]);
  lines.push_back("[rank0]: " + closed[0]);  // line 10
  lines.push_back("[rank0]: " + closed[1]);
  lines.push_back("[rank1]: lower-case record of rank 1 after rank 0's cut line");
  lines.push_back("[rank0]: " + closed[0]);  // line 13: rank 1's line cuts it
  lines.push_back("[rank1]: lower-case record of rank 1 after rank 0's cut line");
  lines.push_back("[rank0]: " + closed[1]);
  const LogExplanation e = Explain(absl::StrJoin(lines, "\n") + "\n");
  std::map<std::string, const SignatureHit*> hit;
  for (const auto& h : e.hits) hit[h.id] = &h;
  ASSERT_TRUE(hit.count("collective_timeout")) << absl::StrJoin(lines, "\n");
  EXPECT_EQ(hit["collective_timeout"]->line_of_example, 7);
  EXPECT_EQ(hit["collective_timeout"]->rank, "1");
  ASSERT_TRUE(hit.count("peer_connection_closed")) << absl::StrJoin(lines, "\n");
  EXPECT_EQ(hit["peer_connection_closed"]->line_of_example, 10);
  EXPECT_EQ(hit["peer_connection_closed"]->first_line, 10);
  EXPECT_EQ(hit["peer_connection_closed"]->rank, "0");
  // No line of one rank became part of the other's.
  for (const auto& h : e.hits) {
    EXPECT_THAT(h.example, Not(HasSubstr("lower-case record"))) << h.id;
    EXPECT_THAT(h.example, Not(HasSubstr(h.rank == "0" ? "Timed out" : "closed"))) << h.id;
  }
  EXPECT_EQ(e.rank, "");  // a log of two ranks is neither's
}

// Kubernetes' CRI marks a line the runtime split ("P"), whatever its width.
TEST(WrappedMessage, AKubernetesPartialLineIsJoinedWithItsRest) {
  const LogExplanation e = Explain(
      "2024-05-01T12:00:00.100000000Z stderr F step 1\n"
      "2024-05-01T12:00:01.000000000Z stderr P RuntimeError: [../third_party/gloo/gloo/"
      "transport/tcp/pair.cc:598] Connection clo\n"
      "2024-05-01T12:00:01.000000000Z stderr F sed by peer [10.0.0.2]:42311\n");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
  EXPECT_EQ(e.hits[0].line_of_example, 2);
  EXPECT_EQ(e.hits[0].time_kind, LogTimeKind::kDated);
  EXPECT_DOUBLE_EQ(e.hits[0].time_seconds, 1714564801.0);  // the "Z" is UTC
}

struct PrefixCase {
  std::string prefix;
  bool writer;  // names a writer (not only a time)
  bool timestamped;
  char level;
  std::string rank;
  std::string time;  // the time read from it, "" when none is of a kind compared
};

class Prefixes : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(Prefixes, ArePeeledAndTheMessageBehindThemMatches) {
  const PrefixCase& c = GetParam();
  const std::string message =
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.2]:42311";
  const LinePrefix p = PeelPrefix(c.prefix + message);
  EXPECT_EQ(p.length, c.prefix.size());
  EXPECT_EQ(!p.stream.empty(), c.writer) << p.stream;
  EXPECT_EQ(p.timestamped, c.timestamped);
  EXPECT_EQ(p.level, c.level);
  EXPECT_EQ(p.rank, c.rank);
  const LogExplanation e = Explain("step 1\n" + c.prefix + message + "\n");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
  EXPECT_EQ(e.hits[0].rank, c.rank);
  EXPECT_EQ(e.hits[0].time.empty(), c.time.empty()) << e.hits[0].time;
  EXPECT_THAT(e.hits[0].time, HasSubstr(c.time));
  // A pattern anchored at the start of the message still matches behind
  // the prefix: the agent's report and the shell's "Killed".
  const LogExplanation exited = Explain(c.prefix + "  exitcode  : 1 (pid: 4242)\n");
  ASSERT_EQ(exited.hits.size(), 1u) << c.prefix;
  EXPECT_EQ(exited.hits[0].id, "rank_exited");
  const LogExplanation killed = Explain(c.prefix + "Killed\n");
  ASSERT_EQ(killed.hits.size(), 1u) << c.prefix;
  EXPECT_EQ(killed.hits[0].id, "rank_killed");
}

INSTANTIATE_TEST_SUITE_P(
    LoggersLaunchersAndCollectors, Prefixes,
    ::testing::Values(
        PrefixCase{"2024-05-01 12:00:00,123 ", false, true, 0, "", "2024-05-01 12:00:00,123"},
        PrefixCase{"2024-05-01T12:00:00.123456Z ", false, true, 0, "", "2024-05-01T12:00:00"},
        PrefixCase{"[2024-05-01 12:00:00,123] ", false, true, 0, "", "2024-05-01 12:00:00,123"},
        PrefixCase{"May  1 12:00:00 ", false, true, 0, "", "May  1 12:00:00"},
        PrefixCase{"E0501 12:00:00.123456  4242 pair.cc:598] ", false, true, 'E', "",
                   "E0501 12:00:00.123456"},
        PrefixCase{"I20261207 03:22:55.209720 23582 socket.cpp:442] ", false, true, 'I', "",
                   "I20261207 03:22:55.209720"},
        PrefixCase{"[ 4211.812345] ", false, true, 0, "", ""},
        PrefixCase{"[rank3]: ", true, false, 0, "3", ""},
        PrefixCase{"[default0]:", true, false, 0, "", ""},
        PrefixCase{"[default0]:[rank12]:", true, false, 0, "12", ""},
        PrefixCase{"(pid=123) ", true, false, 0, "", ""},
        PrefixCase{"(RayTrainWorker pid=123, ip=10.0.0.1) [rank1]: ", true, false, 0, "1", ""},
        PrefixCase{"0: ", true, false, 0, "", ""}, PrefixCase{" 12: ", true, false, 0, "", ""},
        PrefixCase{"[1,0]<stderr>:", true, false, 0, "", ""},
        PrefixCase{"[0]<stdout>:", true, false, 0, "", ""},
        PrefixCase{"2024-05-01T12:00:00.123456789Z stderr F ", true, true, 0, "",
                   "2024-05-01T12:00:00.123456789"},
        PrefixCase{"May 01 12:00:00 node-3 python3[4242]: ", true, true, 0, "", "May 01 12:00:00"},
        PrefixCase{"2024-05-01T12:00:00+0000 node-3 python3[4242]: ", true, true, 0, "",
                   "2024-05-01T12:00:00"},
        PrefixCase{"trainer-1  | ", true, false, 0, "", ""},
        PrefixCase{"trainer/0 [1]:", true, false, 0, "", ""},
        PrefixCase{"worker-1: ", true, false, 0, "", ""},
        PrefixCase{"[pod/train-0/trainer] ", true, false, 0, "", ""},
        PrefixCase{"node01:4242:4301 [0] ", true, false, 0, "", ""},
        PrefixCase{"2024-05-01 12:00:00,123 0: [rank2]: ", true, true, 0, "2",
                   "2024-05-01 12:00:00,123"}));

// What is message, not prefix, stays: an exception's name, a logger's level.
TEST(Prefixes, AMessageThatLooksLikeOneIsNotPeeled) {
  for (const char* line :
       {"RuntimeError: Connection refused", "INFO: step 1", "exitcode  : 1 (pid: 5)",
        "[W socket.cpp:558] [c10d] retry", "[enforce fail at pair.cc:1] x", "Killed",
        "torch.distributed.elastic.multiprocessing.api: failed", "(errno: 111 - refused)"}) {
    EXPECT_EQ(PeelPrefix(line).length, 0u) << line;
  }
}

// CRLF endings, colours and cursor moves (with the ESC, and as the "[0m" a
// paste leaves without it), a UTF-8 BOM: the same hit as plain text.
TEST(Cleaning, CrLfAnsiAndBomAreRemovedBeforeMatching) {
  const std::string plain =
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.2]:42311";
  for (const std::string& text : std::vector<std::string>{
           "\xef\xbb\xbfstep 1\r\n" + plain + "\r\n",
           "step 1\n\x1b[31mRuntimeError\x1b[0m: [../third_party/gloo/gloo/transport/tcp/"
           "pair.cc:598] \x1b[1mConnection closed by peer\x1b[0m [10.0.0.2]:42311\x1b[K\n",
           "step 1\n\x1b]0;title\x07\x1b[2K\r[31mRuntimeError[0m: [../third_party/gloo/gloo/"
           "transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:42311\n",
           "step 1\r\nRuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
           "Connection "
           "clo\r\nsed by peer [10.0.0.2]:42311\r\n"}) {
    SCOPED_TRACE(text);
    const LogExplanation e = Explain(text);
    ASSERT_EQ(e.hits.size(), 1u);
    EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
    EXPECT_EQ(e.hits[0].line_of_example, 2);
    EXPECT_EQ(e.hits[0].detail, Reference({plain, "peer_connection_closed"}).detail);
    EXPECT_THAT(e.hits[0].example, Not(HasSubstr("\x1b")));
    EXPECT_THAT(e.hits[0].example, Not(HasSubstr("[0m")));
    EXPECT_EQ(e.lines, std::count(text.begin(), text.end(), '\n'));
  }
}

// Windows builds print c10's file with its whole path, and tracebacks with
// backslashes: the warning is still a warning, the frame still
// torch.distributed's.
TEST(Cleaning, WindowsPathsReadLikeLinuxOnes) {
  const std::string linux_form =
      "[W socket.cpp:558] [c10d] The client socket has failed to connect to "
      "[kubernetes.docker.internal]:29500 (system error: 10049 - The requested address is not "
      "valid in its context.).";
  const SignatureHit reference = Explain(linux_form + "\n").hits.at(0);
  const LogExplanation e = Explain(
      "[W C:\\cb\\pytorch_1000000000000\\work\\torch\\csrc\\distributed\\c10d\\socket.cpp:558] "
      "[c10d] The client socket has failed to connect to [kubernetes.docker.internal]:29500 "
      "(system error: 10049 - The requested address is not valid in its context.).\r\n");
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, reference.id);
  EXPECT_EQ(e.hits[0].severity, reference.severity);
  EXPECT_EQ(e.hits[0].detail, reference.detail);
  EXPECT_THAT(e.hits[0].example, HasSubstr("[W socket.cpp:558]"));
  // A traceback through torch\distributed ending in an exception no
  // signature knows is the stack's (the fallback, unrecognised.h).
  const LogExplanation traceback = Explain(
      "Traceback (most recent call last):\r\n"
      "  File \"C:\\Users\\me\\anaconda3\\lib\\site-packages\\torch\\distributed\\"
      "distributed_c10d.py\", line 1536, in all_reduce\r\n"
      "    work = group.allreduce([tensor], opts)\r\n"
      "ValueError: tensors of the quux kind differ\r\n");
  ASSERT_EQ(traceback.hits.size(), 1u);
  EXPECT_EQ(traceback.hits[0].id, "unrecognised_distributed_error");
  EXPECT_EQ(traceback.hits[0].line_of_example, 4);
}

// Input that is no log: named, nothing explained from it.
TEST(NotText, BinaryFormatsAndNulOnlyInputAreNamed) {
  struct Case {
    std::string bytes, says;
  };
  std::string random;
  uint32_t x = 7;
  for (int i = 0; i < 100000; ++i) {
    x = x * 1103515245 + 12345;
    random.push_back(static_cast<char>(x >> 16));
  }
  std::string elf(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  elf += std::string(2000, '\0') + "Connection closed by peer [1.2.3.4]:5\n";
  const std::vector<Case> cases = {
      {elf, "an ELF executable"},
      {std::string("\x89PNG\r\n\x1a\n", 8) + random.substr(0, 5000), "a PNG image"},
      {std::string("PK\x03\x04", 4) + random.substr(0, 500), "a zip archive"},
      {random, "binary data"},
      {std::string(70000, '\0'), "only NUL bytes"},
      {std::string("\xff\xfeR\0u\0n\0", 8), "UTF-16 text"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    const LogExplanation e = Explain(c.bytes, "in");
    EXPECT_THAT(e.not_text, HasSubstr(c.says));
    EXPECT_TRUE(e.binary);
    EXPECT_TRUE(e.hits.empty());
    EXPECT_FALSE(InputError(e).ok());
    EXPECT_THAT(RenderExplanationText(e), HasSubstr("in: not a text log: " + c.says));
  }
}

// A crash leaves runs of NUL bytes in a text log (blocks allocated, never
// written); the text around them is read.
TEST(NotText, ATextLogWithACrashHoleIsStillRead) {
  const LogExplanation e = Explain(
      "step 1\n" + std::string(8192, '\0') +
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [10.0.0.2]:42311\n");
  EXPECT_TRUE(e.not_text.empty()) << e.not_text;
  EXPECT_TRUE(e.binary);  // it holds NUL bytes
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
  EXPECT_THAT(RenderExplanationText(e), HasSubstr("(input holds NUL bytes)"));
}

// Compressed logs as crashed nodes and interrupted copies leave them.
class DamagedLogs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("gloowatch-damaged-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    // Big enough for several zstd blocks, so half a stream holds some.
    for (int i = 0; i < 40000; ++i) {
      absl::StrAppend(&text_, "step ", i, " loss 0.", (i * 7919) % 10007, " throughput ",
                      1800 + i % 97, " samples/s\n");
      if (i == 100) {
        absl::StrAppend(&text_,
                        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
                        "Connection closed by peer [10.0.0.2]:42311\n");
      }
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string Gzip(const std::string& text) {
    std::string out(compressBound(text.size()) + 64, '\0');
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
  }
  std::string Zstd(const std::string& text) {
    std::string out(ZSTD_compressBound(text.size()), '\0');
    out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
    return out;
  }
  LogExplanation Open(const std::string& path) {
    auto in = OpenLog(path);
    EXPECT_TRUE(in.ok()) << in.status();
    if (!in.ok()) return {};
    return ExplainLog(**in, path);
  }

  std::filesystem::path dir_;
  std::string text_;
};

TEST_F(DamagedLogs, WholeStreamsReadCleanly) {
  for (const auto& [name, bytes] :
       {std::pair{"a.gz", Gzip(text_)},
        {"b.zst", Zstd(text_)},
        {"c.log", text_},
        {"d.gz", Gzip(text_.substr(0, 1000)) + Gzip(text_.substr(1000)) + std::string(512, '\0')},
        {"e.zst", Zstd(text_.substr(0, 1000)) + Zstd(text_.substr(1000))}}) {
    SCOPED_TRACE(name);
    const LogExplanation e = Open(Write(name, bytes));
    EXPECT_TRUE(e.input_warning.empty()) << e.input_warning;
    EXPECT_EQ(e.bytes, text_.size());
    EXPECT_EQ(e.lines, 40001);
    ASSERT_EQ(e.hits.size(), 1u);
    EXPECT_EQ(e.hits[0].line_of_example, 102);
  }
}

// Half a stream: what was read is explained, with a warning and at least
// exit 1 (what was lost may hold the failure).
TEST_F(DamagedLogs, ATruncatedStreamIsExplainedUpToItsEnd) {
  for (const auto& [name, bytes] : {std::pair{"half.gz", Gzip(text_)}, {"half.zst", Zstd(text_)}}) {
    SCOPED_TRACE(name);
    const LogExplanation e = Open(Write(name, bytes.substr(0, bytes.size() / 2)));
    EXPECT_THAT(e.input_warning, HasSubstr("ends early (truncated) after"));
    EXPECT_GT(e.lines, 200);
    EXPECT_LT(e.lines, 40001);
    EXPECT_TRUE(InputError(e).ok());
    ASSERT_EQ(e.hits.size(), 1u);
    EXPECT_EQ(ExplanationExitCode(e), 2);
    EXPECT_EQ(ExplanationToJson(e)["truncated"], true);
    EXPECT_THAT(RenderExplanationText(e), HasSubstr("(the input ended early)"));
  }
  // Nothing found before the cut: still not clean.
  const std::string quiet = Gzip(text_.substr(text_.find("RuntimeError") + 200));
  const LogExplanation e = Open(Write("quiet.gz", quiet.substr(0, quiet.size() / 2)));
  EXPECT_TRUE(e.hits.empty());
  EXPECT_EQ(ExplanationExitCode(e), 1);
}

// A stream damaged in the middle: the text before the damage, and a
// warning; one that yields no text at all is an error.
TEST_F(DamagedLogs, ACorruptStreamIsNeverReadAsAnEmptyLog) {
  std::string gz = Gzip(text_);
  gz[gz.size() / 2] ^= 0x55;
  gz[gz.size() / 2 + 1] ^= 0x55;
  const LogExplanation middle = Open(Write("middle.gz", gz));
  EXPECT_THAT(middle.input_warning, HasSubstr("gzip"));
  EXPECT_GT(middle.lines, 0);
  EXPECT_TRUE(InputError(middle).ok());
  std::string zst = Zstd(text_);
  zst[zst.size() / 2] ^= 0x55;
  const LogExplanation z = Open(Write("middle.zst", zst));
  EXPECT_THAT(z.input_warning, HasSubstr("zstd"));
  for (const auto& [name, bytes] :
       {std::pair{"header.gz", Gzip(text_).substr(0, 10)},
        {"garbage.gz", std::string("\x1f\x8b\x08\x00garbage", 12)},
        {"header.zst", Zstd(text_).substr(0, 6)},
        {"garbage.zst", std::string("\x28\xb5\x2f\xfdgarbage-garbage", 19)}}) {
    SCOPED_TRACE(name);
    const LogExplanation e = Open(Write(name, bytes));
    EXPECT_EQ(e.bytes, 0u);
    const absl::Status error = InputError(e);
    EXPECT_TRUE(absl::IsDataLoss(error)) << error;
    EXPECT_THAT(std::string(error.message()), HasSubstr("no text could be read"));
  }
  // What follows the last gzip member must be gzip or padding.
  const LogExplanation trailing = Open(Write("trailing.gz", Gzip(text_) + "not gzip at all"));
  EXPECT_THAT(trailing.input_warning, HasSubstr("followed by data that is not gzip"));
  EXPECT_EQ(trailing.bytes, text_.size());
}

}  // namespace
}  // namespace gloowatch::client
