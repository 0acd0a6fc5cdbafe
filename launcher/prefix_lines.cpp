#include "launcher/prefix_lines.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xlaunch::launcher {

PrefixedLines prefix_plain_lines(ConsoleBatch& out, std::string_view prefix, std::string_view bytes,
                                 std::size_t max_line) {
  PrefixedLines done;
#if defined(__SSE2__)
  const char* const begin = bytes.data();
  const char* const end = begin + bytes.size();
  if (bytes.size() < 16 || prefix.size() > 16) return done;
  // Room for every line of the input, plus the 16-byte stores' overshoot.
  const std::size_t most_lines = bytes.size() + 1;
  char* const start = out.append_space(bytes.size() + most_lines * (prefix.size() + 1) + 32);
  char* o = start;
  alignas(16) char prefix_block[16] = {};
  std::memcpy(prefix_block, prefix.data(), prefix.size());
  const __m128i prefix_bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(prefix_block));
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i carriage = _mm_set1_epi8('\r');
  const char* line = begin;
  // Whole 16-byte loads only: the input may end at the end of its buffer.
  while (end - line >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), prefix_bytes);
    char* const text_out = o + prefix.size();
    const char* p = line;
    int stop_mask = 0;
    while (end - p >= 16) {
      const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(text_out + (p - line)), block);
      stop_mask = _mm_movemask_epi8(
          _mm_or_si128(_mm_cmpeq_epi8(block, newline), _mm_cmpeq_epi8(block, carriage)));
      if (stop_mask != 0 || static_cast<std::size_t>(p - line) > max_line) break;
      p += 16;
    }
    if (stop_mask == 0) break;  // no terminator in whole blocks, or the line is too long
    const char* const stop = p + __builtin_ctz(static_cast<unsigned>(stop_mask));
    const auto length = static_cast<std::size_t>(stop - line);
    if (*stop != '\n' || length > max_line) break;
    text_out[length] = '\n';
    if (length > 0) done.last_text = std::string_view(line, length);
    o = text_out + length + 1;
    ++done.lines;
    line = stop + 1;
  }
  out.commit_space(static_cast<std::size_t>(o - start));
  done.consumed = static_cast<std::size_t>(line - begin);
#else
  (void)out;
  (void)prefix;
  (void)bytes;
  (void)max_line;
#endif
  return done;
}

}  // namespace xlaunch::launcher
