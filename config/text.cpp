#include "config/text.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace xlaunch::config {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  while (true) {
    auto pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

bool parse_int(std::string_view text, int& out) {
  text = trim(text);
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      // Copy a well-formed UTF-8 sequence; escape a stray byte as U+FFFD.
      int extra = (c >= 0xf0 && c <= 0xf4)   ? 3
                  : (c >= 0xe0)              ? 2
                  : (c >= 0xc2 && c <= 0xdf) ? 1
                                             : -1;
      bool ok = extra > 0 && i + extra < text.size();
      for (int k = 1; ok && k <= extra; ++k) {
        ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
      }
      if (ok) {
        out.append(text.substr(i, extra + 1));
        i += extra;
      } else {
        out += "\\ufffd";
      }
    }
  }
  out += "\"";
  return out;
}

std::string iso_time(std::chrono::system_clock::time_point time) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", seconds, static_cast<int>(ms % 1000));
}

}  // namespace xlaunch::config
