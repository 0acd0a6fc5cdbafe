// World against a real in-process store: one thread per rank, each with its own World.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "client/world_state.hpp"
#include "rendezvous/store_server.hpp"

#if XLAUNCH_HAVE_GLOO
#include <gloo/allreduce_ring.h>
#include <gloo/context.h>
#endif
#if XLAUNCH_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

using namespace xlaunch;
using namespace std::chrono_literals;

namespace {

struct Job {
  Job() : server(rendezvous::ListeningSocket::bind("127.0.0.1", 0)) { server.start(); }

  detail::Identity identity(int rank, int size) const {
    detail::Identity id;
    id.rank = rank;
    id.size = size;
    id.local_rank = rank;
    id.local_size = size;
    id.master_addr = "127.0.0.1";
    id.master_port = server.port();
    id.run_id = "unit";
    return id;
  }

  World world(int rank, int size, std::chrono::milliseconds timeout = 20s) const {
    WorldOptions options;
    options.connect_timeout = 10s;
    options.timeout = timeout;
    return detail::connect_world(identity(rank, size), options);
  }

  // Runs body(world) on `size` threads, one rank each; rethrows nothing, returns the
  // what() of each rank's exception ("" when it returned normally).
  std::vector<std::string> run(int size, const std::function<void(World&)>& body) const {
    std::vector<std::string> errors(size);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          World w = world(rank, size);
          body(w);
        } catch (const std::exception& e) {
          errors[rank] = e.what();
          if (errors[rank].empty()) errors[rank] = "(empty what())";
        }
      });
    }
    for (std::thread& t : threads) t.join();
    return errors;
  }

  rendezvous::StoreServer server;
};

void require_all_ok(const std::vector<std::string>& errors) {
  for (std::size_t rank = 0; rank < errors.size(); ++rank) {
    INFO("rank " << rank);
    CHECK(errors[rank] == "");
  }
}

}  // namespace

TEST_CASE("a world knows its identity and key prefix", "[client][world]") {
  Job job;
  World w = job.world(0, 1);
  CHECK(w.rank() == 0);
  CHECK(w.size() == 1);
  CHECK(w.local_rank() == 0);
  CHECK(w.local_size() == 1);
  CHECK(w.node_rank() == 0);
  CHECK(w.cuda_device() == 0);
  CHECK(w.run_id() == "unit");
  CHECK(w.key_prefix() == "xlaunch/client/unit/attempt_0/world_1/");
  World moved = std::move(w);
  CHECK(moved.rank() == 0);
  moved.store().set("k", "v");
  CHECK(moved.store().get("k") == "v");
}

TEST_CASE("store round trips carry raw bytes", "[client][store]") {
  Job job;
  World w = job.world(0, 1);
  Store& s = w.store();
  std::string bytes("a\0b\xff", 4);
  s.set("user/raw", bytes);
  CHECK(s.get("user/raw") == bytes);
  CHECK(s.add("user/counter", 5) == 5);
  CHECK(s.add("user/counter", 0) == 5);
  CHECK(s.check({"user/raw", "user/counter"}));
  CHECK_FALSE(s.check({"user/raw", "user/absent"}));
  s.wait({"user/raw"}, 1s);
  CHECK(s.remove("user/raw"));
  CHECK_FALSE(s.remove("user/raw"));
  CHECK(s.timeout() == 20s);
}

TEST_CASE("a missing key times out with Error(timeout) naming the rank", "[client][store]") {
  Job job;
  World w = job.world(0, 1, 200ms);
  try {
    w.store().get("never/set");
    FAIL("get returned");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::timeout);
    CHECK(e.rank() == 0);
    CHECK_THAT(e.what(), Catch::Contains("[rank 0/1"));
    CHECK_THAT(e.what(), Catch::Contains("store.get"));
  }
  // The connection stays usable after a timeout.
  w.store().set("after", "1");
  CHECK(w.store().get("after") == "1");
}

TEST_CASE("barriers can be called repeatedly and really wait", "[client][barrier]") {
  Job job;
  constexpr int kSize = 4;
  constexpr int kRounds = 25;
  std::atomic<int> arrivals{0};
  std::atomic<bool> early{false};
  require_all_ok(job.run(kSize, [&](World& w) {
    for (int round = 0; round < kRounds; ++round) {
      arrivals.fetch_add(1);
      w.barrier();
      // Nobody leaves barrier `round` before all ranks reached it.
      if (arrivals.load() < (round + 1) * kSize) early = true;
    }
  }));
  CHECK_FALSE(early.load());
  CHECK(arrivals.load() == kSize * kRounds);
  // Old barrier keys are cleaned up: only the last barrier's two keys stay, beside each
  // rank's count of its Worlds.
  CHECK(job.server.num_keys() <= 2 + kSize);
}

TEST_CASE("a request over the store's limits is refused at once; the World stays usable",
          "[client][store]") {
  Job job;
  World w = job.world(0, 1);
  const std::string long_key(65537, 'k');
  try {
    w.store().set(long_key, "v");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::invalid_argument);
    CHECK_THAT(e.cause(), Catch::Contains("a key of 65537 bytes; the store takes keys of up to"));
  }
  CHECK_THROWS_AS(w.store().check({long_key}), Error);
  w.store().set("k", "v");  // the connection is still there
  CHECK(w.store().get("k") == "v");
  w.barrier();
}

TEST_CASE("a wait with the longest timeout waits, not times out at once", "[client][store]") {
  // now() + milliseconds::max() wrapped into the past.
  Job job;
  World w = job.world(0, 1);
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    World other = job.world(0, 1);
    other.store().set("late", "1");
  });
  CHECK_NOTHROW(w.store().wait({"late"}, std::chrono::milliseconds::max()));
  later.join();
}

TEST_CASE("a second World of the same ranks does not meet the first one's keys",
          "[client][barrier]") {
  // `sh -c './prep && ./train'`: the same ranks make a World twice in one attempt.
  Job job;
  constexpr int kSize = 3;
  require_all_ok(job.run(kSize, [](World& w) { w.barrier(); }));
  std::atomic<int> arrivals{0};
  std::atomic<bool> early{false};
  require_all_ok(job.run(kSize, [&](World& w) {
    CHECK(w.key_prefix() == "xlaunch/client/unit/attempt_0/world_2/");
    // Rank 2 comes late: the others must wait for it, not pass on the first World's keys.
    if (w.rank() == 2) std::this_thread::sleep_for(300ms);
    arrivals.fetch_add(1);
    w.barrier();
    if (arrivals.load() < kSize) early = true;
  }));
  CHECK_FALSE(early.load());
}

TEST_CASE("a barrier that a rank never reaches times out saying how many came",
          "[client][barrier]") {
  Job job;
  World w = job.world(0, 2, 300ms);
  try {
    w.barrier();
    FAIL("barrier returned with one of two ranks");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::timeout);
    CHECK_THAT(e.what(), Catch::Contains("barrier #0"));
    CHECK_THAT(e.what(), Catch::Contains("1 of 2 ranks arrived"));
  }
}

TEST_CASE("an unreachable store fails from_env-style connect with Error(store)",
          "[client][world]") {
  int port = 0;
  {
    rendezvous::ListeningSocket socket = rendezvous::ListeningSocket::bind("127.0.0.1", 0);
    port = socket.port();
  }  // closed: nothing listens there now
  detail::Identity id;
  id.master_addr = "127.0.0.1";
  id.master_port = static_cast<std::uint16_t>(port);
  WorldOptions options;
  options.connect_timeout = 300ms;
  try {
    detail::connect_world(id, options);
    FAIL("connected to a closed port");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::store);
    CHECK_THAT(e.what(), Catch::Contains("World::from_env"));
    CHECK_THAT(e.what(), Catch::Contains(std::to_string(port)));
  }
}

TEST_CASE("from_env outside a launcher fails with Error(environment)", "[client][world]") {
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(name);
  try {
    World::from_env();
    FAIL("from_env succeeded without a launcher");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::environment);
    CHECK_THAT(e.what(), Catch::Contains("not started by a launcher"));
  }
}

TEST_CASE("every rank receives the same NCCL unique id", "[client][nccl]") {
  Job job;
  constexpr int kSize = 4;
  std::vector<std::string> ids(kSize);
  std::vector<std::string> errors = job.run(kSize, [&](World& w) {
    NcclUniqueId first = w.nccl_unique_id();
    NcclUniqueId second = w.nccl_unique_id();
    ids[w.rank()] = std::string(first.internal, sizeof first.internal);
    if (std::memcmp(first.internal, second.internal, sizeof first.internal) == 0) {
      throw std::runtime_error("two calls returned the same id");
    }
  });
#if XLAUNCH_HAVE_NCCL
  require_all_ok(errors);
  for (int rank = 1; rank < kSize; ++rank) CHECK(ids[rank] == ids[0]);
  CHECK(ids[0] != std::string(128, '\0'));
#else
  for (const std::string& e : errors) CHECK_THAT(e, Catch::Contains("built without NCCL"));
#endif
}

#if XLAUNCH_HAVE_NCCL
TEST_CASE("NcclUniqueId converts to ncclUniqueId byte for byte", "[client][nccl]") {
  NcclUniqueId ours;
  for (int i = 0; i < 128; ++i) ours.internal[i] = static_cast<char>(i);
  ncclUniqueId theirs = ours;
  CHECK(std::memcmp(theirs.internal, ours.internal, 128) == 0);
}
#endif

TEST_CASE("nccl_comm without a GPU fails on every rank, naming CUDA and the rank",
          "[client][nccl]") {
#if XLAUNCH_HAVE_NCCL
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    WARN("this machine has a GPU: the no-GPU failure path is not exercised here");
    return;
  }
#endif
  Job job;
  constexpr int kSize = 3;
  std::vector<int> kinds(kSize, -1);
  std::vector<std::string> errors = job.run(kSize, [&](World& w) {
    try {
      w.nccl_comm();
    } catch (const Error& e) {
      kinds[w.rank()] = static_cast<int>(e.kind());
      throw;
    }
  });
  for (int rank = 0; rank < kSize; ++rank) {
    INFO("rank " << rank << ": " << errors[rank]);
#if XLAUNCH_HAVE_NCCL
    CHECK(kinds[rank] == static_cast<int>(ErrorKind::cuda));
    CHECK_THAT(errors[rank], Catch::Contains("CUDA"));
    CHECK_THAT(errors[rank], Catch::Contains("cudaGetDeviceCount"));
#else
    CHECK(kinds[rank] == static_cast<int>(ErrorKind::unavailable));
    CHECK_THAT(errors[rank], Catch::Contains("built without NCCL"));
#endif
    CHECK_THAT(errors[rank], Catch::Contains("[rank " + std::to_string(rank) + "/3"));
  }
}

TEST_CASE("Gloo all-reduce across ranks through the store", "[client][gloo]") {
  Job job;
  constexpr int kSize = 4;
  [[maybe_unused]] constexpr int kCount = 1000;
  std::vector<std::string> errors = job.run(kSize, [&](World& w) {
#if XLAUNCH_HAVE_GLOO
    for (int round = 0; round < 2; ++round) {  // a second context must not collide with the first
      std::shared_ptr<gloo::Context> context = w.gloo_context();
      std::vector<double> data(kCount);
      for (int i = 0; i < kCount; ++i) data[i] = w.rank() + i;
      std::vector<double*> pointers{data.data()};
      gloo::AllreduceRing<double>(context, pointers, kCount).run();
      for (int i = 0; i < kCount; ++i) {
        double expected = 0 + 1 + 2 + 3 + static_cast<double>(kSize) * i;
        if (data[i] != expected) throw std::runtime_error("wrong sum at " + std::to_string(i));
      }
      w.barrier();  // no rank drops its context (closing its pairs) while a peer still runs
    }
#else
    w.gloo_context();
#endif
  });
#if XLAUNCH_HAVE_GLOO
  require_all_ok(errors);
#else
  for (const std::string& e : errors) CHECK_THAT(e, Catch::Contains("built without Gloo"));
#endif
}
