#include "config/prompts.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

namespace xlaunch::config {
namespace {

// A byte of typed text: printable ASCII, or part of a UTF-8 character (a folder named in
// Japanese). Control characters are not text.
bool typable(char ch) {
  const auto byte = static_cast<unsigned char>(ch);
  return byte >= 0x80 || (byte >= 0x20 && byte != 0x7f);
}

// Removes the last character, all of its UTF-8 bytes.
void erase_last_character(std::string& text) {
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) {
    text.pop_back();
  }
  if (!text.empty()) text.pop_back();
}

// ANSI codes, written only in interactive mode.
constexpr std::string_view kBold = "\x1b[1m";
constexpr std::string_view kCyan = "\x1b[1;36m";
constexpr std::string_view kRed = "\x1b[31m";
constexpr std::string_view kReset = "\x1b[0m";

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

bool same_text(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::size_t name_width(const std::vector<Choice>& choices) {
  std::size_t width = 0;
  for (const Choice& c : choices) width = std::max(width, c.name.size());
  return width;
}

std::string not_a_choice(std::string_view answer, std::size_t count) {
  return fmt::format("'{}' is not one of the choices: answer 1-{} or a name", answer, count);
}

std::size_t ask_choice_interactive(Terminal& term, std::string_view question,
                                   const std::vector<Choice>& choices, std::size_t selected) {
  const std::size_t width = name_width(choices);
  term.write(fmt::format("{}?{} {}\n", kBold, kReset, question));
  std::string typed;
  std::string error;
  std::size_t drawn = 0;
  auto draw = [&] {
    std::string out;
    if (drawn > 0) out += fmt::format("\x1b[{}A\r\x1b[J", drawn);  // back to the menu's top
    drawn = 0;
    for (std::size_t i = 0; i < choices.size(); ++i, ++drawn) {
      const bool on = i == selected;
      out += fmt::format("{}{} {}) {:<{}}  {}{}\n", on ? kCyan : "", on ? ">" : " ", i + 1,
                         choices[i].name, width, choices[i].description, on ? kReset : "");
    }
    out += typed.empty() ? std::string("  (arrow keys then Enter, or type a number or name)\n")
                         : fmt::format("  answer: {}\n", typed);
    ++drawn;
    if (!error.empty()) {
      out += fmt::format("  {}{}{}\n", kRed, error, kReset);
      ++drawn;
    }
    term.write(out);
  };
  draw();
  for (;;) {
    const Key key = term.read_key();
    switch (key.kind) {
      case Key::Up:
        selected = (selected + choices.size() - 1) % choices.size();
        typed.clear();
        error.clear();
        break;
      case Key::Down:
        selected = (selected + 1) % choices.size();
        typed.clear();
        error.clear();
        break;
      case Key::Char:
        if (typable(key.ch)) typed += key.ch;
        error.clear();
        break;
      case Key::Backspace:
        erase_last_character(typed);
        break;
      case Key::Enter: {
        std::optional<std::size_t> chosen = selected;
        if (!trim(typed).empty()) chosen = match_choice(choices, typed);
        if (chosen) {
          // Replace the question and menu by one line with the answer.
          term.write(fmt::format("\x1b[{}A\r\x1b[J{}?{} {} {}{}{}\n", drawn + 1, kBold, kReset,
                                 question, kCyan, choices[*chosen].name, kReset));
          return *chosen;
        }
        error = not_a_choice(trim(typed), choices.size());
        typed.clear();
        break;
      }
      case Key::Interrupt:
        term.write("\n");
        throw Interrupted();
      case Key::EndOfInput:
        term.write("\n");
        throw EndOfInput();
      case Key::Other:
        break;
    }
    draw();
  }
}

std::size_t ask_choice_lines(Terminal& term, std::string_view question,
                             const std::vector<Choice>& choices, std::size_t default_index) {
  const std::size_t width = name_width(choices);
  std::string menu = fmt::format("{}\n", question);
  for (std::size_t i = 0; i < choices.size(); ++i) {
    menu +=
        fmt::format("  {}) {:<{}}  {}\n", i + 1, choices[i].name, width, choices[i].description);
  }
  term.write(menu);
  for (;;) {
    term.write(
        fmt::format("Answer 1-{} or a name [{}]: ", choices.size(), choices[default_index].name));
    const auto line = term.read_line();
    if (!line) {
      term.write("\n");
      throw EndOfInput();
    }
    const std::string answer = trim(*line);
    if (answer.empty()) return default_index;
    if (auto chosen = match_choice(choices, answer)) return *chosen;
    term.write(fmt::format("  {}\n", not_a_choice(answer, choices.size())));
  }
}

std::optional<std::string> read_text_interactive(Terminal& term) {
  std::string typed;
  for (;;) {
    const Key key = term.read_key();
    switch (key.kind) {
      case Key::Char:
        if (typable(key.ch)) {
          typed += key.ch;
          term.write(std::string(1, key.ch));
        }
        break;
      case Key::Backspace:
        if (!typed.empty()) {
          erase_last_character(typed);
          term.write("\b \b");
        }
        break;
      case Key::Enter:
        return typed;  // the caller ends the line, after echoing a taken default
      case Key::Interrupt:
        term.write("\n");
        throw Interrupted();
      case Key::EndOfInput:
        if (typed.empty()) {
          term.write("\n");
          return std::nullopt;
        }
        break;
      default:
        break;
    }
  }
}

}  // namespace

std::optional<std::size_t> match_choice(const std::vector<Choice>& choices,
                                        std::string_view answer) {
  const std::string a = trim(answer);
  if (!a.empty() &&
      std::all_of(a.begin(), a.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const std::size_t number = a.size() > 6 ? 0 : std::stoul(a);
    if (number >= 1 && number <= choices.size()) return number - 1;
  }
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (same_text(a, choices[i].name)) return i;
    for (const std::string& alias : choices[i].aliases) {
      if (same_text(a, alias)) return i;
    }
  }
  return std::nullopt;
}

std::size_t ask_choice(Terminal& term, std::string_view question,
                       const std::vector<Choice>& choices, std::size_t default_index) {
  default_index = std::min(default_index, choices.size() - 1);
  return term.interactive() ? ask_choice_interactive(term, question, choices, default_index)
                            : ask_choice_lines(term, question, choices, default_index);
}

std::string ask_text(Terminal& term, std::string_view question, std::string_view default_value,
                     const Check& check) {
  const std::string shown_default =
      default_value.empty() ? std::string() : fmt::format(" [{}]", default_value);
  for (;;) {
    if (term.interactive()) {
      term.write(fmt::format("{}?{} {}{}: ", kBold, kReset, question, shown_default));
    } else {
      term.write(fmt::format("{}{}: ", question, shown_default));
    }
    const auto line = term.interactive() ? read_text_interactive(term) : term.read_line();
    if (!line) {
      if (!term.interactive()) term.write("\n");
      throw EndOfInput();
    }
    std::string answer = trim(*line);
    if (answer.empty()) {
      answer = std::string(default_value);
      if (term.interactive()) term.write(answer);  // show what the empty answer chose
    }
    if (term.interactive()) term.write("\n");
    const std::string problem = check ? check(answer) : std::string();
    if (problem.empty()) return answer;
    if (term.interactive()) {
      term.write(fmt::format("  {}{}{}\n", kRed, problem, kReset));
    } else {
      term.write(fmt::format("  {}\n", problem));
    }
  }
}

}  // namespace xlaunch::config
