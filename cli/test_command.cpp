// `xlaunch test`: the self-test worker on every process, then a pass/fail table built from
// the result files each rank writes (XLAUNCH_SELFTEST_RESULTS), not from parsing output.
#include "cli/test_command.hpp"

#include <fmt/core.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "cli/flag_groups.hpp"
#include "cli/launch_flags.hpp"
#include "config/usage_error.hpp"
#include "job/launch.hpp"

namespace xlaunch::cli {
namespace {

namespace fs = std::filesystem;

// The value of "key" in one of xlaunch-selftest's flat JSON lines (strings unescaped only
// as far as the table needs).
std::string field(const std::string& json, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  std::size_t at = json.find(tag);
  if (at == std::string::npos) return "?";
  at += tag.size();
  if (json[at] != '"') return json.substr(at, json.find_first_of(",}", at) - at);
  std::string out;
  for (std::size_t i = at + 1; i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) ++i;
    out += json[i];
  }
  return out;
}

int print_table(const fs::path& dir) {
  std::map<int, std::string> results;
  int size = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::string json;
    std::getline(in, json);
    int rank = std::atoi(field(json, "rank").c_str());
    size = std::max(size, std::atoi(field(json, "size").c_str()));
    results[rank] = json;
  }
  int passed = 0;
  fmt::print("\n{:>5}  {:<16} {:>5}  {:<7} {:<6} {:<8} {:<10} {}\n", "rank", "host", "local",
             "backend", "store", "barrier", "allreduce", "status");
  for (const auto& [rank, json] : results) {
    bool pass = field(json, "status") == "pass";
    passed += pass ? 1 : 0;
    fmt::print("{:>5}  {:<16} {:>5}  {:<7} {:<6} {:<8} {:<10} {}\n", rank, field(json, "host"),
               field(json, "local_rank"), field(json, "backend"), field(json, "store"),
               field(json, "barrier"), field(json, "allreduce"), pass ? "pass" : "FAIL");
    if (!pass) fmt::print("       {}\n", field(json, "error"));
  }
  // A rank stopped by the launcher after another failed, or one on another machine (whose
  // file is written there), has no result here.
  int missing = 0;
  for (int rank = 0; rank < size; ++rank) {
    if (results.count(rank)) continue;
    ++missing;
    fmt::print("{:>5}  {:<16} {:>5}  {:<7} {:<6} {:<8} {:<10} {}\n", rank, "-", "-", "-", "-", "-",
               "-", "no result (stopped, or on another machine)");
  }
  if (results.empty()) {
    fmt::print("xlaunch test: FAIL: no rank reported a result\n");
    return 1;
  }
  bool ok = passed == static_cast<int>(results.size());
  fmt::print("xlaunch test: {}: {}/{} ranks here passed{}\n", ok ? "PASS" : "FAIL", passed,
             results.size(), missing ? fmt::format(", {} without a result", missing) : "");
  return ok ? 0 : 1;
}

/// The help of a command that takes flags only: its refused words' positional stays unshown.
class TestHelp : public FlagGroupsFormatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: xlaunch test [OPTIONS]\n";
  }
  std::string make_positionals(const CLI::App*) const override { return ""; }
};

}  // namespace

void add_test_command(CLI::App& app, Action& run, Words words) {
  auto flags = std::make_shared<LaunchFlags>();
  auto backend = std::make_shared<std::string>("auto");
  CLI::App* cmd = app.add_subcommand(
      "test", "Launch the built-in self-test (store, barrier, all-reduce) on every process");
  cmd->formatter(std::make_shared<TestHelp>());
  add_launch_flags(*cmd, *flags, words);
  cmd->add_option("--backend", *backend, "All-reduce backend: auto (NCCL on GPUs, else Gloo)")
      ->check(CLI::IsMember({"auto", "nccl", "gloo"}));
  // Words that are not flags, kept to be refused below (TestHelp leaves it out of --help).
  // Without a positional, CLI11 would take an empty word for the name of a flag group, which
  // has none, and parse the rest inside that group for ever.
  auto stray = std::make_shared<std::vector<std::string>>();
  cmd->add_option("ARGS", *stray)->allow_extra_args();
  cmd->callback([cmd, flags, backend, stray, &run] {
    run = [cmd, flags, backend, stray] {
      const std::vector<std::string> unknown = cmd->remaining();
      if (!unknown.empty()) throw unknown_flag(*cmd, unknown.front(), "test");
      if (!stray->empty()) {
        throw UsageError(fmt::format("unexpected argument '{}' for 'xlaunch test'", stray->front()),
                         "'xlaunch test' runs its own program and takes flags only: "
                         "'xlaunch test --help' lists them");
      }
      finish_launch_flags(*cmd, *flags);
      fs::path selftest = fs::read_symlink("/proc/self/exe").parent_path() / "xlaunch-selftest";
      if (!fs::exists(selftest)) {
        throw UsageError(fmt::format("the self-test worker is missing: {}", selftest.string()),
                         "the wheel, the .deb and the self-contained program do not ship it (its "
                         "all-reduce needs NCCL or Gloo): build xlaunch from source where they "
                         "are, and run that build's xlaunch test (docs/install.md)");
      }
      std::string dir_template = (fs::temp_directory_path() / "xlaunch-test-XXXXXX").string();
      if (::mkdtemp(dir_template.data()) == nullptr) {
        throw std::runtime_error(fmt::format("mkdtemp {}: {}", dir_template, strerror(errno)));
      }
      const fs::path dir = dir_template;
      ::setenv("XLAUNCH_SELFTEST_RESULTS", dir.c_str(), 1);  // workers inherit it

      job::LaunchRequest request;
      request.settings = resolve_launch_settings(*flags);
      request.program.program = selftest.string();
      request.program.args = {"--backend=" + *backend};
      request.program.no_python = true;
      int code = job::launch(request);
      int table = print_table(dir);
      std::error_code ignored;
      fs::remove_all(dir, ignored);
      return code != 0 ? code : table;
    };
  });
}

}  // namespace xlaunch::cli
