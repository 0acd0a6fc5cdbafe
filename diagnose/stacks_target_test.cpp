#include "diagnose/stacks_target.hpp"

#include <signal.h>

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;

namespace {
// A Python 3.11 process with faulthandler registered for SIGURG (23) and SIGINT caught.
constexpr std::string_view kPython =
    "Name:\tpython3\nNSpid:\t4242\nSigQ:\t0/96365\nSigPnd:\t0000000000000000\n"
    "ShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\n"
    "SigCgt:\t0000000100400002\nCapInh:\t0000000000000000\n";
// The same pid after exec("sleep"): nothing caught.
constexpr std::string_view kSleep =
    "Name:\tsleep\nNSpid:\t4242\t7\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n";
}  // namespace

TEST_CASE("SigCgt says which signals a process handles", "[stacks]") {
  CHECK(catches_signal(kPython, SIGURG));
  CHECK(catches_signal(kPython, SIGINT));
  CHECK_FALSE(catches_signal(kPython, SIGUSR1));
  CHECK_FALSE(catches_signal(kSleep, SIGURG));
  CHECK_FALSE(catches_signal("Name:\tx\nSigCgt:\tzz\n", SIGURG));  // malformed: no
  CHECK_FALSE(catches_signal("Name:\tx\n", SIGURG));
  CHECK_FALSE(catches_signal(kPython, 0));
  CHECK(catches_signal("x\nSigCgt:\t8000000000000000\n", 64));
}

TEST_CASE("a worker's own pid is the last of NSpid", "[stacks]") {
  CHECK(own_pid(kPython) == 4242);
  CHECK(own_pid(kSleep) == 7);  // inside a PID namespace
  CHECK_FALSE(own_pid("Name:\tx\n"));
}

TEST_CASE("the descriptor note and the reasons a rank is not asked", "[stacks]") {
  CHECK(parse_descriptor_note("960\n") == 960);
  CHECK_FALSE(parse_descriptor_note("x"));
  CHECK_FALSE(parse_descriptor_note("-1"));
  CHECK(missing_text(DumpTarget::ready).empty());
  CHECK(missing_text(DumpTarget::not_python) == "stacks not available: not a Python worker");
  CHECK(missing_text(DumpTarget::no_handler).find("exec") != std::string::npos);
  CHECK(missing_text(DumpTarget::file_closed).find("closed its descriptors") != std::string::npos);
}
