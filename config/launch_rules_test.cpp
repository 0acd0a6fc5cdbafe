#include "config/launch_rules.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::config;

namespace {

bool never_local(const std::string&) { return false; }
bool always_local(const std::string&) { return true; }

std::string error_of(Resolved r, const IsLocalHost& is_local = never_local) {
  try {
    apply_launch_rules(r, is_local);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an elastic MIN:MAX range passes the launch rules", "[rules]") {
  Resolved r;
  r.settings.min_machines = 1;
  r.settings.max_machines = 2;
  r.settings.num_machines = 2;
  CHECK(error_of(r).empty());
}

TEST_CASE("num_processes and nproc_per_node: one source contradicting itself is an error",
          "[rules]") {
  Resolved r;
  r.settings.num_processes = 2;
  r.settings.nproc_per_node = 3;
  r.origins = {{"num_processes", Origin::Flag}, {"nproc_per_node", Origin::Flag}};
  CHECK(error_of(r).find("num_processes 2 and nproc_per_node 3 contradict each other") == 0);
  r.settings.num_processes = 6;
  r.settings.num_machines = 2;
  CHECK(error_of(r).empty());  // 2 machines of 3 is 6
}

TEST_CASE("num_processes and nproc_per_node from different sources: the higher wins", "[rules]") {
  Resolved r;
  r.settings.num_processes = 8;
  r.settings.nproc_per_node = 2;
  r.origins = {{"num_processes", Origin::File}, {"nproc_per_node", Origin::Flag}};
  apply_launch_rules(r, never_local);
  CHECK_FALSE(r.settings.num_processes);
  CHECK(r.settings.nproc_per_node == 2);
  Resolved q;
  q.settings.num_processes = 4;
  q.settings.nproc_per_node = 2;
  q.origins = {{"num_processes", Origin::Flag}, {"nproc_per_node", Origin::File}};
  apply_launch_rules(q, never_local);
  CHECK(q.settings.num_processes == 4);
  CHECK_FALSE(q.settings.nproc_per_node);
}

TEST_CASE("MULTI_GPU with use_cpu: same source is an error and else the higher wins", "[rules]") {
  Resolved r;
  r.settings.distributed_type = DistributedType::MultiGpu;
  r.settings.use_cpu = true;
  r.origins = {{"distributed_type", Origin::File}, {"use_cpu", Origin::File}};
  CHECK(error_of(r).find("distributed_type MULTI_GPU and use_cpu true contradict") == 0);
  r.origins["use_cpu"] = Origin::Flag;
  apply_launch_rules(r, never_local);
  CHECK(r.settings.distributed_type == DistributedType::MultiCpu);
  Resolved q;
  q.settings.distributed_type = DistributedType::MultiGpu;
  q.settings.use_cpu = true;
  q.origins = {{"distributed_type", Origin::Flag}, {"use_cpu", Origin::File}};
  apply_launch_rules(q, never_local);
  CHECK(q.settings.use_cpu == false);
}

TEST_CASE("distributed_type NO with several processes names both sources", "[rules]") {
  Resolved r;
  r.config_file = "c.yaml";
  r.settings.distributed_type = DistributedType::No;
  r.settings.num_processes = 2;
  r.origins = {{"distributed_type", Origin::File}, {"num_processes", Origin::Flag}};
  CHECK(error_of(r) ==
        "distributed_type NO (from config file c.yaml) runs one process, but 2 processes were "
        "asked for (from the command line)");
  r.settings.num_processes = 1;
  CHECK(error_of(r).empty());
}

TEST_CASE("flag rdzv_endpoint becomes the store address - its host's launcher is machine 0",
          "[rules]") {
  Resolved r;
  r.settings.rdzv_endpoint = "node0";
  r.settings.num_machines = 2;
  r.settings.main_process_ip = "ignored";
  apply_launch_rules(r, always_local);
  CHECK(r.settings.main_process_ip == "node0");
  CHECK(r.settings.main_process_port == 29400);
  CHECK(r.settings.machine_rank == 0);

  Resolved joiner;
  joiner.settings.rdzv_endpoint = "node0:1234";
  joiner.settings.num_machines = 2;
  CHECK(error_of(joiner).find("does not host the store") != std::string::npos);
  joiner.settings.machine_rank = 1;
  apply_launch_rules(joiner, never_local);
  CHECK(joiner.settings.main_process_port == 1234);
  CHECK(joiner.settings.machine_rank == 1);

  Resolved forced;  // is_host=true decides without looking at addresses
  forced.settings.rdzv_endpoint = "elsewhere";
  forced.settings.rdzv_is_host = true;
  forced.settings.num_machines = 2;
  apply_launch_rules(forced, never_local);
  CHECK(forced.settings.machine_rank == 0);
  forced.settings.machine_rank = 1;
  CHECK(error_of(forced).find("is_host=true, but --node_rank is 1") != std::string::npos);
}

TEST_CASE("a one-machine job with an endpoint listens where its workers dial", "[rules]") {
  Resolved r;
  r.settings.rdzv_endpoint = "myhost:29555";
  apply_launch_rules(r, always_local);
  CHECK(r.settings.bind_addr == "myhost");
  CHECK(r.settings.main_process_ip == "myhost");
  Resolved far;
  far.settings.rdzv_endpoint = "otherhost";
  CHECK(error_of(far).find("a one-machine job hosts its own store") != std::string::npos);
}

TEST_CASE("endpoint port 0: a free port for one machine, refused for several", "[rules]") {
  Resolved one;  // torchrun's documented single-node command
  one.settings.rdzv_endpoint = "localhost:0";
  one.settings.num_machines = one.settings.min_machines = one.settings.max_machines = 1;
  apply_launch_rules(one, always_local);
  CHECK(one.settings.main_process_port == 0);
  CHECK(one.settings.machine_rank == 0);
  CHECK(one.settings.bind_addr == "localhost");

  Resolved two;
  two.settings.rdzv_endpoint = "localhost:0";
  two.settings.num_machines = 2;
  two.origins["rdzv_endpoint"] = Origin::Flag;
  const std::string error = error_of(two, always_local);
  CHECK(error.find("--rdzv_endpoint localhost:0: port 0") == 0);
  CHECK(error.find("2-machine job cannot know") != std::string::npos);

  Resolved elastic;  // plans for MAX machines
  elastic.settings.rdzv_endpoint = "[::1]:0";
  elastic.settings.min_machines = 1;
  elastic.settings.num_machines = elastic.settings.max_machines = 4;
  elastic.origins["rdzv_endpoint"] = Origin::Environment;
  elastic.variables["rdzv_endpoint"] = "PET_RDZV_ENDPOINT";
  try {
    apply_launch_rules(elastic, always_local);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("PET_RDZV_ENDPOINT [::1]:0: port 0") == 0);
    CHECK(e.hint().find("PET_RDZV_ENDPOINT [::1]:29400") != std::string::npos);
  }
}

TEST_CASE("loopback and this machine's name are local - a far address is not", "[rules]") {
  CHECK(is_local_host("localhost"));
  CHECK(is_local_host("127.0.0.1"));
  CHECK_FALSE(is_local_host("192.0.2.1"));  // TEST-NET-1, never assigned
}
