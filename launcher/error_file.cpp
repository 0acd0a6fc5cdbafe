#include "launcher/error_file.hpp"

#include <map>
#include <memory>

namespace xlaunch::launcher {
namespace {

// Just enough JSON for the error file: objects and strings are kept, other values skipped.
struct Value {
  std::optional<std::string> text;
  std::map<std::string, std::shared_ptr<Value>> object;
  bool is_object = false;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  std::shared_ptr<Value> value(int depth = 0) {
    if (depth > 64) return nullptr;  // nesting this deep is no error file
    blanks();
    if (at_end()) return nullptr;
    const char c = in_[pos_];
    auto v = std::make_shared<Value>();
    if (c == '{') {
      ++pos_;
      v->is_object = true;
      blanks();
      if (peek('}')) return ++pos_, v;
      while (true) {
        blanks();
        auto key = string();
        blanks();
        if (!key || !peek(':')) return nullptr;
        ++pos_;
        auto member = value(depth + 1);
        if (!member) return nullptr;
        v->object[*key] = member;
        blanks();
        if (peek(',')) {
          ++pos_;
          continue;
        }
        if (peek('}')) return ++pos_, v;
        return nullptr;
      }
    }
    if (c == '[') {
      ++pos_;
      blanks();
      if (peek(']')) return ++pos_, v;
      while (true) {
        if (!value(depth + 1)) return nullptr;
        blanks();
        if (peek(',')) {
          ++pos_;
          continue;
        }
        if (peek(']')) return ++pos_, v;
        return nullptr;
      }
    }
    if (c == '"') {
      v->text = string();
      return v->text ? v : nullptr;
    }
    // number, true, false, null: skipped over
    const std::size_t start = pos_;
    while (!at_end() && std::string_view(",}] \t\r\n").find(in_[pos_]) == std::string_view::npos) {
      ++pos_;
    }
    return pos_ > start ? v : nullptr;
  }

  bool done() {
    blanks();
    return at_end();
  }

 private:
  bool at_end() const { return pos_ >= in_.size(); }
  bool peek(char c) const { return !at_end() && in_[pos_] == c; }
  void blanks() {
    while (!at_end() && std::string_view(" \t\r\n").find(in_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
  }
  static void utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }
  std::optional<std::string> string() {
    if (!peek('"')) return std::nullopt;
    ++pos_;
    std::string out;
    while (!at_end()) {
      const char c = in_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) return std::nullopt;
      const char e = in_[pos_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos_ + 4 > in_.size()) return std::nullopt;
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = in_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') {
              code |= static_cast<unsigned>(h - '0');
            } else if (h >= 'a' && h <= 'f') {
              code |= static_cast<unsigned>(h - 'a' + 10);
            } else if (h >= 'A' && h <= 'F') {
              code |= static_cast<unsigned>(h - 'A' + 10);
            } else {
              return std::nullopt;
            }
          }
          utf8(out, code);  // surrogate pairs come out as two replacement-free halves; rare
          break;
        }
        default:
          out += e;  // \" \\ \/
      }
    }
    return std::nullopt;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
};

const Value* member(const Value* v, const char* key) {
  if (v == nullptr || !v->is_object) return nullptr;
  const auto it = v->object.find(key);
  return it == v->object.end() ? nullptr : it->second.get();
}

}  // namespace

std::optional<ErrorFileContent> parse_error_file(std::string_view json) {
  Reader reader(json);
  const std::shared_ptr<Value> root = reader.value();
  if (!root || !reader.done()) return std::nullopt;
  const Value* message = member(root.get(), "message");
  if (message == nullptr) return std::nullopt;
  ErrorFileContent out;
  if (message->text) {
    out.message = *message->text;
    return out;
  }
  const Value* text = member(message, "message");
  if (text == nullptr || !text->text) return std::nullopt;
  out.message = *text->text;
  if (const Value* stack = member(member(message, "extraInfo"), "py_callstack");
      stack != nullptr && stack->text) {
    out.traceback = *stack->text;
  }
  return out;
}

}  // namespace xlaunch::launcher
