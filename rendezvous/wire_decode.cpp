// The codec's reading half: bytes -> Request, incremental, every length checked against the
// limits before it is trusted (wire_codec.hpp).
#include <fmt/core.h>

#include <cstring>

#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous {
namespace {

enum class Step { Ok, More, Bad };

// A read position over the buffer. A short read records how many bytes the request needs
// in total, which lets the caller wait for that many before decoding again.
class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> buf, const CodecLimits& limits, std::string& error,
         std::uint64_t& fields_read, std::size_t start = 0)
      : buf_(buf), limits_(limits), error_(error), fields_read_(fields_read), pos_(start) {}

  Step take(std::size_t n, const std::uint8_t*& p) {
    if (n > limits_.max_request_bytes || pos_ + n > limits_.max_request_bytes) {
      return bad(
          fmt::format("request exceeds {} bytes (max_request_bytes)", limits_.max_request_bytes));
    }
    if (buf_.size() - pos_ < n) {
      need_ = pos_ + n;
      return Step::More;
    }
    p = buf_.data() + pos_;
    pos_ += n;
    ++fields_read_;
    return Step::Ok;
  }
  Step u8(std::uint8_t& v) {
    const std::uint8_t* p = nullptr;
    Step s = take(1, p);
    if (s == Step::Ok) v = *p;
    return s;
  }
  Step u32(std::uint32_t& v) {
    const std::uint8_t* p = nullptr;
    Step s = take(4, p);
    if (s == Step::Ok) v = load_u32(p);
    return s;
  }
  Step u64(std::uint64_t& v) {
    const std::uint8_t* p = nullptr;
    Step s = take(8, p);
    if (s == Step::Ok) v = load_u64(p);
    return s;
  }
  Step i64(std::int64_t& v) {
    std::uint64_t u = 0;
    Step s = u64(u);
    if (s == Step::Ok) std::memcpy(&v, &u, sizeof v);
    return s;
  }
  // The length of a key or value, checked against its limit.
  Step length(std::uint64_t& len, bool value) {
    if (Step s = u64(len); s != Step::Ok) return s;
    const std::size_t max = value ? limits_.max_value_bytes : limits_.max_key_bytes;
    if (len > max) {
      return bad(fmt::format("{} of {} bytes exceeds {} ({})", value ? "value" : "key", len, max,
                             value ? "max_value_bytes" : "max_key_bytes"));
    }
    return Step::Ok;
  }
  // u64 length + bytes, the length checked against its limit before anything else.
  Step str(std::string_view& out, bool value) {
    std::uint64_t len = 0;
    if (Step s = length(len, value); s != Step::Ok) return s;
    const std::uint8_t* p = nullptr;
    if (Step s = take(static_cast<std::size_t>(len), p); s != Step::Ok) return s;
    out = std::string_view(reinterpret_cast<const char*>(p), static_cast<std::size_t>(len));
    return Step::Ok;
  }
  Step key(std::string_view& out) { return str(out, false); }
  Step value(std::string_view& out) { return str(out, true); }
  Step count(std::uint64_t n) {
    if (n > limits_.max_keys_per_request) {
      return bad(fmt::format("{} keys in one request exceeds {} (max_keys_per_request)", n,
                             limits_.max_keys_per_request));
    }
    return Step::Ok;
  }
  Step bad(std::string message) {
    error_ = std::move(message);
    return Step::Bad;
  }

  std::size_t pos() const { return pos_; }
  std::size_t need() const { return need_; }

 private:
  std::span<const std::uint8_t> buf_;
  const CodecLimits& limits_;
  std::string& error_;
  std::uint64_t& fields_read_;
  std::size_t pos_ = 0;
  std::size_t need_ = 0;
};

bool is_list(Op op) {
  return op == Op::Check || op == Op::Wait || op == Op::MultiGet || op == Op::MultiSet;
}

// Reads (or goes on reading) a list request's count and fields, recording each in `p` as it
// completes, so that a later call with more bytes starts at the first field not yet read.
Step read_list(Cursor& c, detail::ListProgress& p) {
  const bool pairs = p.op == Op::MultiSet;
  Step s = Step::Ok;
  if (!p.have_count) {
    std::uint64_t n = 0;
    if (pairs) {
      std::int64_t signed_n = 0;
      if ((s = c.i64(signed_n)) != Step::Ok) return s;
      if (signed_n < 0) return c.bad(fmt::format("MULTI_SET with negative count {}", signed_n));
      n = static_cast<std::uint64_t>(signed_n);
    } else if ((s = c.u64(n)) != Step::Ok) {
      return s;
    }
    if ((s = c.count(n)) != Step::Ok) return s;
    p.have_count = true;
    p.count = n;
  }
  const std::size_t total = static_cast<std::size_t>(pairs ? 2 * p.count : p.count);
  while (p.fields.size() < total) {
    const bool value = pairs && p.fields.size() % 2 == 1;
    if (!p.have_len) {
      if ((s = c.length(p.len, value)) != Step::Ok) return s;
      p.have_len = true;
    }
    const std::uint8_t* data = nullptr;
    if ((s = c.take(static_cast<std::size_t>(p.len), data)) != Step::Ok) return s;
    p.fields.emplace_back(c.pos() - static_cast<std::size_t>(p.len),
                          static_cast<std::size_t>(p.len));
    p.have_len = false;
  }
  return Step::Ok;
}

// The least a list request in `p`, stopped at `need` bytes, can take: every field not
// started yet still owes its 8-byte length. A client sending one key per write thus
// triggers far fewer decode passes.
std::size_t list_need(const detail::ListProgress& p, std::size_t need) {
  if (!p.have_count) return need;
  const std::size_t total = static_cast<std::size_t>(p.op == Op::MultiSet ? 2 * p.count : p.count);
  // The field being read is counted in `need` already.
  const std::size_t later = total - p.fields.size() - 1;
  return need + 8 * later;
}

// Reads the arguments of a non-list `op` (the command byte is already consumed).
Step read_args(Cursor& c, Request& r) {
  Step s = Step::Ok;
  switch (r.op) {
    case Op::Validate:
    case Op::Ping:
      return c.u32(r.word);
    case Op::Set:
    case Op::Append:
    case Op::QueuePush:
      if ((s = c.key(r.key)) != Step::Ok) return s;
      return c.value(r.value);
    case Op::CompareSet:
      if ((s = c.key(r.key)) != Step::Ok) return s;
      if ((s = c.value(r.expected)) != Step::Ok) return s;
      return c.value(r.value);
    case Op::Get:
    case Op::WatchKey:
    case Op::DeleteKey:
    case Op::QueuePop:
    case Op::QueueLen:
      return c.key(r.key);
    case Op::Add:
      if ((s = c.key(r.key)) != Step::Ok) return s;
      return c.i64(r.delta);
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
    case Op::MultiSet:
      break;  // read_list()
    case Op::NumKeys:
    case Op::CancelWait:
    case Op::List:
      return Step::Ok;
  }
  return Step::Ok;
}

void clear_request(Request& r) {
  r.key = {};
  r.value = {};
  r.expected = {};
  r.delta = 0;
  r.word = 0;
  r.keys.clear();
  r.values.clear();
}

}  // namespace

RequestDecoder::RequestDecoder(CodecLimits limits, Dialect legacy_default)
    : limits_(limits), legacy_default_(legacy_default == Dialect::D1 ? Dialect::D1 : Dialect::D0) {}

Dialect RequestDecoder::effective_dialect() const {
  if (dialect_ == Dialect::Legacy || dialect_ == Dialect::Undetected) return legacy_default_;
  return dialect_;
}

DecodeResult RequestDecoder::decode(std::span<const std::uint8_t> buffer, Request& out,
                                    Resume resume) {
  clear_request(out);
  error_.clear();
  // Go on only from the request the caller vouches for, and only if the cheap signs agree:
  // anything else is read from its first byte, which is always right.
  detail::ListProgress& p = progress_;
  const bool resuming = resume == Resume::SamePrefix && p.active && buffer.size() >= p.seen &&
                        buffer[0] == p.code &&
                        (!p.have_count || load_u64(buffer.data() + 1) == p.count);
  if (!resuming) p = detail::ListProgress{};
  if (buffer.empty()) return {DecodeStatus::NeedMore, 1};

  Dialect next = dialect_;  // committed only when the request completes
  const std::uint8_t code = buffer[0];

  if (dialect_ == Dialect::Undetected) {
    if (code == 0x00) {
      // VALIDATE + magic means 2.2+; anything else is a legacy SET (which is >= 17 bytes, so
      // waiting for 5 cannot stall a legacy client).
      if (buffer.size() < 5) return {DecodeStatus::NeedMore, 5};
      if (load_u32(buffer.data() + 1) == kValidateMagic) {
        out.op = Op::Validate;
        out.word = kValidateMagic;
        dialect_ = Dialect::D2;
        return {DecodeStatus::Complete, 5};
      }
    } else if (code == 0xCE) {
      error_ = "request starts with the handshake magic (a pre-release 2.2 client?)";
      return {DecodeStatus::Malformed, 0};
    }
    next = Dialect::Legacy;
  }

  std::optional<Op> op;
  if (next == Dialect::Legacy) {
    if (code <= 6) {
      op = op_for_code(Dialect::D0, code);
    } else if (code >= 9 && code <= 11) {
      // Only 2.1 sends these; pin the connection so later 7 / 8 read as 2.1.
      op = op_for_code(Dialect::D1, code);
      next = Dialect::D1;
    } else if (code == 7 || code == 8) {
      op = op_for_code(legacy_default_, code);
      if (op == Op::WatchKey) next = Dialect::D0;
      if (op == Op::Append) next = Dialect::D1;
    }
  } else {
    op = op_for_code(next, code);
    if (op == Op::Validate) {
      error_ = "VALIDATE is only legal as the first request";
      return {DecodeStatus::Malformed, 0};
    }
  }
  if (!op) {
    error_ = fmt::format("unknown command byte 0x{:02x} for the {} protocol", code,
                         dialect_name(next == Dialect::Legacy ? legacy_default_ : next));
    return {DecodeStatus::Malformed, 0};
  }

  out.op = *op;
  Step step = Step::Ok;
  std::size_t need = 0;
  std::size_t used = 0;
  if (is_list(*op)) {
    // The dialect only moves on Complete, so the same first byte means the same op; checked
    // anyway, since progress read as the wrong op would be garbage.
    if (p.active && p.op != *op) p = detail::ListProgress{};
    if (!p.active) {
      p.op = *op;
      p.code = code;
      p.pos = 1;
      ++fields_read_;  // the command byte
    }
    Cursor c(buffer, limits_, error_, fields_read_, p.pos);
    step = read_list(c, p);
    used = c.pos();
    need = step == Step::More ? list_need(p, c.need()) : 0;
    if (step == Step::More) {
      if (need > limits_.max_request_bytes) {
        // It cannot fit whatever the rest holds: refuse now rather than buffer it first.
        step = c.bad(
            fmt::format("request exceeds {} bytes (max_request_bytes)", limits_.max_request_bytes));
      } else {
        p.active = true;
        p.seen = buffer.size();
        p.pos = c.pos();
      }
    }
    if (step == Step::Ok) {
      const char* base = reinterpret_cast<const char*>(buffer.data());
      const bool pairs = p.op == Op::MultiSet;
      out.keys.reserve(pairs ? p.fields.size() / 2 : p.fields.size());
      if (pairs) out.values.reserve(p.fields.size() / 2);
      for (std::size_t i = 0; i < p.fields.size(); ++i) {
        std::string_view field(base + p.fields[i].first, p.fields[i].second);
        (pairs && i % 2 == 1 ? out.values : out.keys).push_back(field);
      }
    }
    if (step != Step::More) p = detail::ListProgress{};
  } else {
    Cursor c(buffer, limits_, error_, fields_read_);
    const std::uint8_t* skip = nullptr;
    c.take(1, skip);
    step = read_args(c, out);
    used = c.pos();
    need = c.need();
  }
  switch (step) {
    case Step::Ok:
      dialect_ = next;
      return {DecodeStatus::Complete, used};
    case Step::More:
      return {DecodeStatus::NeedMore, need};
    case Step::Bad:
      break;
  }
  error_ = fmt::format("{}: {}", op_name(out.op), error_);
  return {DecodeStatus::Malformed, 0};
}

}  // namespace xlaunch::rendezvous
