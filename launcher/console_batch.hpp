// One read's console lines with their rank prefix, built in one buffer. Pure; no I/O.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace xlaunch::launcher {

/// A chatty rank writes millions of short lines, so adding one is two memcpy and one
/// bounds check, nothing more: reserve() makes room for a whole read up front.
class ConsoleBatch {
 public:
  /// Room for `text_bytes` of text in up to `pieces` pieces with `prefix_bytes` prefixes.
  void reserve(std::size_t text_bytes, std::size_t pieces, std::size_t prefix_bytes) {
    const std::size_t need = size_ + text_bytes + pieces * (prefix_bytes + 1) + 1;
    if (need > capacity_) grow(need);
  }

  /// "[rank3]: text\n": a '\r' piece keeps its '\r' so a progress bar redraws in place; a
  /// piece without terminator ends with '\n' so ranks never share a line.
  void add(std::string_view prefix, std::string_view text, char terminator) {
    const std::size_t need = prefix.size() + text.size() + 1;
    if (capacity_ - size_ < need) grow(size_ + need);
    char* out = data_.get() + size_;
    std::memcpy(out, prefix.data(), prefix.size());
    std::memcpy(out + prefix.size(), text.data(), text.size());
    out[prefix.size() + text.size()] = terminator == '\r' ? '\r' : '\n';
    size_ += need;
  }

  /// Ends a progress bar's line that was left open.
  void add_newline() {
    if (capacity_ == size_) grow(size_ + 1);
    data_[size_++] = '\n';
  }

  /// `n` writable bytes after what the batch holds, for a writer that then says how many
  /// it used with commit_space (the rest is scratch).
  char* append_space(std::size_t n) {
    if (capacity_ - size_ < n) grow(size_ + n);
    return data_.get() + size_;
  }
  void commit_space(std::size_t used) { size_ += used; }

  std::string_view view() const { return {data_.get(), size_}; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }

 private:
  void grow(std::size_t need);

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace xlaunch::launcher
