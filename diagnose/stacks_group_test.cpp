#include "diagnose/stacks_group.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;

namespace {
// As Python 3.11's faulthandler writes it from a registered signal.
std::string dump_at(const char* thread_id, int line) {
  return std::string(
             "Thread 0x00007f1111111111 (most recent call first):\n"
             "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
             "\n"
             "Current thread ") +
         thread_id +
         " (most recent call first):\n"
         "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", "
         "line 1536 in all_reduce\n"
         "  File \"/tmp/job/train.py\", line " +
         std::to_string(line) +
         " in main\n"
         "  File \"/tmp/job/train.py\", line 30 in <module>\n";
}
}  // namespace

TEST_CASE("thread ids do not split groups; different lines do", "[stacks]") {
  CHECK(normalize_dump(dump_at("0x00007f2222222222", 12)) ==
        normalize_dump(dump_at("0x00007f3333333333", 12)));
  CHECK(normalize_dump("\n\nCurrent thread 0x00007fab (most recent call first):\n  x\n\n") ==
        "Current thread (most recent call first):\n  x\n");
  CHECK(stack_headline(dump_at("0x1", 12)) == "all_reduce at train.py:12");
  CHECK(stack_headline("Current thread 0x1 (most recent call first):\n"
                       "  File \"/w/spin.py\", line 7 in <module>\n") == "<module> at spin.py:7");
  CHECK(stack_headline("garbage").empty());

  auto groups = group_stacks({{0, dump_at("0xa", 12), ""},
                              {1, "", "exited with code 0 at 12:03:04"},
                              {2, dump_at("0xb", 12), ""},
                              {3, dump_at("0xc", 12), ""},
                              {4, dump_at("0xd", 14), ""},
                              {5, "", "stacks not available: not a Python worker"}});
  REQUIRE(groups.size() == 4);
  CHECK(groups[0].ranks == std::vector<int>{0, 2, 3});
  CHECK(groups[0].headline == "all_reduce at train.py:12");
  CHECK(groups[1].ranks == std::vector<int>{1});
  CHECK(groups[1].headline == "exited with code 0 at 12:03:04");
  CHECK(groups[2].ranks == std::vector<int>{4});
  CHECK(groups[3].headline == "stacks not available: not a Python worker");
  const std::string text = format_stack_groups(groups, "xlaunch: ");
  CHECK(text.find("xlaunch: ranks 0,2,3: all_reduce at train.py:12\n") != std::string::npos);
  CHECK(text.find("xlaunch: rank 1: exited with code 0 at 12:03:04\n") != std::string::npos);
  CHECK(text.find("xlaunch:       File \"/tmp/job/train.py\", line 12 in main\n") !=
        std::string::npos);
}
