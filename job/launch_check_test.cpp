// Every file `xlaunch config` (the wizard) or `xlaunch config default` writes must launch on
// the machine that wrote it. The wizard is run over its answer space — each question answered
// in each of several ways, from several starting files, on machines with 0, 1, 2 and 4 GPUs —
// and every set of answers it accepts is put through launch_refusal, the checks `xlaunch
// launch` makes before it starts anything.
#include "job/launch_check.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>

#include "config/machine.hpp"
#include "config/schema.hpp"
#include "config/templates.hpp"
#include "config/terminal.hpp"
#include "config/wizard.hpp"
#include "config/yaml_io.hpp"

using namespace xlaunch;
using namespace xlaunch::config;
using xlaunch::job::launch_refusal;

namespace {

// The answers tried for each question, by the start of its text.
const std::vector<std::pair<std::string, std::vector<std::string>>> kAnswers = {
    {"Where will the job run?", {"1", "2"}},
    {"Distributed type:", {"1", "2", "3", "4"}},
    {"How many machines?", {"2"}},
    {"This machine's rank", {"0", "1"}},
    {"IP address", {"10.0.0.1"}},
    {"Port on the main machine?", {""}},
    {"How many processes", {"", "1", "2", "3", "4"}},
    {"Which GPUs", {"", "0", "1", "0,1", "0,1,2,3"}},
    {"Mixed precision:", {"", "bf16"}},
    {"Where should logs go", {""}},
};

struct Refused {};  // the wizard asked the same question again: the answer was not taken

// Answers each question with the answer `path` picks (the first one where `path` ends), and
// records how many answers each step had, so that the next run can take the next path.
class Explorer : public Terminal {
 public:
  explicit Explorer(std::vector<std::size_t> path) : path_(std::move(path)) {}
  bool interactive() const override { return false; }
  void write(std::string_view text) override { pending_ += text; }
  Key read_key() override { return {Key::EndOfInput}; }
  std::optional<std::string> read_line() override {
    std::size_t best = std::string::npos;
    const std::vector<std::string>* answers = nullptr;
    std::string question;
    for (const auto& [text, options] : kAnswers) {
      const std::size_t at = pending_.rfind(text);
      if (at != std::string::npos && (best == std::string::npos || at > best)) {
        best = at;
        answers = &options;
        question = text;
      }
    }
    // A question asked again ("... is not one of the choices: answer 1-2") does not repeat
    // its text: the last answer was not taken.
    INFO(pending_);
    if (answers == nullptr) REQUIRE_FALSE(last_question_.empty());
    if (answers == nullptr || question == last_question_) throw Refused{};
    last_question_ = question;
    transcript_ += pending_;
    pending_.clear();
    const std::size_t step = widths.size();
    if (step == path_.size()) path_.push_back(0);
    widths.push_back(answers->size());
    const std::string& answer = (*answers)[path_[step]];
    transcript_ += answer + "\n";
    return answer;
  }
  const std::vector<std::size_t>& path() const { return path_; }
  const std::string& transcript() const { return transcript_; }
  std::vector<std::size_t> widths;

 private:
  std::vector<std::size_t> path_;
  std::string pending_;
  std::string transcript_;
  std::string last_question_;
};

// The next path in depth-first order, or empty when every path was taken.
std::vector<std::size_t> next_path(std::vector<std::size_t> path,
                                   const std::vector<std::size_t>& widths) {
  path.resize(widths.size());
  while (!path.empty() && path.back() + 1 == widths[path.size() - 1]) path.pop_back();
  if (!path.empty()) ++path.back();
  return path;
}

std::vector<std::string> gpu_ids(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

MachineFacts machine(int gpus) {
  MachineFacts m;
  m.gpu_count = gpus;
  return m;
}

// Starting points: nothing, each preset, and an old file full of keys that the answers
// must override (torchrun's per-machine count and range, a far endpoint, CPU workers).
std::map<std::string, Settings> starts() {
  std::map<std::string, Settings> out;
  out["(none)"] = Settings{};
  for (const Template& t : builtin_templates()) {
    out[std::string(t.name)] = load_config_text(std::string(t.text), std::string(t.name)).settings;
  }
  out["old torchrun file"] =
      load_config_text(
          "distributed_type: MULTI_GPU\nnum_processes: 8\nnproc_per_node: 4\n"
          "num_machines: '1:2'\nrdzv_backend: c10d\nrdzv_endpoint: far.example:29400\n"
          "use_cpu: true\ngpu_ids: '5,6'\n",
          "old")
          .settings;
  return out;
}

}  // namespace

TEST_CASE("every config the wizard writes launches on the machine that wrote it",
          "[launch_check]") {
  int accepted = 0;
  for (int gpus : {0, 1, 2, 4}) {
    for (const auto& [name, start] : starts()) {
      std::vector<std::size_t> path{0};
      while (!path.empty()) {
        Explorer term(path);
        std::optional<Settings> answers;
        try {
          answers = run_wizard(term, machine(gpus), start);
        } catch (const Refused&) {
        }
        if (answers) {
          ++accepted;
          const auto refusal = launch_refusal(*answers, gpu_ids(gpus));
          INFO(fmt::format("{} GPUs, starting from {}:\n{}\nwrote:\n{}", gpus, name,
                           term.transcript(), to_yaml(*answers)));
          CHECK_FALSE(refusal);
          if (refusal) FAIL_CHECK(refusal->what());
          if (gpus == 0) CHECK(answers->distributed_type != DistributedType::MultiGpu);
        }
        path = next_path(term.path(), term.widths);
      }
    }
  }
  CHECK(accepted > 500);  // the space was walked, not skipped
}

TEST_CASE("without a GPU the wizard offers NO and MULTI_CPU, not DDP", "[launch_check]") {
  Explorer term({0, 1, 2});  // one machine, the second choice, 2 processes
  const Settings s = run_wizard(term, machine(0), {});
  CHECK(s.distributed_type == DistributedType::MultiCpu);
  CHECK(s.num_processes == 2);
  CHECK(s.use_cpu == true);
  CHECK(term.transcript().find("DDP and DP need GPUs") != std::string::npos);
  CHECK(term.transcript().find("one process per GPU") == std::string::npos);
}

TEST_CASE("config default: what the flags leave open is filled in to launch here",
          "[launch_check]") {
  struct Case {
    int gpus;
    std::vector<std::pair<std::string, std::string>> given;
  };
  const std::vector<Case> cases = {
      {0, {}},
      {0, {{"num_processes", "2"}}},
      {0, {{"distributed_type", "MULTI_CPU"}}},
      {0, {{"num_machines", "2"}}},
      {1, {}},
      {1, {{"num_processes", "1"}}},
      {1, {{"use_cpu", "true"}, {"num_processes", "4"}}},
      {2, {{"distributed_type", "NO"}}},
      {2, {{"distributed_type", "DP"}}},
      {4, {}},
      {4, {{"gpu_ids", "1,3"}}},
      {4, {{"num_processes", "2"}}},
      {4, {{"num_machines", "2"}, {"machine_rank", "1"}, {"main_process_ip", "10.0.0.1"}}},
  };
  for (const Case& c : cases) {
    Settings given;
    for (const auto& [key, value] : c.given) {
      std::string notice;
      REQUIRE(find_key(key)->parse(value, given, notice));
    }
    const Settings s = default_settings(machine(c.gpus), given);
    const auto refusal = launch_refusal(s, gpu_ids(c.gpus));
    INFO(fmt::format("{} GPUs, given {}:\n{}", c.gpus, c.given.size(), to_yaml(s)));
    CHECK_FALSE(refusal);
    if (refusal) FAIL_CHECK(refusal->what());
  }
}

TEST_CASE("config default refuses what cannot launch here, saying why", "[launch_check]") {
  Settings multi_gpu;
  multi_gpu.distributed_type = DistributedType::MultiGpu;
  auto refusal = launch_refusal(default_settings(machine(0), multi_gpu), {});
  REQUIRE(refusal);
  CHECK(std::string(refusal->what()).find("no GPU is visible") != std::string::npos);
  // More workers than GPUs launch (they share them, as under torchrun), so nothing refuses.
  Settings shared;
  shared.num_processes = 2;
  CHECK_FALSE(launch_refusal(default_settings(machine(1), shared), gpu_ids(1)));
}
