#include "config/atomic_write.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

using namespace xlaunch::config;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "xlaunch-atomic-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { fs::remove_all(path); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), {}));
  }
};

}  // namespace

TEST_CASE("atomic_write creates directories and replaces files", "[atomic_write]") {
  TempDir dir;
  const fs::path file = dir.path / "a" / "b" / "c.yaml";
  atomic_write(file.string(), "one\n");
  CHECK(slurp(file) == "one\n");
  fs::permissions(file, fs::perms(0600));
  atomic_write(file.string(), "two\n");
  CHECK(slurp(file) == "two\n");
  CHECK(fs::status(file).permissions() == fs::perms(0600));  // mode is kept
  CHECK(std::distance(fs::directory_iterator(file.parent_path()), {}) == 1);
}

TEST_CASE("a failed write leaves the old file and no temporary", "[atomic_write]") {
  TempDir dir;
  const fs::path file = dir.path / "c.yaml";
  atomic_write(file.string(), "old contents\n");

  // A file-size limit makes write(2) fail half way, as a full disk would.
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 16;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  bool threw = false;
  try {
    atomic_write(file.string(), std::string(4096, 'x'));
  } catch (const std::system_error& e) {
    threw = true;
    CHECK(std::string(e.what()).find("cannot write") != std::string::npos);
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  CHECK(threw);
  CHECK(slurp(file) == "old contents\n");
  CHECK(dir.entries() == 1);
}

TEST_CASE("writing over a directory fails cleanly", "[atomic_write]") {
  TempDir dir;
  fs::create_directory(dir.path / "d");
  CHECK_THROWS_AS(atomic_write((dir.path / "d").string(), "x"), std::system_error);
  CHECK(dir.entries() == 1);
}

TEST_CASE("a new file's mode follows the umask; a replaced one keeps no setuid bit",
          "[atomic_write]") {
  TempDir dir;
  const fs::path file = dir.path / "c.yaml";
  const mode_t saved = ::umask(077);
  atomic_write(file.string(), "one\n");
  ::umask(saved);
  CHECK(fs::status(file).permissions() == fs::perms(0600));
  fs::permissions(file, fs::perms(06755));
  atomic_write(file.string(), "two\n");
  CHECK(fs::status(file).permissions() == fs::perms(0755));
}

TEST_CASE("a link is replaced and its target left alone; a FIFO is refused", "[atomic_write]") {
  TempDir dir;
  const fs::path target = dir.path / "target";
  atomic_write(target.string(), "theirs\n");
  fs::permissions(target, fs::perms(04700));
  const fs::path link = dir.path / "report.html";
  fs::create_symlink(target, link);
  const mode_t saved = ::umask(022);
  atomic_write(link.string(), "ours\n");
  ::umask(saved);
  CHECK_FALSE(fs::is_symlink(link));
  CHECK(fs::status(link).permissions() == fs::perms(0644));  // not the target's 04700
  CHECK(slurp(target) == "theirs\n");

  const fs::path fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  try {
    atomic_write(fifo.string(), "x\n");
    FAIL("no error");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()).find("it is a FIFO, not a plain file") != std::string::npos);
  }
  CHECK(fs::is_fifo(fifo));
  CHECK(dir.entries() == 3);  // no temporary left
}
