// The codec's writing half: Request -> bytes (the client), and the field encoders replies
// are made of (the store) (wire_codec.hpp).
#include <fmt/core.h>

#include <cstring>
#include <stdexcept>

#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous {

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }

void put_u32(std::string& out, std::uint32_t v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof b);
}

void put_u64(std::string& out, std::uint64_t v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof b);
}

void put_i64(std::string& out, std::int64_t v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof b);
}

void put_bytes(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

std::uint64_t load_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint32_t load_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void encode_request(std::string& out, Dialect d, const Request& r) {
  std::optional<std::uint8_t> code = code_for_op(d, r.op);
  if (!code) {
    throw std::invalid_argument(
        fmt::format("{} does not exist in the {} protocol", op_name(r.op), dialect_name(d)));
  }
  put_u8(out, *code);
  switch (r.op) {
    case Op::Validate:
    case Op::Ping:
      put_u32(out, r.word);
      break;
    case Op::Set:
    case Op::Append:
    case Op::QueuePush:
      put_bytes(out, r.key);
      put_bytes(out, r.value);
      break;
    case Op::CompareSet:
      put_bytes(out, r.key);
      put_bytes(out, r.expected);
      put_bytes(out, r.value);
      break;
    case Op::Get:
    case Op::WatchKey:
    case Op::DeleteKey:
    case Op::QueuePop:
    case Op::QueueLen:
      put_bytes(out, r.key);
      break;
    case Op::Add:
      put_bytes(out, r.key);
      put_i64(out, r.delta);
      break;
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
      put_u64(out, r.keys.size());
      for (std::string_view k : r.keys) put_bytes(out, k);
      break;
    case Op::MultiSet:
      put_i64(out, static_cast<std::int64_t>(r.keys.size()));
      for (std::size_t i = 0; i < r.keys.size(); ++i) {
        put_bytes(out, r.keys[i]);
        put_bytes(out, i < r.values.size() ? r.values[i] : std::string_view{});
      }
      break;
    case Op::NumKeys:
    case Op::CancelWait:
    case Op::List:
      break;
  }
}

}  // namespace xlaunch::rendezvous
