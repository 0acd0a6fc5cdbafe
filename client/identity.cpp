#include "client/identity.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace xlaunch::detail {
namespace {

// The launcher always sets these; a program run by hand sets at least the first four.
constexpr const char* kRequired[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

[[noreturn]] void bad_env(std::string cause) {
  throw make_error(ErrorKind::environment, nullptr, "World::from_env", std::move(cause),
                   "start the program with `xlaunch launch` (or torchrun), which sets "
                   "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT");
}

long long parse_integer(const char* name, const std::string& text, long long min, long long max) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    bad_env(fmt::format("{}={} is out of range [{}, {}]", name, text, min, max));
  }
  if (text.empty() || ec != std::errc() || ptr != end) {
    bad_env(fmt::format("{}='{}' is not an integer", name, text));
  }
  if (value < min || value > max) {
    bad_env(fmt::format("{}={} is out of range [{}, {}]", name, value, min, max));
  }
  return value;
}

int optional_int(const EnvLookup& env, const char* name, int fallback, int min, int max) {
  std::optional<std::string> text = env(name);
  if (!text) return fallback;
  return static_cast<int>(parse_integer(name, *text, min, max));
}

}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Identity parse_identity(const EnvLookup& env) {
  std::string missing;
  std::size_t missing_count = 0;
  for (const char* name : kRequired) {
    if (!env(name)) {
      missing += missing.empty() ? name : fmt::format(", {}", name);
      ++missing_count;
    }
  }
  if (missing_count == std::size(kRequired)) {
    bad_env(fmt::format("not started by a launcher: {} are unset", missing));
  }
  if (missing_count > 0) bad_env(fmt::format("{} unset", missing));

  constexpr int kMaxInt = std::numeric_limits<int>::max();
  Identity id;
  id.size = static_cast<int>(parse_integer("WORLD_SIZE", *env("WORLD_SIZE"), 1, kMaxInt));
  id.rank = static_cast<int>(parse_integer("RANK", *env("RANK"), 0, kMaxInt));
  if (id.rank >= id.size) {
    bad_env(fmt::format("RANK={} is not below WORLD_SIZE={}", id.rank, id.size));
  }
  // A program started by hand may set only RANK and WORLD_SIZE: treat it as one machine.
  id.local_size = optional_int(env, "LOCAL_WORLD_SIZE", id.size, 1, kMaxInt);
  id.local_rank = optional_int(env, "LOCAL_RANK", id.rank, 0, kMaxInt);
  id.node_rank = optional_int(env, "GROUP_RANK", 0, 0, kMaxInt);
  if (id.local_size > id.size) {
    bad_env(fmt::format("LOCAL_WORLD_SIZE={} exceeds WORLD_SIZE={}", id.local_size, id.size));
  }
  if (id.local_rank >= id.local_size) {
    bad_env(fmt::format("LOCAL_RANK={} is not below LOCAL_WORLD_SIZE={}", id.local_rank,
                        id.local_size));
  }

  id.master_addr = *env("MASTER_ADDR");
  if (id.master_addr.empty()) bad_env("MASTER_ADDR is empty");
  id.master_port =
      static_cast<std::uint16_t>(parse_integer("MASTER_PORT", *env("MASTER_PORT"), 1, 65535));

  for (const char* name : {"XLAUNCH_RUN_ID", "TORCHELASTIC_RUN_ID"}) {
    std::optional<std::string> run_id = env(name);
    if (run_id && !run_id->empty()) {
      id.run_id = *run_id;
      break;
    }
  }
  id.restart_count = optional_int(env, "TORCHELASTIC_RESTART_COUNT", 0, 0, kMaxInt);
  id.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");

  if (std::optional<std::string> text = env("XLAUNCH_CLIENT_TIMEOUT")) {
    double seconds = 0;
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(text->data(), end, seconds);
    if (text->empty() || ec != std::errc() || ptr != end || !(seconds > 0) || seconds > 1e7) {
      bad_env(
          fmt::format("XLAUNCH_CLIENT_TIMEOUT='{}' is not a positive number of seconds", *text));
    }
    // At least 1 ms: a positive value that rounded to 0 would fail every call at once.
    id.timeout =
        std::chrono::milliseconds(std::max(1LL, static_cast<long long>(seconds * 1000 + 0.5)));
  }
  if (std::optional<std::string> ifname = env("GLOO_SOCKET_IFNAME")) {
    // PyTorch accepts a comma-separated list; one device is enough for one context.
    std::string first = ifname->substr(0, ifname->find(','));
    if (!first.empty()) id.gloo_ifname = first;
  }
  return id;
}

std::string context_tag(const Identity* id) {
  if (id == nullptr) return fmt::format("[pid {}]", ::getpid());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("[rank {}/{} local {} {} pid {}]", id->rank, id->size, id->local_rank,
                     host[0] ? host : "?", ::getpid());
}

Error make_error(ErrorKind kind, const Identity* id, std::string_view operation, std::string cause,
                 std::string_view hint) {
  std::string message = fmt::format("xlaunch: error: {} {}: {}", context_tag(id), operation, cause);
  if (!hint.empty()) message += fmt::format(" (hint: {})", hint);
  return Error(kind, id ? id->rank : -1, message, std::move(cause));
}

std::optional<int> cuda_device_for(int local_rank, int device_count) {
  if (local_rank < 0 || local_rank >= device_count) return std::nullopt;
  return local_rank;
}

}  // namespace xlaunch::detail
