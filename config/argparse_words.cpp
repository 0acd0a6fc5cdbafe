#include "config/argparse_words.hpp"

namespace xlaunch::config {

namespace {

// Walks the launcher's words as argparse does; returns how many there are (the program
// starts there) and, into `spelt` when given, how CLI11 must read them.
std::size_t walk(const std::vector<std::string>& words, const FindFlag& find,
                 std::vector<std::string>* spelt) {
  auto add = [&](std::string word) {
    if (spelt != nullptr) spelt->push_back(std::move(word));
  };
  std::size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--" || word.size() < 2 || word[0] != '-') break;  // the program's from here
    const std::size_t equals = word.starts_with("--") ? word.find('=') : std::string::npos;
    const std::optional<KnownFlag> flag = find(word.substr(0, equals));
    if (!flag) {  // CLI11 says what is wrong with it
      add(word);
      continue;
    }
    if (equals != std::string::npos) {
      const bool empty_value = equals + 1 == word.size() && flag->takes_value;
      add(empty_value ? flag->name : flag->name + word.substr(equals));
      if (empty_value) add("");
      continue;
    }
    add(flag->name);
    if (flag->takes_value && i + 1 < words.size()) add(words[++i]);
  }
  return i;
}

}  // namespace

std::vector<std::string> argparse_spelling(const std::vector<std::string>& words,
                                           const FindFlag& find) {
  std::vector<std::string> out;
  const std::size_t program = walk(words, find, &out);
  out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(program), words.end());
  return out;
}

std::size_t launcher_word_count(const std::vector<std::string>& words, const FindFlag& find) {
  return walk(words, find, nullptr);
}

}  // namespace xlaunch::config
