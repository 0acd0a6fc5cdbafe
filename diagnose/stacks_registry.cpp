#include "diagnose/stacks_registry.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <cstring>

namespace xlaunch::diagnose {
namespace {

constexpr std::string_view kSuffix = ".sock";
constexpr std::string_view kFix = "; remove it, or set XDG_RUNTIME_DIR to a private folder";

}  // namespace

std::string registry_dir(const std::map<std::string, std::string>& env, unsigned uid) {
  if (auto runtime = env.find("XDG_RUNTIME_DIR");
      runtime != env.end() && !runtime->second.empty()) {
    return runtime->second + "/xlaunch";
  }
  return fmt::format("/tmp/xlaunch-{}", uid);
}

std::optional<std::string> runtime_dir_problem(const std::string& dir, const FolderFacts& facts,
                                               unsigned uid) {
  if (!facts.exists) return std::nullopt;
  if (facts.is_symlink) return fmt::format("{} is a symbolic link{}", dir, kFix);
  if (!facts.is_directory) return fmt::format("{} is not a folder{}", dir, kFix);
  if (facts.owner != uid) {
    return fmt::format("{} belongs to uid {}, not to you (uid {}){}", dir, facts.owner, uid, kFix);
  }
  if ((facts.mode & 0777) != 0700) {
    return fmt::format("{} has mode {:04o}, not 0700{}", dir, facts.mode & 0777, kFix);
  }
  return std::nullopt;
}

std::string socket_path(const std::string& dir, const std::string& run_id) {
  std::string path = fmt::format("{}/{}{}", dir, run_id, kSuffix);
  if (path.size() < sizeof(sockaddr_un{}.sun_path)) return path;
  // FNV-1a of the whole id: two long ids that share their first characters stay apart.
  std::uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : run_id) hash = (hash ^ c) * 1099511628211ULL;
  const std::string tail = fmt::format("-{:016x}{}", hash, kSuffix);
  const std::size_t room = sizeof(sockaddr_un{}.sun_path) - 1 - dir.size() - 1 - tail.size();
  if (room > sizeof(sockaddr_un{}.sun_path)) return dir + "/" + tail.substr(1);  // no room
  return fmt::format("{}/{}{}", dir, run_id.substr(0, std::min(room, run_id.size())), tail);
}

std::optional<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return std::nullopt;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace xlaunch::diagnose
