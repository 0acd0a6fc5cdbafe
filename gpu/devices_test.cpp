#include "gpu/devices.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch::gpu;
using Strings = std::vector<std::string>;

namespace {
NvmlReport gpus(int n) {
  NvmlReport report;
  for (int i = 0; i < n; ++i) {
    GpuInfo gpu;
    gpu.index = static_cast<unsigned>(i);
    report.gpus.push_back(gpu);
  }
  return report;
}
}  // namespace

TEST_CASE("CUDA_VISIBLE_DEVICES follows CUDA's parsing rules", "[devices]") {
  CHECK(parse_cuda_visible_devices("6,7") == Strings{"6", "7"});
  CHECK(parse_cuda_visible_devices("") == Strings{});
  CHECK(parse_cuda_visible_devices(" 1 , 2 ") == Strings{"1", "2"});
  // The list ends at the first invalid entry.
  CHECK(parse_cuda_visible_devices("0,1,-1,2") == Strings{"0", "1"});
  CHECK(parse_cuda_visible_devices("abc,1") == Strings{});
  CHECK(parse_cuda_visible_devices("0,,1") == Strings{"0"});
  // UUIDs and MIG ids pass through unchanged.
  CHECK(parse_cuda_visible_devices("GPU-8932f937-d72c,MIG-GPU-1/2/0,3") ==
        Strings{"GPU-8932f937-d72c", "MIG-GPU-1/2/0", "3"});
}

TEST_CASE("visible GPUs combine NVML and CUDA_VISIBLE_DEVICES", "[devices]") {
  CHECK(visible_gpus(std::nullopt, gpus(4)) == Strings{"0", "1", "2", "3"});
  CHECK(visible_gpus(std::nullopt, std::nullopt) == Strings{});
  CHECK(visible_gpus(std::string("4,5,6,7"), gpus(8)) == Strings{"4", "5", "6", "7"});
  // An index NVML does not have ends the list, as in CUDA.
  CHECK(visible_gpus(std::string("1,9,2"), gpus(4)) == Strings{"1"});
  // Without NVML the variable's entries are taken as the GPUs.
  CHECK(visible_gpus(std::string("6,7"), std::nullopt) == Strings{"6", "7"});
  CHECK(visible_gpus(std::string(""), gpus(4)) == Strings{});
}

TEST_CASE("gpu_ids index into the GPUs the launcher sees", "[devices]") {
  const Strings visible{"4", "5", "6", "7"};
  CHECK(select_gpus("1,3", visible) == Strings{"5", "7"});
  CHECK(select_gpus("all", visible) == visible);
  CHECK(select_gpus("2", visible) == Strings{"6"});
  CHECK_THROWS_WITH(select_gpus("4", visible),
                    Catch::Contains("GPU index 4 is out of range") && Catch::Contains("4 GPU(s)"));
  CHECK_THROWS_AS(select_gpus("x", visible), xlaunch::UsageError);
  CHECK_THROWS_AS(select_gpus("-1", visible), xlaunch::UsageError);
  CHECK_THROWS_WITH(select_gpus("1,1", visible), Catch::Contains("listed twice"));
}

TEST_CASE("a device named twice in CUDA_VISIBLE_DEVICES hides every GPU, as in CUDA", "[devices]") {
  CHECK(parse_cuda_visible_devices("0,0") == Strings{});
  CHECK(parse_cuda_visible_devices("0,1,2,1") == Strings{});
  CHECK(parse_cuda_visible_devices("1,01") == Strings{});  // the same index, written twice
  CHECK(parse_cuda_visible_devices("GPU-abc,GPU-abc") == Strings{});
  // A repeat after an invalid entry is never read: the list already ended.
  CHECK(parse_cuda_visible_devices("0,-1,0") == Strings{"0"});
  CHECK(repeated_cuda_device("0,1,2,1") == "1");
  CHECK(repeated_cuda_device("3,003") == "003");
  CHECK_FALSE(repeated_cuda_device("0,1,x,1"));
  CHECK_FALSE(repeated_cuda_device("0,10"));
  CHECK(visible_gpus(std::string("0,0"), gpus(2)) == Strings{});
  CHECK(visible_gpus(std::string("0,0"), std::nullopt) == Strings{});
}

TEST_CASE("the repeated device warning names the entry and a fix", "[devices]") {
  CHECK_FALSE(cuda_visible_devices_warning(std::nullopt));
  CHECK_FALSE(cuda_visible_devices_warning(std::string("0,1")));
  const auto warning = cuda_visible_devices_warning(std::string("2,0,2"));
  REQUIRE(warning);
  CHECK(*warning ==
        "CUDA_VISIBLE_DEVICES=2,0,2 names device 2 twice; CUDA then shows no GPU at all, so "
        "xlaunch uses none (list each GPU once, e.g. CUDA_VISIBLE_DEVICES=2,0)");
}
