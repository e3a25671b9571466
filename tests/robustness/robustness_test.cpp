// Every case of the catalogue (catalogue.h) run against the tessera executable: the expected
// exit status, one line on stderr naming the fragment, nothing on stdout for bad input, and
// never a crash, a hang, a SystemC report or an exit 0.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "catalogue.h"
#include "child_process.h"
#include "tests/support/temp_folder.h"

namespace robustness {
namespace {

std::vector<std::string> split_args(const std::string& line) {
  std::vector<std::string> args;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    for (size_t at; (at = word.find("{src}")) != std::string::npos;) word.replace(at, 5, TESSERA_SOURCE_DIR);
    args.push_back(word);
  }
  return args;
}

int lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, OneLineWithSourceValueAndStatus) {
  const Case& c = GetParam();
  SCOPED_TRACE(std::string("tessera ") + c.args);
  const test_support::TempFolder scratch("/tmp/tessera-robustness-");
  const std::string& folder = scratch.path();
  for (const File& f : c.files) std::ofstream(folder + "/" + f.name) << f.text;
  const Outcome r = run_child(TESSERA_BIN, split_args(c.args), folder, Limits{});
  ASSERT_FALSE(r.timed_out) << "hung";
  ASSERT_EQ(r.signal, 0) << "crashed with signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.status, c.status) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(c.fragment), std::string::npos) << "expected '" << c.fragment << "' in\n" << r.err;
  for (const char* dump : {"SystemC", "E549", "sc_except", "std::bad_alloc"})
    EXPECT_EQ(r.err.find(dump), std::string::npos) << r.err;
  if (c.status == 2) {
    EXPECT_EQ(r.out, "") << "bad input prints nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(Catalogue, HasAHundredCasesCoveringEveryCommand) {
  EXPECT_GE(catalogue().size(), 100u);
  for (const char* command : {"run", "collective", "describe", "validate", "calibrate", "compute", "models", "platforms"}) {
    bool found = false;
    for (const Case& c : catalogue()) found |= std::string(c.args).rfind(command, 0) == 0;
    EXPECT_TRUE(found) << command;
  }
}

}  // namespace
}  // namespace robustness
