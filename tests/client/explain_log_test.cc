#include "client/explain_log.h"

#include <fstream>
#include <set>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/subprocess.h"

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
  }
  EXPECT_THAT(j["signatures"][1]["fix"].get<std::string>(), HasSubstr("init_process_group"));
}

TEST(ExplainLog, EmptyInput) {
  std::istringstream in("");
  LogExplanation e = ExplainLog(in, "empty");
  EXPECT_EQ(e.lines, 0);
  EXPECT_TRUE(e.hits.empty());
  EXPECT_THAT(RenderExplanationText(e), HasSubstr("no known signatures"));
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
  EXPECT_TRUE(e.binary);
  ASSERT_EQ(e.hits.size(), 1u);
  EXPECT_EQ(e.hits[0].id, "peer_connection_closed");
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

}  // namespace
}  // namespace gloowatch::client
