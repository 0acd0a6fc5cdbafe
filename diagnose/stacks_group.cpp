#include "diagnose/stacks_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace xlaunch::diagnose {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

struct Frame {
  std::string file;
  std::string line;
  std::string func;
};

// `  File "train.py", line 42 in main`
bool parse_frame(std::string_view line, Frame& f) {
  constexpr std::string_view kFile = "File \"";
  const auto at = line.find(kFile);
  if (at == std::string_view::npos) return false;
  const auto quote = line.find("\", line ", at + kFile.size());
  if (quote == std::string_view::npos) return false;
  f.file = std::string(line.substr(at + kFile.size(), quote - at - kFile.size()));
  const auto rest = line.substr(quote + 8);
  const auto in = rest.find(" in ");
  if (in == std::string_view::npos) return false;
  f.line = std::string(rest.substr(0, in));
  f.func = std::string(rest.substr(in + 4));
  return true;
}

bool is_library(const std::string& file) {
  return file.find("site-packages/") != std::string::npos ||
         file.find("dist-packages/") != std::string::npos ||
         file.find("/lib/python") != std::string::npos || file.rfind("<frozen", 0) == 0;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_thread_header(std::string_view line) {
  return (line.rfind("Thread ", 0) == 0 || line.rfind("Current thread ", 0) == 0) &&
         line.find("(most recent call first)") != std::string_view::npos;
}

}  // namespace

std::string normalize_dump(std::string_view dump) {
  std::vector<std::string> out;
  for (std::string_view line : lines_of(dump)) {
    std::string text(line);
    if (is_thread_header(line)) {
      const auto id = text.find("0x");
      if (id != std::string::npos) {
        auto end = id + 2;
        while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
        if (end < text.size() && text[end] == ' ') ++end;
        text.erase(id, end - id);
      }
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.pop_back();
    out.push_back(std::move(text));
  }
  while (!out.empty() && out.front().empty()) out.erase(out.begin());
  while (!out.empty() && out.back().empty()) out.pop_back();
  std::string joined;
  for (const std::string& line : out) {
    joined += line;
    joined += '\n';
  }
  return joined;
}

std::string stack_headline(std::string_view dump) {
  // Threads as lists of frames, innermost first.
  std::vector<std::vector<Frame>> threads;
  for (std::string_view line : lines_of(dump)) {
    if (is_thread_header(line) || threads.empty()) {
      threads.emplace_back();
      if (is_thread_header(line)) continue;
    }
    Frame f;
    if (parse_frame(line, f)) threads.back().push_back(std::move(f));
  }
  std::erase_if(threads, [](const auto& t) { return t.empty(); });
  if (threads.empty()) return {};
  const std::vector<Frame>* main = &threads.front();
  for (const auto& t : threads) {
    if (t.back().func == "<module>") {
      main = &t;
      break;
    }
  }
  const auto& frames = *main;
  std::size_t user = 0;
  while (user < frames.size() && is_library(frames[user].file)) ++user;
  if (user == frames.size()) user = 0;  // all library: show the innermost
  const Frame& at = frames[user];
  const std::string& called = user > 0 ? frames[user - 1].func : at.func;
  return fmt::format("{} at {}:{}", called, base_name(at.file), at.line);
}

std::vector<StackGroup> group_stacks(const std::vector<RankStacks>& ranks) {
  std::map<std::pair<std::string, std::string>, StackGroup> by_key;
  for (const RankStacks& r : ranks) {
    const std::string norm = r.missing.empty() ? normalize_dump(r.dump) : std::string();
    StackGroup& g = by_key[{r.missing, norm}];
    if (g.ranks.empty()) {
      g.dump = norm;
      g.headline = r.missing.empty() ? stack_headline(norm) : r.missing;
      if (g.headline.empty()) g.headline = "no Python frame";
    }
    g.ranks.push_back(r.rank);
  }
  std::vector<StackGroup> out;
  for (auto& [key, g] : by_key) {
    std::sort(g.ranks.begin(), g.ranks.end());
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const StackGroup& a, const StackGroup& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) {
    if (!out.empty()) out += ',';
    out += std::to_string(r);
  }
  return out;
}

std::string format_stack_groups(const std::vector<StackGroup>& groups, std::string_view prefix) {
  std::string out;
  for (const StackGroup& g : groups) {
    out += fmt::format("{}{} {}: {}\n", prefix, g.ranks.size() == 1 ? "rank" : "ranks",
                       rank_list(g.ranks), g.headline);
    for (std::string_view line : lines_of(g.dump)) {
      if (line.empty()) continue;
      out += fmt::format("{}    {}\n", prefix, line);
    }
  }
  return out;
}

}  // namespace xlaunch::diagnose
