// xlaunch-selftest: the worker `xlaunch test` launches on every rank. It checks a store
// round trip, repeated barriers and an all-reduce (NCCL when this rank sees a GPU, else
// Gloo), then prints one machine-readable line:
//   XLAUNCH_SELFTEST {"rank":0,"size":4,...,"status":"pass","error":""}
// With XLAUNCH_SELFTEST_RESULTS=DIR (`xlaunch test`) the line goes to DIR/rank<N>.json instead.
// Exit status 0 when every check passed on this rank, 1 otherwise.
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xlaunch/xlaunch.hpp>

#if XLAUNCH_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif
#if XLAUNCH_HAVE_GLOO
#include <gloo/allreduce_ring.h>
#include <gloo/context.h>
#endif

namespace {

constexpr int kCount = 4096;

struct Result {
  int rank = -1, size = -1, local_rank = -1, node_rank = -1;
  std::string store = "skipped", barrier = "skipped", backend = "none", allreduce = "skipped",
              error;
};

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// Every rank publishes bytes with a NUL inside, then reads its right neighbour's.
void store_round_trip(xlaunch::World& world) {
  xlaunch::Store& store = world.store();
  const std::string base = world.key_prefix() + "selftest/";
  auto payload = [](int rank) { return fmt::format("rank{}", rank) + std::string(1, '\0') + "ok"; };
  store.set(base + fmt::format("value/{}", world.rank()), payload(world.rank()));
  store.add(base + "count", 1);
  const int next = (world.rank() + 1) % world.size();
  std::string got = store.get(base + fmt::format("value/{}", next));
  check(got == payload(next),
        fmt::format("store: rank {}'s value came back wrong ({} bytes)", next, got.size()));
  world.barrier();
  std::int64_t count = store.add(base + "count", 0);
  check(count == world.size(),
        fmt::format("store: counter is {} after the barrier, expected {}", count, world.size()));
}

double expected(int size, int i) { return size * (size + 1) / 2.0 + static_cast<double>(size) * i; }

[[maybe_unused]] std::vector<double> input(int rank) {
  std::vector<double> data(kCount);
  for (int i = 0; i < kCount; ++i) data[i] = rank + 1 + i;
  return data;
}

[[maybe_unused]] void verify(const std::vector<double>& data, int size) {
  for (int i = 0; i < kCount; ++i) {
    check(data[i] == expected(size, i),
          fmt::format("all-reduce: element {} is {}, expected {}", i, data[i], expected(size, i)));
  }
}

#if XLAUNCH_HAVE_NCCL
bool sees_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

void cuda_check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(fmt::format("{}: {}", call, cudaGetErrorString(status)));
  }
}

void nccl_check(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) {
    throw std::runtime_error(fmt::format("{}: {}", call, ncclGetErrorString(status)));
  }
}

void nccl_allreduce(xlaunch::World& world) {
  ncclComm_t comm = world.nccl_comm();
  std::vector<double> data = input(world.rank());
  double* device = nullptr;
  cudaStream_t stream = nullptr;
  cuda_check(cudaMalloc(&device, kCount * sizeof(double)), "cudaMalloc");
  cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cuda_check(cudaMemcpy(device, data.data(), kCount * sizeof(double), cudaMemcpyHostToDevice),
             "cudaMemcpy");
  nccl_check(ncclAllReduce(device, device, kCount, ncclDouble, ncclSum, comm, stream),
             "ncclAllReduce");
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cuda_check(cudaMemcpy(data.data(), device, kCount * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  cudaFree(device);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  verify(data, world.size());
}
#endif

#if XLAUNCH_HAVE_GLOO
void gloo_allreduce(xlaunch::World& world) {
  std::shared_ptr<gloo::Context> context = world.gloo_context();
  std::vector<double> data = input(world.rank());
  std::vector<double*> pointers{data.data()};
  gloo::AllreduceRing<double>(context, pointers, kCount).run();
  // Dropping the context closes its connections: wait until no peer still uses them.
  world.barrier();
  verify(data, world.size());
}
#endif

// Prints the result line; with XLAUNCH_SELFTEST_RESULTS=DIR (set by `xlaunch test`) writes
// it to DIR/rank<N>.json instead, so the launcher tabulates results without parsing output
// (and its console shows the table, not the raw lines).
void report(const Result& r, bool pass) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string json = fmt::format(
      "{{\"rank\":{},\"size\":{},\"local_rank\":{},\"node_rank\":{},"
      "\"host\":{},\"pid\":{},\"store\":{},\"barrier\":{},\"backend\":{},\"allreduce\":{},"
      "\"status\":{},\"error\":{}}}",
      r.rank, r.size, r.local_rank, r.node_rank, json_string(host), ::getpid(),
      json_string(r.store), json_string(r.barrier), json_string(r.backend),
      json_string(r.allreduce), json_string(pass ? "pass" : "fail"), json_string(r.error));
  const char* dir = std::getenv("XLAUNCH_SELFTEST_RESULTS");
  if (dir != nullptr && *dir != '\0') {
    int rank = r.rank >= 0 ? r.rank : std::atoi(std::getenv("RANK") ? std::getenv("RANK") : "-1");
    std::string path = fmt::format("{}/rank{}.json", dir, rank);
    if (std::FILE* file = std::fopen(path.c_str(), "w")) {
      fmt::print(file, "{}\n", json);
      std::fclose(file);
      return;
    }
    fmt::print(stderr, "xlaunch-selftest: cannot write {}: {}\n", path, std::strerror(errno));
  }
  fmt::print("XLAUNCH_SELFTEST {}\n", json);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "auto";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with("--backend=")) {
      backend = std::string(arg.substr(10));
    } else if (arg == "--help" || arg == "-h") {
      fmt::print(
          "usage: xlaunch-selftest [--backend=auto|nccl|gloo]\n"
          "Run under `xlaunch launch --no_python` (or `xlaunch test`).\n");
      return 0;
    } else {
      fmt::print(stderr, "xlaunch-selftest: unknown argument '{}' (try --help)\n", arg);
      return 2;
    }
  }
  if (backend != "auto" && backend != "nccl" && backend != "gloo") {
    fmt::print(stderr, "xlaunch-selftest: --backend must be auto, nccl or gloo\n");
    return 2;
  }

  Result result;
  try {
    xlaunch::World world = xlaunch::World::from_env();
    result.rank = world.rank();
    result.size = world.size();
    result.local_rank = world.local_rank();
    result.node_rank = world.node_rank();

    store_round_trip(world);
    result.store = "ok";
    for (int i = 0; i < 3; ++i) world.barrier();
    result.barrier = "ok";

#if XLAUNCH_HAVE_NCCL
    if (backend == "auto") backend = sees_gpu() ? "nccl" : "gloo";
#else
    if (backend == "auto") backend = "gloo";
#endif
    result.backend = backend;
    result.allreduce = "failed";
    if (backend == "nccl") {
#if XLAUNCH_HAVE_NCCL
      nccl_allreduce(world);
#else
      world.nccl_comm();     // throws: built without NCCL
#endif
    } else {
#if XLAUNCH_HAVE_GLOO
      gloo_allreduce(world);
#else
      world.gloo_context();  // throws: built without Gloo
#endif
    }
    result.allreduce = "ok";
    world.barrier();
  } catch (const std::exception& e) {
    result.error = e.what();
    report(result, false);
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  report(result, true);
  return 0;
}
