#include "cluster/slurm.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch;
using namespace xlaunch::cluster;

// The variables below are what SLURM 22.05's srun gave each task (scripts/cluster-up).

TEST_CASE("an srun step gives machines, rank and machine 0's host", "[slurm]") {
  Environment env{{"SLURM_STEP_ID", "0"},
                  {"SLURM_NNODES", "4"},
                  {"SLURM_NODEID", "2"},
                  {"SLURM_JOB_NODELIST", "gpu[07-08,11],gpu20"}};
  std::optional<ClusterDetection> found = detect_slurm(env);
  REQUIRE(found);
  CHECK(found->scheduler == "SLURM");
  CHECK(found->settings.num_machines == 4);
  CHECK(found->settings.machine_rank == 2);
  CHECK(found->settings.main_process_ip == "gpu07");
  CHECK_FALSE(found->refusal);
}

TEST_CASE("a step on part of the allocation uses the step's nodes", "[slurm]") {
  // salloc -N3, then srun -N2 -w node[2-3]: the job's list still names node1.
  Environment env{{"SLURM_STEP_ID", "0"},
                  {"SLURM_JOB_NODELIST", "node[1-3]"},
                  {"SLURM_NODELIST", "node[1-3]"},
                  {"SLURM_STEP_NODELIST", "node[2-3]"},
                  {"SLURM_STEP_NUM_NODES", "2"},
                  {"SLURM_NNODES", "2"},
                  {"SLURM_NODEID", "1"},
                  {"SLURMD_NODENAME", "node3"},
                  {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}};
  std::optional<ClusterDetection> found = detect_slurm(env);
  REQUIRE(found);
  CHECK(found->settings.num_machines == 2);
  CHECK(found->settings.machine_rank == 1);
  CHECK(found->settings.main_process_ip == "node2");
  CHECK_FALSE(found->refusal);
}

TEST_CASE("two launchers on one node of a step are refused", "[slurm]") {
  // srun -N1 --ntasks=2: both tasks are node 0 of a one-node step.
  Environment env{{"SLURM_STEP_ID", "0"},        {"SLURM_STEP_NODELIST", "node1"},
                  {"SLURM_STEP_NUM_NODES", "1"}, {"SLURM_NODEID", "0"},
                  {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "2"}};
  std::optional<ClusterDetection> found = detect_slurm(env);
  REQUIRE(found);
  REQUIRE(found->refusal);
  CHECK(*found->refusal ==
        "srun started 2 launchers on node1 (SLURM_STEP_TASKS_PER_NODE=2), which would all be "
        "machine 0");
  CHECK(found->hint.find("--ntasks-per-node=1") != std::string::npos);

  // Uneven: node 1 of "1,2" has two; node 0 has one.
  env["SLURM_STEP_NODELIST"] = "node[1-2]";
  env["SLURM_STEP_NUM_NODES"] = "2";
  env["SLURM_STEP_NUM_TASKS"] = "3";
  env["SLURM_STEP_TASKS_PER_NODE"] = "1,2";
  CHECK_FALSE(detect_slurm(env)->refusal);
  env["SLURM_NODEID"] = "1";
  CHECK(detect_slurm(env)->refusal);

  // Without per-node counts: more tasks than nodes.
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  env["SLURM_NODEID"] = "0";
  REQUIRE(detect_slurm(env)->refusal);
  CHECK(*detect_slurm(env)->refusal ==
        "srun started 3 launchers on 2 nodes (SLURM_STEP_NUM_TASKS=3), more than one on some "
        "node");
  env["SLURM_STEP_NUM_TASKS"] = "2";
  CHECK_FALSE(detect_slurm(env)->refusal);
}

TEST_CASE("an sbatch script or salloc shell (no step) is not a multi-machine launch", "[slurm]") {
  Environment env{{"SLURM_NNODES", "2"},
                  {"SLURM_NODEID", "0"},
                  {"SLURM_JOB_NODELIST", "n[1-2]"},
                  {"SLURM_TASKS_PER_NODE", "1(x2)"}};
  CHECK_FALSE(detect_slurm(env));
  CHECK_FALSE(detect_slurm({}));
}

TEST_CASE("a bad hostlist is a note, not a guess", "[slurm]") {
  Environment env{{"SLURM_STEP_ID", "1"},
                  {"SLURM_NNODES", "2"},
                  {"SLURM_NODEID", "0"},
                  {"SLURM_STEP_NODELIST", "n[1-"}};
  std::optional<ClusterDetection> found = detect_slurm(env);
  REQUIRE(found);
  CHECK_FALSE(found->settings.main_process_ip);
  REQUIRE(found->notes.size() == 1);
  CHECK(found->notes[0].find("SLURM_STEP_NODELIST") != std::string::npos);
  CHECK(found->notes[0].find("--main_process_ip") != std::string::npos);
}

TEST_CASE("tasks per node expand like SLURM's", "[slurm]") {
  using V = std::vector<int>;
  CHECK(expand_tasks_per_node("1(x2)") == V{1, 1});
  CHECK(expand_tasks_per_node("2(x3),1") == V{2, 2, 2, 1});
  CHECK(expand_tasks_per_node("4") == V{4});
  CHECK_THROWS_WITH(expand_tasks_per_node("2(x"), Catch::Contains("COUNT(xREPEAT)"));
  CHECK_THROWS_WITH(expand_tasks_per_node("a"), Catch::Contains("not a task count"));
  CHECK_THROWS_WITH(expand_tasks_per_node("1(x0)"), Catch::Contains("COUNT(xREPEAT)"));
}

TEST_CASE("tasks per node: more nodes than any job has is refused before it is allocated",
          "[slurm]") {
  std::string bomb = "1(x1000000)";
  for (int i = 0; i < 2000; ++i) bomb += ",1(x1000000)";  // ~8 GB once expanded
  CHECK_THROWS_WITH(expand_tasks_per_node(bomb), Catch::Contains("more than 65536 nodes"));
  CHECK(expand_tasks_per_node("1(x65536)").size() == 65536);
  CHECK_THROWS(expand_tasks_per_node("1(x65536),1"));
  // Detection goes on without the per-node counts (a note), from the task count.
  Environment env{{"SLURM_STEP_ID", "0"},
                  {"SLURM_STEP_NUM_NODES", "2"},
                  {"SLURM_NODEID", "1"},
                  {"SLURM_STEP_NUM_TASKS", "2"},
                  {"SLURM_STEP_TASKS_PER_NODE", bomb}};
  std::optional<ClusterDetection> found = detect_slurm(env);
  REQUIRE(found);
  CHECK_FALSE(found->refusal);
  REQUIRE(found->notes.size() == 1);
  CHECK(found->notes[0].find("SLURM_STEP_TASKS_PER_NODE: lists more than") == 0);
}

TEST_CASE("a bad node count or node id is refused, naming the variable", "[slurm]") {
  Environment env{{"SLURM_STEP_ID", "0"}, {"SLURM_NNODES", "2"}, {"SLURM_NODEID", "x"}};
  std::optional<ClusterDetection> found = detect_slurm(env);
  REQUIRE(found);
  REQUIRE(found->refusal);
  CHECK(*found->refusal ==
        "environment variable SLURM_NODEID='x' is not a machine rank of the 2-machine job "
        "(SLURM_NNODES=2): allowed 0..1");
  env["SLURM_NODEID"] = "3";
  CHECK(detect_slurm(env)->refusal->find("SLURM_NODEID='3'") != std::string::npos);
  env["SLURM_STEP_NUM_NODES"] = "x";  // the step's count is the one used, and named
  env["SLURM_NODEID"] = "1";
  CHECK(detect_slurm(env)->refusal->find("SLURM_STEP_NUM_NODES='x' is not a machine count") !=
        std::string::npos);
  env.erase("SLURM_STEP_NUM_NODES");
  env.erase("SLURM_NODEID");
  CHECK(detect_slurm(env)->refusal->find("SLURM_NODEID (this machine's rank) is not set") !=
        std::string::npos);
}
