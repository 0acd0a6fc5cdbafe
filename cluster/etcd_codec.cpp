#include "cluster/etcd_codec.hpp"

#include <boost/json.hpp>
#include <charconv>

namespace xlaunch::cluster::etcd {

namespace json = boost::json;

std::string Endpoint::text() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

namespace {

Endpoint parse_one(std::string_view entry) {
  const std::string original(entry);
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("etcd endpoint '" + original + "': " + why +
                                 " (expected host:port, e.g. 10.0.0.5:2379)");
  };
  if (entry.starts_with("https://")) throw bad("https is not supported; use http://");
  if (entry.starts_with("http://")) entry.remove_prefix(7);
  while (!entry.empty() && entry.back() == '/') entry.remove_suffix(1);
  if (entry.empty()) throw bad("empty host");
  Endpoint out;
  std::string_view port_text;
  if (entry.front() == '[') {  // [IPv6]:port
    auto close = entry.find(']');
    if (close == std::string_view::npos) throw bad("no ']' after an IPv6 address");
    out.host = std::string(entry.substr(1, close - 1));
    auto rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw bad("text after ']' that is not :port");
      port_text = rest.substr(1);
    }
  } else {
    auto colon = entry.find(':');
    if (colon != entry.rfind(':')) throw bad("an IPv6 address needs brackets: [addr]:port");
    out.host = std::string(entry.substr(0, colon));
    if (colon != std::string_view::npos) port_text = entry.substr(colon + 1);
  }
  if (out.host.empty()) throw bad("empty host");
  if (out.host.find_first_of(" /\t") != std::string::npos) throw bad("not a host name");
  if (entry.find(':') != std::string_view::npos && port_text.empty() && entry.front() != '[')
    throw bad("empty port");
  if (!port_text.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 ||
        value > 65535)
      throw bad("port must be 1..65535");
    out.port = static_cast<std::uint16_t>(value);
  }
  return out;
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::string i64(std::int64_t v) { return std::to_string(v); }

json::value parse(std::string_view body) {
  json::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) {
    throw ReplyError("etcd sent a reply that is not JSON (" + ec.message() +
                     "): " + std::string(body.substr(0, 200)));
  }
  if (!v.is_object()) throw ReplyError("etcd sent a reply that is not a JSON object");
  return v;
}

/// An etcd gateway error object inside a 200 reply (streams report errors this way).
void throw_if_error(const json::object& o) {
  if (auto* e = o.if_contains("error"); e && !(e->is_string() && e->get_string().empty())) {
    std::string text;
    if (e->is_string()) {
      text = std::string(e->get_string());
    } else if (e->is_object() && e->as_object().if_contains("message") &&
               e->as_object().at("message").is_string()) {
      text = std::string(e->as_object().at("message").get_string());
    } else {
      text = json::serialize(*e);
    }
    throw ReplyError("etcd reported an error: " + text);
  }
}

/// A 64-bit integer field: the gateway writes them as strings; absent means 0.
std::int64_t int_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->get_uint64());
  if (v->is_string()) {
    auto s = v->get_string();
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size()) return out;
  }
  throw ReplyError("etcd reply field '" + std::string(name) + "' is not an integer");
}

bool bool_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return false;
  if (!v->is_bool()) throw ReplyError("etcd reply field '" + std::string(name) + "' is not a bool");
  return v->get_bool();
}

std::string bytes_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_string()) throw ReplyError("etcd reply field '" + std::string(name) + "' is not text");
  auto decoded = base64_decode(v->get_string());
  if (!decoded) throw ReplyError("etcd reply field '" + std::string(name) + "' is not base64");
  return *decoded;
}

const json::object& object_field(const json::object& o, std::string_view name) {
  static const json::object empty;
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return empty;
  if (!v->is_object())
    throw ReplyError("etcd reply field '" + std::string(name) + "' is not an object");
  return v->get_object();
}

const json::array& array_field(const json::object& o, std::string_view name) {
  static const json::array empty;
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return empty;
  if (!v->is_array())
    throw ReplyError("etcd reply field '" + std::string(name) + "' is not a list");
  return v->get_array();
}

const json::object& as_object(const json::value& v, std::string_view what) {
  if (!v.is_object()) throw ReplyError("etcd reply: " + std::string(what) + " is not an object");
  return v.get_object();
}

KeyValue decode_kv(const json::object& o) {
  KeyValue kv;
  kv.key = bytes_field(o, "key");
  kv.value = bytes_field(o, "value");
  kv.create_revision = int_field(o, "create_revision");
  kv.mod_revision = int_field(o, "mod_revision");
  kv.lease = int_field(o, "lease");
  return kv;
}

std::int64_t header_revision(const json::object& o) {
  return int_field(object_field(o, "header"), "revision");
}

json::object range_object(std::string_view key, bool prefix) {
  json::object o;
  o["key"] = base64_encode(key);
  if (prefix) o["range_end"] = base64_encode(prefix_end(key));
  return o;
}

json::object put_object(std::string_view key, std::string_view value, std::int64_t lease) {
  json::object o;
  o["key"] = base64_encode(key);
  o["value"] = base64_encode(value);
  if (lease != 0) o["lease"] = i64(lease);
  return o;
}

}  // namespace

std::vector<Endpoint> parse_endpoints(std::string_view text) {
  std::vector<Endpoint> out;
  if (text.empty()) throw std::invalid_argument("etcd endpoint: empty (expected host:port)");
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    auto entry = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    out.push_back(parse_one(entry));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    int a = sextet(text[i]), b = sextet(text[i + 1]);
    int c = text[i + 2] == '=' && last ? -2 : sextet(text[i + 2]);
    int d = text[i + 3] == '=' && last ? -2 : sextet(text[i + 3]);
    if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2)) return std::nullopt;
    unsigned n = (a << 18) | (b << 12) | ((c < 0 ? 0 : c) << 6) | (d < 0 ? 0 : d);
    out += static_cast<char>((n >> 16) & 0xff);
    if (c >= 0) out += static_cast<char>((n >> 8) & 0xff);
    if (d >= 0) out += static_cast<char>(n & 0xff);
  }
  return out;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::string range_request(std::string_view key, bool prefix) {
  return json::serialize(range_object(key, prefix));
}

std::string put_request(std::string_view key, std::string_view value, std::int64_t lease) {
  return json::serialize(put_object(key, value, lease));
}

std::string delete_request(std::string_view key, bool prefix) {
  return json::serialize(range_object(key, prefix));
}

std::string create_request(std::string_view key, std::string_view value, std::int64_t lease) {
  json::object compare;
  compare["key"] = base64_encode(key);
  compare["target"] = "CREATE";
  compare["result"] = "EQUAL";
  compare["create_revision"] = "0";
  json::object txn;
  txn["compare"] = json::array{compare};
  txn["success"] = json::array{json::object{{"request_put", put_object(key, value, lease)}}};
  txn["failure"] = json::array{json::object{{"request_range", range_object(key, false)}}};
  return json::serialize(txn);
}

std::string lease_grant_request(std::int64_t ttl_seconds) {
  return json::serialize(json::object{{"TTL", i64(ttl_seconds)}});
}

std::string lease_id_request(std::int64_t id) {
  return json::serialize(json::object{{"ID", i64(id)}});
}

std::string watch_request(std::string_view prefix, std::int64_t start_revision) {
  json::object create = range_object(prefix, true);
  if (start_revision > 0) create["start_revision"] = i64(start_revision);
  return json::serialize(json::object{{"create_request", create}});
}

RangeResult decode_range(std::string_view body) {
  json::value v = parse(body);
  const auto& o = v.get_object();
  throw_if_error(o);
  RangeResult out;
  out.revision = header_revision(o);
  for (const auto& kv : array_field(o, "kvs")) out.kvs.push_back(decode_kv(as_object(kv, "kv")));
  return out;
}

std::int64_t decode_revision(std::string_view body) {
  json::value v = parse(body);
  throw_if_error(v.get_object());
  return header_revision(v.get_object());
}

CreateResult decode_create(std::string_view body) {
  json::value v = parse(body);
  const auto& o = v.get_object();
  throw_if_error(o);
  CreateResult out;
  out.created = bool_field(o, "succeeded");
  out.revision = header_revision(o);
  if (!out.created) {
    for (const auto& r : array_field(o, "responses")) {
      const auto& range = object_field(as_object(r, "response"), "response_range");
      for (const auto& kv : array_field(range, "kvs"))
        out.existing = decode_kv(as_object(kv, "kv"));
    }
  }
  return out;
}

LeaseGrant decode_lease_grant(std::string_view body) {
  json::value v = parse(body);
  const auto& o = v.get_object();
  throw_if_error(o);
  LeaseGrant out{int_field(o, "ID"), int_field(o, "TTL")};
  if (out.id == 0) throw ReplyError("etcd granted a lease without an ID");
  return out;
}

std::int64_t decode_keepalive(std::string_view body) {
  json::value v = parse(body);
  const auto& o = v.get_object();
  throw_if_error(o);
  // The stream endpoint wraps its message in "result".
  return int_field(object_field(o, "result"), "TTL");
}

WatchMessage decode_watch(std::string_view line) {
  json::value v = parse(line);
  const auto& o = v.get_object();
  throw_if_error(o);
  const auto& r = object_field(o, "result");
  WatchMessage out;
  out.revision = header_revision(r);
  out.created = bool_field(r, "created");
  out.canceled = bool_field(r, "canceled");
  out.compact_revision = int_field(r, "compact_revision");
  if (const auto* reason = r.if_contains("cancel_reason"); reason && reason->is_string())
    out.cancel_reason = std::string(reason->get_string());
  for (const auto& e : array_field(r, "events")) {
    const auto& eo = as_object(e, "event");
    WatchEvent event;
    if (const auto* type = eo.if_contains("type")) {
      if (type->is_string()) {
        event.deleted = type->get_string() == "DELETE";
      } else if (type->is_int64()) {
        event.deleted = type->get_int64() == 1;
      }
    }
    event.kv = decode_kv(object_field(eo, "kv"));
    out.events.push_back(std::move(event));
  }
  return out;
}

std::string error_text(std::string_view body) {
  json::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.get_object();
    for (auto name : {"message", "error"}) {
      if (const auto* m = o.if_contains(name); m && m->is_string() && !m->get_string().empty())
        return std::string(m->get_string());
    }
  }
  std::string cut(body.substr(0, 200));
  while (!cut.empty() && (cut.back() == '\n' || cut.back() == '\r')) cut.pop_back();
  return cut;
}

}  // namespace xlaunch::cluster::etcd
