#include "launcher/stop_request.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::launcher;

TEST_CASE("a stop signal read after every worker ended stops nothing", "[supervisor]") {
  // The review's case: the last worker's exit and a SIGINT read in one batch.
  CHECK(respond_to_stop({.attempt_done = true}) == StopResponse::after_the_end);
  CHECK(respond_to_stop({.attempt_done = true, .failing = true}) == StopResponse::after_the_end);
  CHECK(respond_to_stop({.attempt_done = true, .interrupted = true}) ==
        StopResponse::after_the_end);
}

TEST_CASE("stop signals while workers run", "[supervisor]") {
  CHECK(respond_to_stop({}) == StopResponse::stop);
  CHECK(respond_to_stop({.failing = true}) == StopResponse::hurry_teardown);
  CHECK(respond_to_stop({.interrupted = true, .within_same_request = true}) ==
        StopResponse::same_request);
  CHECK(respond_to_stop({.interrupted = true}) == StopResponse::kill_now);
  CHECK(respond_to_stop({.interrupted = true, .failing = true}) == StopResponse::kill_now);
}
