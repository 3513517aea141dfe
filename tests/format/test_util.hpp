#pragma once
// Helpers for the format tests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lutmm/error.hpp"

namespace lutmm {

// Runs fn, which must throw lutmm::Error whose message names `argument` (as 'argument') and contains
// `got` (a fragment of what came).
template <class Fn>
void expect_error(Fn&& fn, const std::string& argument, const std::string& got = "") {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("argument '" + argument + "'"), std::string::npos)
        << "message does not name '" << argument << "': " << msg;
    EXPECT_NE(msg.find(got), std::string::npos) << "message lacks '" << got << "': " << msg;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-lutmm exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "did not throw (expected an error naming '" << argument << "')";
}

inline std::vector<float> gaussian(int64_t n, int64_t k, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& x : w) x = dist(rng);
  return w;
}

}  // namespace lutmm
