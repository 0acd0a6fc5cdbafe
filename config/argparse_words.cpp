#include "config/argparse_words.hpp"

namespace xlaunch::config {

std::vector<std::string> argparse_spelling(const std::vector<std::string>& words,
                                           const TakesValue& takes_value) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--" || word.size() < 2 || word[0] != '-') break;  // the program's from here
    const std::size_t equals = word.find('=');
    if (word.starts_with("--") && equals != std::string::npos) {
      const std::string name = word.substr(0, equals);
      const bool empty_value = equals + 1 == word.size() && takes_value(name).value_or(false);
      out.push_back(empty_value ? name : word);
      if (empty_value) out.emplace_back();
      continue;
    }
    out.push_back(word);
    if (takes_value(word).value_or(false) && i + 1 < words.size()) out.push_back(words[++i]);
  }
  out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  return out;
}

}  // namespace xlaunch::config
