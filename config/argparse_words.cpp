#include "config/argparse_words.hpp"

namespace xlaunch::config {

namespace {

// Walks the launcher's words as argparse does; returns how many there are (the program
// starts there) and, into `spelt` when given, how CLI11 must read them.
std::size_t walk(const std::vector<std::string>& words, const TakesValue& takes_value,
                 std::vector<std::string>* spelt) {
  auto add = [&](std::string word) {
    if (spelt != nullptr) spelt->push_back(std::move(word));
  };
  std::size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--" || word.size() < 2 || word[0] != '-') break;  // the program's from here
    const std::size_t equals = word.find('=');
    if (word.starts_with("--") && equals != std::string::npos) {
      const std::string name = word.substr(0, equals);
      const bool empty_value = equals + 1 == word.size() && takes_value(name).value_or(false);
      add(empty_value ? name : word);
      if (empty_value) add("");
      continue;
    }
    add(word);
    if (takes_value(word).value_or(false) && i + 1 < words.size()) add(words[++i]);
  }
  return i;
}

}  // namespace

std::vector<std::string> argparse_spelling(const std::vector<std::string>& words,
                                           const TakesValue& takes_value) {
  std::vector<std::string> out;
  const std::size_t program = walk(words, takes_value, &out);
  out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(program), words.end());
  return out;
}

std::size_t launcher_word_count(const std::vector<std::string>& words,
                                const TakesValue& takes_value) {
  return walk(words, takes_value, nullptr);
}

}  // namespace xlaunch::config
