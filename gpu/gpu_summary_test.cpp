#include "gpu/gpu_summary.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::gpu;

namespace {

GpuSample sample(std::int64_t ms, unsigned gpu, unsigned util, std::uint64_t used,
                 std::vector<SampledProcess> processes = {}) {
  GpuSample s;
  s.unix_ms = ms;
  s.gpu = gpu;
  s.utilization = util;
  s.memory_used = used;
  s.memory_total = 80ULL << 30;
  s.processes = std::move(processes);
  return s;
}

bool has_warning(const GpuUse& use, const std::string& part) {
  for (const std::string& w : use.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("gpu.csv lines round-trip, processes included") {
  const GpuSample s = sample(1700000000123, 3, 97, 1234, {{42, 0, 512}, {77, -1, 0}});
  const std::string text = gpu_csv_header() + gpu_csv_line(s) + gpu_csv_line(sample(5, 1, 0, 0));
  const auto parsed = parse_gpu_csv(text);
  REQUIRE(parsed.size() == 2);
  CHECK(parsed[0].unix_ms == 1700000000123);
  CHECK(parsed[0].gpu == 3);
  CHECK(parsed[0].utilization == 97);
  CHECK(parsed[0].memory_used == 1234);
  REQUIRE(parsed[0].processes.size() == 2);
  CHECK(parsed[0].processes[0].pid == 42);
  CHECK(parsed[0].processes[0].rank == 0);
  CHECK(parsed[0].processes[0].bytes == 512);
  CHECK(parsed[0].processes[1].rank == -1);
  CHECK(parsed[1].processes.empty());
}

TEST_CASE("a line cut off mid-write and junk lines are skipped") {
  const std::string text =
      gpu_csv_header() + gpu_csv_line(sample(1, 0, 50, 10)) + "garbage,line\n" + "2,0,5";
  const auto parsed = parse_gpu_csv(text);
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].utilization == 50);
}

TEST_CASE("averages and peaks per selected GPU") {
  const auto use = summarize_gpu_use(
      {sample(0, 0, 90, 10ULL << 30), sample(1, 0, 100, 20ULL << 30), sample(0, 1, 96, 4 << 20)},
      {0, 1, 2}, {});
  REQUIRE(use.gpus.size() == 3);
  CHECK(use.gpus[0].average_utilization == Approx(95));
  CHECK(use.gpus[0].peak_utilization == 100);
  CHECK(use.gpus[0].peak_memory == (20ULL << 30));
  CHECK(use.gpus[0].average_memory == Approx(15.0 * (1ULL << 30)));
  CHECK(use.gpus[2].samples == 0);
  const std::string text = format_gpu_use(use);
  CHECK(text.find("xlaunch: GPU 0: utilization average 95%, peak 100%; memory average 15.0 GiB, "
                  "peak 20.0 GiB of 80.0 GiB (2 readings)") != std::string::npos);
  CHECK(text.find("xlaunch: GPU 2: no readings") != std::string::npos);
  CHECK(use.warnings.empty());
}

TEST_CASE("a GPU far below the busiest is reported, an even pair is not") {
  std::vector<GpuSample> samples;
  for (int t = 0; t < 10; ++t) {
    samples.push_back(sample(t, 0, 97, 1));
    samples.push_back(sample(t, 1, 20, 1));
  }
  auto use = summarize_gpu_use(samples, {0, 1}, {});
  REQUIRE(use.warnings.size() == 1);
  CHECK(has_warning(use, "GPU 1 averaged 20% utilization, far below GPU 0 (97%)"));

  for (auto& s : samples) s.utilization = s.gpu == 0 ? 97 : 80;
  CHECK(summarize_gpu_use(samples, {0, 1}, {}).warnings.empty());
}

TEST_CASE("an idle GPU is reported only when another one worked") {
  std::vector<GpuSample> samples{sample(0, 0, 60, 1), sample(0, 1, 0, 1)};
  CHECK(has_warning(summarize_gpu_use(samples, {0, 1}, {}), "GPU 1 stayed idle"));
  samples[0].utilization = 2;
  CHECK(summarize_gpu_use(samples, {0, 1}, {}).warnings.empty());
}

TEST_CASE("a worker holding memory on another rank's GPU is reported once, with its peak") {
  const std::map<int, unsigned> gpu_of_rank{{0, 0}, {1, 1}};
  const std::vector<GpuSample> samples{
      sample(0, 0, 90, 1, {{100, 0, 1 << 30}}),
      sample(0, 1, 90, 1, {{101, 1, 1 << 30}, {100, 0, 256 << 20}, {555, -1, 1 << 20}}),
      sample(1, 1, 90, 1, {{100, 0, 512 << 20}}),
  };
  const auto use = summarize_gpu_use(samples, {0, 1}, gpu_of_rank);
  REQUIRE(use.warnings.size() == 1);
  CHECK(has_warning(use,
                    "rank 0 (pid 100) holds 512 MiB of memory on GPU 1, which is not its "
                    "own (GPU 0)"));
}

TEST_CASE("a rank on no GPU is reported once another was seen in three readings") {
  // Two workers share GPU 0 (more workers than GPUs); only rank 0 computes.
  const std::map<int, unsigned> gpu_of_rank{{0, 0}, {1, 0}};
  std::vector<GpuSample> samples{sample(0, 0, 90, 1, {{100, 0, 1 << 30}}),
                                 sample(1000, 0, 95, 1, {{100, 0, 1 << 30}})};
  CHECK(summarize_gpu_use(samples, {0}, gpu_of_rank).warnings.empty());  // too short to say
  samples.push_back(sample(2000, 0, 97, 1, {{100, 0, 1 << 30}, {555, -1, 1 << 20}}));
  const auto use = summarize_gpu_use(samples, {0}, gpu_of_rank);
  REQUIRE(use.warnings.size() == 1);
  CHECK(has_warning(use,
                    "rank 1 did no GPU work: it held memory on no GPU in any reading, "
                    "while rank 0 did in 3"));
  // Once seen, even briefly (bytes NVML could not tell included), a rank is not idle.
  samples.push_back(sample(3000, 0, 97, 1, {{101, 1, 0}}));
  CHECK(summarize_gpu_use(samples, {0}, gpu_of_rank).warnings.empty());
  // Processes NVML cannot map to ranks (a container's host pids) say nothing about ranks.
  for (GpuSample& s : samples) {
    for (SampledProcess& p : s.processes) p.rank = -1;
  }
  CHECK(summarize_gpu_use(samples, {0}, gpu_of_rank).warnings.empty());
}

TEST_CASE("pids map to the rank whose process tree they are in") {
  const std::map<long, int> workers{{100, 0}, {200, 1}};
  const std::map<long, long> parents{{300, 200}, {400, 300}, {500, 1}, {100, 50}};
  auto parent_of = [&](long pid) {
    auto it = parents.find(pid);
    return it == parents.end() ? 0L : it->second;
  };
  CHECK(rank_of_pid(100, workers, parent_of) == 0);
  CHECK(rank_of_pid(400, workers, parent_of) == 1);  // a grandchild of rank 1's worker
  CHECK(rank_of_pid(500, workers, parent_of) == -1);
  CHECK(rank_of_pid(999, workers, parent_of) == -1);
  // A cycle (pids reused while walking) ends.
  const std::map<long, long> cycle{{7, 8}, {8, 7}};
  CHECK(rank_of_pid(7, workers, [&](long p) { return cycle.at(p); }) == -1);
}

TEST_CASE("CUDA_VISIBLE_DEVICES entries map to NVML indices") {
  NvmlReport nvml;
  nvml.gpus = {GpuInfo{0, "GPU-aaa", "x", 0, 9, 0}, GpuInfo{1, "GPU-bbb", "x", 0, 9, 0}};
  CHECK(nvml_index_of("1", nvml) == 1u);
  CHECK(nvml_index_of("GPU-aaa", nvml) == 0u);
  CHECK_FALSE(nvml_index_of("2", nvml));
  CHECK_FALSE(nvml_index_of("MIG-xyz", nvml));
}
