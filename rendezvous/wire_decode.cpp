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
  Cursor(std::span<const std::uint8_t> buf, const CodecLimits& limits, std::string& error)
      : buf_(buf), limits_(limits), error_(error) {}

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
  // u64 length + bytes, the length checked against `max` before anything else.
  Step str(std::string_view& out, std::size_t max, const char* what, const char* flag) {
    std::uint64_t len = 0;
    if (Step s = u64(len); s != Step::Ok) return s;
    if (len > max) return bad(fmt::format("{} of {} bytes exceeds {} ({})", what, len, max, flag));
    const std::uint8_t* p = nullptr;
    if (Step s = take(static_cast<std::size_t>(len), p); s != Step::Ok) return s;
    out = std::string_view(reinterpret_cast<const char*>(p), static_cast<std::size_t>(len));
    return Step::Ok;
  }
  Step key(std::string_view& out) {
    return str(out, limits_.max_key_bytes, "key", "max_key_bytes");
  }
  Step value(std::string_view& out) {
    return str(out, limits_.max_value_bytes, "value", "max_value_bytes");
  }
  Step count(std::uint64_t n) {
    if (n > limits_.max_keys_per_request) {
      return bad(fmt::format("{} keys in one request exceeds {} (max_keys_per_request)", n,
                             limits_.max_keys_per_request));
    }
    return Step::Ok;
  }
  Step key_list(std::vector<std::string_view>& keys) {
    std::uint64_t n = 0;
    if (Step s = u64(n); s != Step::Ok) return s;
    if (Step s = count(n); s != Step::Ok) return s;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string_view k;
      if (Step s = key(k); s != Step::Ok) return s;
      keys.push_back(k);
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
  std::size_t pos_ = 0;
  std::size_t need_ = 0;
};

// Reads the arguments of `op` (the command byte is already consumed).
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
      return c.key_list(r.keys);
    case Op::MultiSet: {
      std::int64_t n = 0;
      if ((s = c.i64(n)) != Step::Ok) return s;
      if (n < 0) return c.bad(fmt::format("MULTI_SET with negative count {}", n));
      if ((s = c.count(static_cast<std::uint64_t>(n))) != Step::Ok) return s;
      for (std::int64_t i = 0; i < n; ++i) {
        std::string_view k, v;
        if ((s = c.key(k)) != Step::Ok) return s;
        if ((s = c.value(v)) != Step::Ok) return s;
        r.keys.push_back(k);
        r.values.push_back(v);
      }
      return Step::Ok;
    }
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

DecodeResult RequestDecoder::decode(std::span<const std::uint8_t> buffer, Request& out) {
  clear_request(out);
  error_.clear();
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
  Cursor c(buffer, limits_, error_);
  const std::uint8_t* skip = nullptr;
  c.take(1, skip);
  switch (read_args(c, out)) {
    case Step::Ok:
      dialect_ = next;
      return {DecodeStatus::Complete, c.pos()};
    case Step::More:
      return {DecodeStatus::NeedMore, c.need()};
    case Step::Bad:
      break;
  }
  error_ = fmt::format("{}: {}", op_name(out.op), error_);
  return {DecodeStatus::Malformed, 0};
}

}  // namespace xlaunch::rendezvous
