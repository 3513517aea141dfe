// runtime/trace.hpp, the developers' per-block trace (kernels built with -DLUTMM_TIMELINE=3): off unless started,
// and reading it before it was started is an error that names what is missing. (The records themselves are
// written by kernels on a GPU: scripts/timeline.py's tests cover the CSV they become.)
#include <gtest/gtest.h>

#include <string>

#include "lutmm/error.hpp"
#include "runtime/trace.hpp"

namespace lutmm {
namespace {

TEST(Trace, LaunchesPassNoBufferUntilStarted) { EXPECT_EQ(trace::buffer(), nullptr); }

TEST(Trace, WritingBeforeStartingIsAnErrorNamingIt) {
  try {
    trace::write_csv("unused.csv");
    FAIL() << "write_csv before start() returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'trace'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not started"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lutmm
