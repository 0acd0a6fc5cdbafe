// The TCPStore wire format as a pure, incremental codec: bytes -> Request and Request /
// replies -> bytes. No I/O, no allocation proportional to a length before that length is
// checked against the limits. See tcpstore-protocol.md §1-§4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rendezvous/dialect.hpp"

namespace xlaunch::rendezvous {

/// Bounds checked while decoding; a request over any of them is malformed.
struct CodecLimits {
  std::size_t max_key_bytes = 64 * 1024;
  std::size_t max_value_bytes = 64 * 1024 * 1024;
  std::size_t max_keys_per_request = 131072;
  /// Bound on one whole request (a KeyList of many long keys would otherwise be unbounded).
  std::size_t max_request_bytes = 256 * 1024 * 1024;
};

/// One decoded request. The string_views point into the buffer given to decode() and are
/// valid until that buffer changes.
struct Request {
  Op op = Op::Set;
  /// SET, GET, ADD, COMPARE_SET, DELETE_KEY, APPEND, WATCH_KEY, QUEUE_*.
  std::string_view key;
  /// SET / APPEND / QUEUE_PUSH value; COMPARE_SET desired value.
  std::string_view value;
  /// COMPARE_SET expected value.
  std::string_view expected;
  /// ADD delta.
  std::int64_t delta = 0;
  /// VALIDATE magic, PING nonce.
  std::uint32_t word = 0;
  /// CHECK, WAIT, MULTI_GET keys; MULTI_SET keys (values in `values`, same order).
  std::vector<std::string_view> keys;
  std::vector<std::string_view> values;
};

enum class DecodeStatus { Complete, NeedMore, Malformed };

struct DecodeResult {
  DecodeStatus status = DecodeStatus::NeedMore;
  /// Complete: bytes the request used (drop them). NeedMore: total bytes the request
  /// needs at least, counted from the start of the buffer (do not retry with fewer).
  std::size_t size = 0;
};

/// What the caller of RequestDecoder::decode() promises about its buffer.
enum class Resume {
  /// Nothing: decode from the buffer's first byte. Any buffer is fine.
  No,
  /// The buffer begins with every byte of the buffer passed to the previous decode() call,
  /// if that call returned NeedMore (the bytes may have moved: only offsets are kept). A
  /// list request (CHECK, WAIT, MULTI_GET, MULTI_SET) then goes on where that call stopped,
  /// so a request trickled in many pieces costs work linear in its size. A connection's
  /// buffer that only grows until a request completes, then drops that request's bytes,
  /// keeps this promise on every call. After any other result there is nothing to resume.
  SamePrefix,
};

namespace detail {
// Where an incomplete list request stopped, as offsets from the buffer's start (the bytes
// may move between calls, so no pointers or string_views).
struct ListProgress {
  bool active = false;
  Op op = Op::Check;
  std::uint8_t code = 0;  // the command byte, to recognise the same request
  std::size_t seen = 0;   // buffer size then: a resumed buffer holds at least this
  std::size_t pos = 0;    // offset of the next unread byte
  bool have_count = false;
  std::uint64_t count = 0;  // keys (pairs for MULTI_SET)
  bool have_len = false;    // the current key's / value's length is read, not its bytes
  std::uint64_t len = 0;
  // Offset and length of each key (MULTI_SET: key, value, key...). 16 bytes per field of
  // at least 8 buffered: bounded by twice what max_buffered_bytes lets a connection hold.
  std::vector<std::pair<std::size_t, std::size_t>> fields;
};
}  // namespace detail

/// Decodes the requests of one connection. Stateful in the connection's dialect, which
/// changes when a request completes (detection, pinning), and in how far an incomplete list
/// request got (kept only for Resume::SamePrefix). Decoding the same incomplete bytes again
/// is harmless: only a Complete result moves the dialect on (commit).
class RequestDecoder {
 public:
  /// `legacy_default` (D0 or D1) decides codes 7 and 8 on legacy connections until
  /// something pins the dialect.
  explicit RequestDecoder(CodecLimits limits = {}, Dialect legacy_default = Dialect::D0);

  /// Decodes the first request in `buffer` into `out`. Malformed: error() says why.
  /// Resume::No starts from the first byte; Resume::SamePrefix may go on from the previous
  /// NeedMore (see Resume), and falls back to the first byte when the buffer is visibly not
  /// that one (shorter, another command byte or count).
  DecodeResult decode(std::span<const std::uint8_t> buffer, Request& out,
                      Resume resume = Resume::No);

  Dialect dialect() const { return dialect_; }
  /// The dialect used to read a legacy connection's codes right now.
  Dialect effective_dialect() const;
  const std::string& error() const { return error_; }
  /// Fields (integers, and the bytes of each key or value) read since construction: lets
  /// tests see that a resumed request is not read again.
  std::uint64_t fields_read() const { return fields_read_; }

 private:
  CodecLimits limits_;
  Dialect legacy_default_;
  Dialect dialect_ = Dialect::Undetected;
  std::string error_;
  detail::ListProgress progress_;
  std::uint64_t fields_read_ = 0;
};

/// Appends the encoding of `request` in dialect `d` (D0, D1 or D2). Throws
/// std::invalid_argument when that dialect has no code for request.op.
void encode_request(std::string& out, Dialect d, const Request& request);

// Field encoders: native byte order, as PyTorch writes them (little-endian in practice).
void put_u8(std::string& out, std::uint8_t v);
void put_u32(std::string& out, std::uint32_t v);
void put_u64(std::string& out, std::uint64_t v);
void put_i64(std::string& out, std::int64_t v);
/// u64 length + bytes (Str and Bytes share this encoding).
void put_bytes(std::string& out, std::string_view bytes);

/// Reads a native-order integer from 8 (or 4) bytes.
std::uint64_t load_u64(const std::uint8_t* p);
std::uint32_t load_u32(const std::uint8_t* p);

/// WAIT replies and CHECK replies.
inline constexpr std::uint8_t kStopWaiting = 0;
inline constexpr std::uint8_t kWaitCanceled = 1;
inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
/// WATCH_KEY acknowledgement (1.13).
inline constexpr std::uint8_t kWatchAck = 3;

}  // namespace xlaunch::rendezvous
