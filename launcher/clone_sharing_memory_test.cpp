// clone_sharing_memory for real: the child shares this process's memory and runs on the
// stack it was given, and the call returns only once the child has exec'd or exited.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>

#include "launcher/process.hpp"

using namespace xlaunch::launcher;

namespace {

struct Shared {
  volatile int written = 0;
  std::uintptr_t stack_seen = 0;
};

// Not instrumented: on a stack AddressSanitizer does not know (spawner_posix.cpp says why).
__attribute__((no_sanitize("address", "undefined"))) void child_writes_and_exits(void* arg) {
  auto* shared = static_cast<Shared*>(arg);
  int on_stack = 0;
  shared->stack_seen = reinterpret_cast<std::uintptr_t>(&on_stack);
  ::usleep(50'000);  // the parent, were it running, would see 0 until now
  shared->written = 42;
  ::_exit(7);
}

struct Stack {
  static constexpr std::size_t kSize = 64 * 1024;
  void* base = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ~Stack() { ::munmap(base, kSize); }
};

}  // namespace

TEST_CASE("a child that shares our memory runs on its own stack, and we wait for its exit",
          "[spawn]") {
  Shared shared;
  Stack stack;
  REQUIRE(stack.base != MAP_FAILED);
  const long pid =
      clone_sharing_memory(-1, 0, child_writes_and_exits, &shared, stack.base, Stack::kSize);
  if (pid < 0 && (errno == ENOSYS || errno == EPERM)) {
    FAIL(
        "clone3 is refused here (another machine than x86_64, or a seccomp filter): workers "
        "are made the copy-on-write way, which the spawner tests cover");
  }
  REQUIRE(pid > 0);
  CHECK(shared.written == 42);  // its write is ours: one memory, and it ran to its end first
  const auto base = reinterpret_cast<std::uintptr_t>(stack.base);
  CHECK(shared.stack_seen > base);
  CHECK(shared.stack_seen < base + Stack::kSize);
  int status = 0;
  REQUIRE(::waitpid(static_cast<pid_t>(pid), &status, 0) == pid);  // our child
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("a child that shares our memory is made in the cgroup given, or not at all", "[spawn]") {
  Shared shared;
  Stack stack;
  // Not a cgroup folder: clone3 refuses, and no child exists.
  const int not_a_cgroup = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(not_a_cgroup >= 0);
  const long pid = clone_sharing_memory(not_a_cgroup, 0, child_writes_and_exits, &shared,
                                        stack.base, Stack::kSize);
  const int error = errno;
  ::close(not_a_cgroup);
  CHECK(pid == -1);
  CHECK(error != 0);
  CHECK(shared.written == 0);  // no child ran
}
