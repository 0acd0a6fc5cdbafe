// A C++ rank of a job whose rank 0 is PyTorch 2.6 (torch26_mixed_py.py): both use the
// launcher's store. PyTorch's TCPStore prefixes every key with "/" and libxlaunch sends keys
// as given, so "/py/hello" here is what Python calls "py/hello".
#include <cstdio>
#include <string>
#include <xlaunch/xlaunch.hpp>

int main() {
  try {
    xlaunch::World world = xlaunch::World::from_env();
    xlaunch::Store& store = world.store();
    const std::string rank = std::to_string(world.rank());
    store.set("/cpp/" + rank, "c++ rank " + rank + std::string(1, '\0') + "nul");
    store.add("/count", 1);
    const std::string hello = store.get("/py/hello");  // blocks until Python set it
    store.wait({"/py/done"});                          // Python saw every C++ rank
    const std::int64_t total = store.add("/count", 0);
    std::printf("MIXED {\"rank\": %d, \"py_hello\": \"%s\", \"count\": %lld}\n", world.rank(),
                hello.c_str(), static_cast<long long>(total));
    return 0;
  } catch (const xlaunch::Error& e) {
    std::fprintf(stderr, "mixed_rank: %s\n", e.what());
    return 1;
  }
}
