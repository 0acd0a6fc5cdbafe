// libFuzzer target: arbitrary bytes, split into arbitrary reads, through the decoder and
// the store, checking the codec's contract on every step, and that a decoder resuming
// (Resume::SamePrefix, as the server does) agrees with one that restarts every time. Built
// only with XLAUNCH_FUZZ.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "rendezvous/store_state.hpp"
#include "rendezvous/wire_codec.hpp"

using namespace xlaunch::rendezvous;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0 picks the configuration and how the stream is cut into reads.
  const std::uint8_t config = data[0];
  CodecLimits limits;
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 256;
  limits.max_keys_per_request = 16;
  limits.max_request_bytes = 2048;
  RequestDecoder decoder(limits, (config & 1) ? Dialect::D1 : Dialect::D0);
  RequestDecoder restarting(limits, (config & 1) ? Dialect::D1 : Dialect::D0);
  const std::size_t chunk = 1 + (config >> 1) % 64;
  std::span<const std::uint8_t> input(data + 1, size - 1);

  StoreState state;
  std::vector<std::uint8_t> buffer;
  std::size_t need = 1;
  Request request, restarted;
  std::string reply, error, again;
  for (std::size_t pos = 0; pos < input.size();) {
    std::size_t n = std::min(chunk, input.size() - pos);
    buffer.insert(buffer.end(), input.begin() + pos, input.begin() + pos + n);
    pos += n;
    while (buffer.size() >= need) {
      DecodeResult res = decoder.decode(buffer, request, Resume::SamePrefix);
      DecodeResult ref = restarting.decode(buffer, restarted, Resume::No);
      check(res.status == ref.status && res.size == ref.size);
      check(decoder.error() == restarting.error());
      check(request.op == restarted.op && request.key == restarted.key &&
            request.value == restarted.value && request.expected == restarted.expected &&
            request.delta == restarted.delta && request.word == restarted.word &&
            request.keys == restarted.keys && request.values == restarted.values);
      if (res.status == DecodeStatus::Malformed) {
        check(!decoder.error().empty());
        return 0;  // the server closes the connection here
      }
      if (res.status == DecodeStatus::NeedMore) {
        check(res.size > buffer.size());
        check(res.size <= limits.max_request_bytes);
        need = res.size;
        break;
      }
      check(res.size >= 1 && res.size <= buffer.size());
      // Re-encoding what was decoded gives back exactly the bytes consumed.
      again.clear();
      encode_request(again, decoder.effective_dialect(), request);
      check(again.size() == res.size);
      check(std::memcmp(again.data(), buffer.data(), again.size()) == 0);
      Effects fx;
      reply.clear();
      if (!state.apply(1 + (pos % 3), decoder.dialect(), request, reply, fx, error)) return 0;
      buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(res.size));
      need = 1;
    }
  }
  return 0;
}
