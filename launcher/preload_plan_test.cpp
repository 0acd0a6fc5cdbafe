#include "launcher/preload_plan.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::launcher;

namespace {

LaunchPlan python_plan() {
  LaunchPlan plan;
  plan.argv = {"/usr/bin/python3", "-u", "train.py", "--lr", "0.1"};
  plan.python_program = true;
  plan.preload = {"torch"};
  return plan;
}

}  // namespace

TEST_CASE("a Python program in the launcher's own form can be preloaded") {
  CHECK_FALSE(preload_not_applicable(python_plan(), false));
}

TEST_CASE("preloading does not apply to a program that is not Python, or in a PID namespace") {
  LaunchPlan binary = python_plan();
  binary.argv = {"/bin/true"};
  binary.python_program = false;
  const auto why = preload_not_applicable(binary, false);
  REQUIRE(why);
  CHECK(why->find("/bin/true runs as it is") != std::string::npos);
  const auto in_namespace = preload_not_applicable(python_plan(), true);
  REQUIRE(in_namespace);
  CHECK(in_namespace->find("PID namespace") != std::string::npos);
}

TEST_CASE("the template runs the ranks' interpreter with the modules and the ranks' argv") {
  const auto argv = preload_template_argv(python_plan().argv, {"torch", "numpy"});
  REQUIRE(argv.size() == 11);
  CHECK(argv[0] == "/usr/bin/python3");
  CHECK(argv[1] == "-u");
  CHECK(argv[2] == "-S");
  CHECK(argv[3] == "-c");
  CHECK(argv[4] == preload_template_source());
  CHECK(argv[5] == "torch,numpy");
  CHECK(argv[6] == "--");
  CHECK(std::vector<std::string>(argv.begin() + 7, argv.end()) ==
        std::vector<std::string>{"-u", "train.py", "--lr", "0.1"});
}

TEST_CASE("the template's environment is what every rank shares, without per-rank variables") {
  const Environment rank0 = {{"PATH", "/bin"},         {"RANK", "0"},
                             {"LOCAL_RANK", "0"},      {"CUDA_VISIBLE_DEVICES", "0"},
                             {"OMP_NUM_THREADS", "1"}, {"TORCHELASTIC_ERROR_FILE", "/r/0/e.json"}};
  const Environment rank1 = {{"PATH", "/bin"},         {"RANK", "1"},
                             {"LOCAL_RANK", "1"},      {"CUDA_VISIBLE_DEVICES", "1"},
                             {"OMP_NUM_THREADS", "1"}, {"TORCHELASTIC_ERROR_FILE", "/r/1/e.json"}};
  CHECK(preload_template_env({rank0, rank1}) ==
        Environment{{"PATH", "/bin"}, {"OMP_NUM_THREADS", "1"}});
  // One rank: nothing differs, and the per-rank variables still go.
  CHECK(preload_template_env({rank0}) ==
        Environment{{"PATH", "/bin"}, {"CUDA_VISIBLE_DEVICES", "0"}, {"OMP_NUM_THREADS", "1"}});
  CHECK(preload_template_env({}).empty());
}
