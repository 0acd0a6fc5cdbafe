// What a killed launcher leaves (docs/diagnose.md, "A launcher that is killed"): the
// launcher tells its guardian which of its files and folders to remove should it die without
// removing them itself; the guardian does so once the run's processes are gone. Only what is
// provably the run's own: each path is removed only while it is still the file or folder
// registered (device and inode), a temporary run folder loses only what xlaunch makes in
// it, and folders registered before they exist (by name) must be this user's and carry the
// launcher's pid and run id in their names. A --log_dir run folder is never registered: it
// holds the logs the user asked for.
// The guardian's side runs in the guardian: async-signal-safe calls only, no allocation.
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "launcher/containment_posix.hpp"
#include "launcher/process.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::launcher {
namespace {

constexpr std::size_t kMaxLeftovers = 8;
constexpr int kMaxDepth = 4;  // stacks folder: python/__pycache__/<file> is the deepest
constexpr char kForget = 'x';
constexpr char kNamedFolders = 'p';  // path: "<folder>/<name prefix>"; dev and ino: folder's

struct Registered {
  char kind = 0;  // 0: free
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  char path[PATH_MAX] = {};
};

Registered leftovers[kMaxLeftovers];

bool same(const char* path, const Registered& r) {
  struct stat st {};
  return ::lstat(path, &st) == 0 && st.st_dev == r.dev && st.st_ino == r.ino;
}

// Calls `each(name, d_type)` for every entry of the folder open as `dir` but . and ..;
// `buffer` is the caller's, one per depth.
template <typename Each>
void for_entries(int dir, char (&buffer)[4096], Each each) {
  ::lseek(dir, 0, SEEK_SET);
  while (true) {
    const long n = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (n <= 0) return;
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
      at += entry->d_reclen;
      const char* name = entry->d_name;
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
      each(name, entry->d_type);
    }
  }
}

char buffers[kMaxDepth + 1][4096];

// Everything in the folder open as `dir`, depth first (symbolic links removed, never
// followed).
void empty_folder(int dir, int depth) {
  for (int pass = 0; pass < 3; ++pass) {  // entries removed while reading may be skipped
    for_entries(dir, buffers[depth], [&](const char* name, unsigned char type) {
      if (type != DT_DIR && ::unlinkat(dir, name, 0) == 0) return;
      if (depth >= kMaxDepth) return;
      const int sub = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) return;
      empty_folder(sub, depth + 1);
      ::close(sub);
      ::unlinkat(dir, name, AT_REMOVEDIR);
    });
  }
}

// Skips "<prefix><digits>" at `name`: what follows, or nullptr.
const char* after_number(const char* name, const char* prefix) {
  const std::size_t n = std::strlen(prefix);
  if (std::strncmp(name, prefix, n) != 0) return nullptr;
  const char* c = name + n;
  const char* digits = c;
  while (*c >= '0' && *c <= '9') ++c;
  return c == digits ? nullptr : c;
}

// attempt_<digits>.rank_<digits>.error.json (RunFiles::prepare_rank's name)
bool is_error_file(const char* name) {
  const char* rest = after_number(name, "attempt_");
  rest = rest ? after_number(rest, ".rank_") : nullptr;
  return rest != nullptr && std::strcmp(rest, ".error.json") == 0;
}

// A run's own file (kRunOwnFiles).
bool is_own_file(const char* name) {
  for (const char* own : kRunOwnFiles) {
    if (std::strcmp(name, own) == 0) return true;
  }
  return false;
}

// A temporary run folder: the ranks' error files and the run's own files, as RunFiles
// removes them after a success; anything else (a worker's own file) keeps the folder.
void empty_run_folder(int dir) {
  for (int pass = 0; pass < 3; ++pass) {  // entries removed while reading may be skipped
    for_entries(dir, buffers[0], [&](const char* name, unsigned char type) {
      if (type == DT_DIR) return;
      if (is_own_file(name) || is_error_file(name)) {
        ::unlinkat(dir, name, 0);
      }
    });
  }
}

// The folders in r's folder whose names start with r's prefix and that this user owns.
void remove_named_folders(const Registered& r) {
  char folder[PATH_MAX];
  std::memcpy(folder, r.path, sizeof folder);
  char* slash = std::strrchr(folder, '/');
  if (slash == nullptr || slash == folder) return;
  *slash = '\0';
  const char* prefix = r.path + (slash - folder) + 1;
  const std::size_t prefix_size = std::strlen(prefix);
  if (prefix_size == 0 || !same(folder, r)) return;  // gone, or another folder took the path
  const int dir = ::open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  for_entries(dir, buffers[0], [&](const char* name, unsigned char type) {
    if ((type != DT_DIR && type != DT_UNKNOWN) || std::strncmp(name, prefix, prefix_size) != 0) {
      return;
    }
    const int sub = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return;
    struct stat st {};
    const bool own = ::fstat(sub, &st) == 0 && st.st_uid == ::geteuid();
    if (own) empty_folder(sub, 1);
    ::close(sub);
    if (own) ::unlinkat(dir, name, AT_REMOVEDIR);  // fails, harmlessly, when something stays
  });
  ::close(dir);
}

void remove_one(const Registered& r) {
  if (r.kind == kNamedFolders) return remove_named_folders(r);
  if (!same(r.path, r)) return;  // gone, or another file took the path
  if (r.kind == static_cast<char>(GroupGuardian::Leftover::file)) {
    ::unlink(r.path);
    return;
  }
  const int dir = ::open(r.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  empty_run_folder(dir);
  ::close(dir);
  ::rmdir(r.path);  // fails, harmlessly, when something stays
}

}  // namespace

bool note_leftover(const char* message, std::size_t size) {
  if (size != sizeof(LeftoverMessage)) return false;
  LeftoverMessage m;
  std::memcpy(&m, message, sizeof m);
  if (std::memcmp(m.tag, kLeftoverTag, sizeof m.tag) != 0) return false;
  if (m.kind == kForget) {
    for (Registered& r : leftovers) r.kind = 0;
    return true;
  }
  for (Registered& r : leftovers) {
    if (r.kind != 0) continue;
    r.kind = m.kind;
    r.dev = m.dev;
    r.ino = m.ino;
    std::memcpy(r.path, m.path, sizeof r.path);
    r.path[sizeof r.path - 1] = '\0';
    return true;
  }
  return true;  // full: that one stays behind
}

void remove_leftovers() {
  for (Registered& r : leftovers) {
    if (r.kind != 0) remove_one(r);
    r.kind = 0;
  }
}

namespace {

// Tells the guardian of `path`, of which `existing` is the part that exists now (device
// and inode, checked again before anything is removed).
void register_leftover(int fd, char kind, const std::string& existing, const std::string& path) {
  struct stat st {};
  if (fd < 0 || path.size() >= PATH_MAX || ::lstat(existing.c_str(), &st) != 0) return;
  LeftoverMessage m;
  m.kind = kind;
  m.dev = st.st_dev;
  m.ino = st.st_ino;
  std::memcpy(m.path, path.c_str(), path.size() + 1);
  ::send(fd, &m, sizeof m, MSG_NOSIGNAL);
}

}  // namespace

void GroupGuardian::remove_if_killed(const std::string& path, Leftover kind) {
  register_leftover(fd_, static_cast<char>(kind), path, path);
}

void GroupGuardian::remove_named_folders_if_killed(const std::string& folder,
                                                   const std::string& name_prefix) {
  // The guardian opens it without following a link: the real path (a TMPDIR may be a link).
  std::error_code ec;
  const std::string real = std::filesystem::canonical(folder, ec).string();
  if (ec || name_prefix.empty() || name_prefix.find('/') != std::string::npos) return;
  register_leftover(fd_, kNamedFolders, real, real + "/" + name_prefix);
}

void GroupGuardian::forget_leftovers() {
  if (fd_ < 0) return;
  LeftoverMessage m;
  m.kind = kForget;
  ::send(fd_, &m, sizeof m, MSG_NOSIGNAL);
}

}  // namespace xlaunch::launcher
