// Load generator for TCPStore servers (ours and PyTorch's), speaking the 1.13 numbering
// (--dialect 1.13, the default; PyTorch 1.13's server and ours understand it) or the 2.2+
// one (--dialect 2.2: every connection starts with VALIDATE; PyTorch 2.2+'s servers accept
// nothing else). One thread, Boost.Asio, so thousands of clients cost no threads.
//
//   store_load ops   --port P --op set|get|add --clients N --seconds S [--depth D] [--dialect V]
//   store_load storm --port P --clients N [--connect_window W] [--timeout_s T] [--dialect V]
//                    [--source_ips K] [--total M] [--run_id R] [--start_at_ns T]
//
// A storm larger than one process's descriptor limit runs as several store_load processes:
// each opens --clients of the M (--total) clients, all ADD on the same counter (the key comes
// from --run_id), the one that sees M sets the key, and each waits until its own clients are
// released. --start_at_ns (CLOCK_MONOTONIC) lines their starts up; each prints its phases as
// CLOCK_MONOTONIC nanoseconds so the caller can merge them.
//
// Prints one JSON object on stdout. `set` is SET followed by GETNUMKEYS (SET has no reply,
// so the pair is one synchronous round trip); `get` reads an existing 64-byte value
// (the GET half of torch's get); `add` is ADD +1 on one counter. --depth D keeps D requests
// in flight per client (written together, then D replies read); 1, the default, is the
// closed loop every PyTorch client runs.
#include <fmt/core.h>
#include <sys/resource.h>

#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/wire_codec.hpp"

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace xlaunch::rendezvous;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string mode;
  std::string host = "127.0.0.1";
  int port = 0;
  std::string op = "get";
  int clients = 1;
  int depth = 1;
  double seconds = 3;
  int connect_window = 2048;
  double timeout_s = 120;
  int source_ips = 1;
  int total = 0;  // 0: --clients
  long long start_at_ns = 0;
  std::string run_id;
  std::string dialect = "1.13";
};

// The numbering requests are encoded in, and what each connection sends first (VALIDATE
// for 2.2+, nothing for 1.13). Set once by main().
Dialect g_dialect = Dialect::D0;
std::string g_hello;

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) throw std::runtime_error("usage: store_load ops|storm --port P ...");
  a.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--host")
      a.host = v;
    else if (k == "--port")
      a.port = std::stoi(v);
    else if (k == "--op")
      a.op = v;
    else if (k == "--clients")
      a.clients = std::stoi(v);
    else if (k == "--depth")
      a.depth = std::stoi(v);
    else if (k == "--seconds")
      a.seconds = std::stod(v);
    else if (k == "--connect_window")
      a.connect_window = std::stoi(v);
    else if (k == "--timeout_s")
      a.timeout_s = std::stod(v);
    else if (k == "--source_ips")
      a.source_ips = std::stoi(v);
    else if (k == "--dialect")
      a.dialect = v;
    else if (k == "--total")
      a.total = std::stoi(v);
    else if (k == "--start_at_ns")
      a.start_at_ns = std::stoll(v);
    else if (k == "--run_id")
      a.run_id = v;
    else
      throw std::runtime_error("unknown flag " + k);
  }
  return a;
}

std::string encode(Op op, std::string_view key = {}, std::string_view value = {},
                   std::int64_t delta = 0, std::vector<std::string_view> keys = {}) {
  Request r;
  r.op = op;
  r.key = key;
  r.value = value;
  r.delta = delta;
  r.keys = std::move(keys);
  std::string out;
  encode_request(out, g_dialect, r);
  return out;
}

void choose_dialect(const std::string& name) {
  if (name == "1.13") return;
  if (name != "2.2") throw std::runtime_error("--dialect must be 1.13 or 2.2");
  g_dialect = Dialect::D2;
  Request validate;
  validate.op = Op::Validate;
  validate.word = kValidateMagic;
  encode_request(g_hello, g_dialect, validate);
}

std::string run_id() {
  std::mt19937_64 rng(std::random_device{}());
  return fmt::format("/bench/{:x}/", rng());
}

std::size_t raise_nofile() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  return lim.rlim_cur;
}

// --- ops: N clients in closed loops for S seconds -----------------------------------

struct OpsClient : std::enable_shared_from_this<OpsClient> {
  OpsClient(asio::io_context& io, std::string request, std::size_t reply_size, int depth,
            const Clock::time_point& end, long long& ops)
      : socket(io),
        request(std::move(request)),
        reply(reply_size),
        depth(depth),
        end(end),
        ops(ops) {}

  void loop() {
    asio::async_write(socket, asio::buffer(request),
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        if (ec) throw std::runtime_error("write: " + ec.message());
                        asio::async_read(self->socket, asio::buffer(self->reply),
                                         [self](boost::system::error_code ec2, std::size_t) {
                                           if (ec2)
                                             throw std::runtime_error("read: " + ec2.message());
                                           self->ops += self->depth;
                                           if (Clock::now() < self->end) self->loop();
                                         });
                      });
  }

  tcp::socket socket;
  std::string request;
  std::vector<char> reply;
  int depth;
  const Clock::time_point& end;
  long long& ops;
};

int run_ops(const Args& a) {
  asio::io_context io;
  tcp::endpoint ep(asio::ip::make_address(a.host), static_cast<std::uint16_t>(a.port));
  const std::string prefix = run_id();
  const std::string key = prefix + "k", ctr = prefix + "ctr";
  const std::string value(64, 'v');
  std::string request;
  std::size_t reply_size = 0;
  if (a.op == "set") {
    request = encode(Op::Set, key, value) + encode(Op::NumKeys);
    reply_size = 8;
  } else if (a.op == "get") {
    request = encode(Op::Get, key);
    reply_size = 8 + value.size();
  } else if (a.op == "add") {
    request = encode(Op::Add, ctr, {}, 1);
    reply_size = 8;
  } else {
    throw std::runtime_error("--op must be set, get or add");
  }
  if (a.depth < 1) throw std::runtime_error("--depth must be at least 1");
  std::string one_request = std::move(request);
  for (int i = 0; i < a.depth; ++i) request += one_request;
  reply_size *= static_cast<std::size_t>(a.depth);
  {
    // The value GET reads; synchronous setup.
    tcp::socket s(io);
    s.connect(ep);
    s.set_option(tcp::no_delay(true));
    std::string setup = g_hello + encode(Op::Set, key, value) + encode(Op::NumKeys);
    asio::write(s, asio::buffer(setup));
    char buf[8];
    asio::read(s, asio::buffer(buf));
  }
  long long ops = 0;
  Clock::time_point end = Clock::time_point::max();
  std::vector<std::shared_ptr<OpsClient>> clients;
  for (int i = 0; i < a.clients; ++i) {
    auto c = std::make_shared<OpsClient>(io, request, reply_size, a.depth, end, ops);
    c->socket.connect(ep);
    c->socket.set_option(tcp::no_delay(true));
    if (!g_hello.empty()) asio::write(c->socket, asio::buffer(g_hello));  // no reply
    clients.push_back(c);
  }
  auto start = Clock::now();
  end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds));
  for (auto& c : clients) c->loop();
  io.run();
  for (auto& c : clients) {
    boost::system::error_code ignored;
    c->socket.set_option(asio::socket_base::linger(true, 0), ignored);
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  fmt::print(
      "{{\"mode\": \"ops\", \"op\": \"{}\", \"clients\": {}, \"depth\": {}, \"ops\": {}, "
      "\"seconds\": {:.3f}, \"ops_per_s\": {:.1f}}}\n",
      a.op, a.clients, a.depth, ops, elapsed, static_cast<double>(ops) / elapsed);
  return 0;
}

// --- storm: N clients connect at once, ADD, WAIT; the last one in sets the key -----------

struct Storm {
  asio::io_context io;
  tcp::endpoint ep;
  int n = 0;      // this process's clients
  int total = 0;  // all processes' clients: the ADD that returns this sets the key
  int window = 0;
  int source_ips = 1;
  std::string add_req, wait_req, set_req;
  int started = 0, in_flight = 0, released = 0, connect_retries = 0, next_source = 0;
  std::vector<std::shared_ptr<tcp::socket>> sockets;
  Clock::time_point start;
  Clock::time_point all_connected;
  Clock::time_point last_added;  // the last ADD reply: the release starts here
  Clock::time_point done;
  int connected = 0;

  void launch_more() {
    while (started < n && in_flight < window) {
      ++started;
      ++in_flight;
      connect(std::make_shared<tcp::socket>(io), 0);
    }
  }

  // With several loopback source addresses (127.0.0.2, .3, ...) each has its own ephemeral
  // port range, so the kernel's free-port search does not dominate a large storm.
  void bind_source(tcp::socket& s) {
    if (source_ips <= 1) return;
    std::uint32_t ip = (127u << 24) + 2 + static_cast<std::uint32_t>(next_source++ % source_ips);
    s.open(tcp::v4());
    s.bind(tcp::endpoint(asio::ip::address_v4(ip), 0));
  }

  void connect(std::shared_ptr<tcp::socket> s, int attempt) {
    bind_source(*s);
    s->async_connect(ep, [this, s, attempt](boost::system::error_code ec) {
      if (ec) {
        // Backlog overflow or a transient failure: retry shortly, like a worker would.
        ++connect_retries;
        auto t = std::make_shared<asio::steady_timer>(
            io, std::chrono::milliseconds(5 << std::min(attempt, 6)));
        t->async_wait([this, s, t, attempt](boost::system::error_code) {
          boost::system::error_code ignored;
          s->close(ignored);
          *s = tcp::socket(io);
          connect(s, attempt + 1);
        });
        return;
      }
      --in_flight;
      if (++connected == n) all_connected = Clock::now();
      sockets.push_back(s);
      s->set_option(tcp::no_delay(true));
      launch_more();
      asio::async_write(
          *s, asio::buffer(add_req), [this, s](boost::system::error_code ec, std::size_t) {
            if (ec) throw std::runtime_error("ADD write: " + ec.message());
            auto reply = std::make_shared<std::array<char, 8>>();
            asio::async_read(
                *s, asio::buffer(*reply),
                [this, s, reply](boost::system::error_code ec, std::size_t) {
                  if (ec) throw std::runtime_error("ADD read: " + ec.message());
                  std::int64_t v;
                  std::memcpy(&v, reply->data(), 8);
                  if (v == total) last_added = Clock::now();
                  const std::string& req =
                      v == total ? set_req : wait_req;  // set_req includes a WAIT
                  asio::async_write(
                      *s, asio::buffer(req), [this, s](boost::system::error_code ec, std::size_t) {
                        if (ec) throw std::runtime_error("WAIT write: " + ec.message());
                        auto one = std::make_shared<char>();
                        asio::async_read(*s, asio::buffer(one.get(), 1),
                                         [this, s, one](boost::system::error_code ec, std::size_t) {
                                           if (ec)
                                             throw std::runtime_error("WAIT read: " + ec.message());
                                           if (++released == n) {
                                             done = Clock::now();
                                             io.stop();
                                           }
                                         });
                      });
                });
          });
    });
  }
};

std::int64_t monotonic_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

int run_storm(const Args& a) {
  std::size_t limit = raise_nofile();
  Storm s;
  s.n = a.clients;
  std::string note;
  if (static_cast<std::size_t>(s.n) + 64 > limit) {
    s.n = static_cast<int>(limit) - 64;
    note = fmt::format("scaled down from {} to {}: RLIMIT_NOFILE hard limit {}", a.clients, s.n,
                       limit);
  }
  s.total = a.total > 0 ? a.total : s.n;
  s.ep = tcp::endpoint(asio::ip::make_address(a.host), static_cast<std::uint16_t>(a.port));
  s.window = a.connect_window;
  s.source_ips = a.source_ips;
  const std::string prefix = a.run_id.empty() ? run_id() : "/bench/" + a.run_id + "/";
  const std::string arrived = prefix + "arrived", go = prefix + "go";
  s.add_req = g_hello + encode(Op::Add, arrived, {}, 1);  // ADD is each connection's first
  s.wait_req = encode(Op::Wait, {}, {}, 0, {go});
  s.set_req = encode(Op::Set, go, "1") + s.wait_req;
  // steady_clock is CLOCK_MONOTONIC here, the clock the caller's start time is in.
  if (a.start_at_ns > 0) {
    std::this_thread::sleep_until(Clock::time_point(std::chrono::nanoseconds(a.start_at_ns)));
  }
  asio::steady_timer deadline(s.io, std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(a.timeout_s)));
  bool timed_out = false;
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) {
      timed_out = true;
      s.io.stop();
    }
  });
  s.start = Clock::now();
  s.launch_more();
  s.io.run();
  // Close with RST, not FIN: no TIME_WAIT, so the next storm finds free ephemeral ports.
  for (auto& sock : s.sockets) {
    boost::system::error_code ignored;
    sock->set_option(asio::socket_base::linger(true, 0), ignored);
    sock->close(ignored);
  }
  auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  double elapsed = secs((timed_out ? Clock::now() : s.done) - s.start);
  const bool added_last = s.last_added != Clock::time_point{};
  fmt::print(
      "{{\"mode\": \"storm\", \"clients\": {}, \"requested\": {}, \"total\": {}, "
      "\"released\": {}, \"timed_out\": {}, \"seconds\": {:.3f}, \"connect_s\": {:.3f}, "
      "\"release_s\": {:.3f}, \"connect_retries\": {}, \"start_ns\": {}, "
      "\"connected_ns\": {}, \"last_added_ns\": {}, \"done_ns\": {}, \"note\": \"{}\"}}\n",
      s.n, a.clients, s.total, s.released, timed_out ? "true" : "false", elapsed,
      timed_out ? 0.0 : secs(s.all_connected - s.start),
      timed_out || !added_last ? 0.0 : secs(s.done - s.last_added), s.connect_retries,
      monotonic_ns(s.start), timed_out ? 0 : monotonic_ns(s.all_connected),
      added_last ? monotonic_ns(s.last_added) : 0, timed_out ? 0 : monotonic_ns(s.done), note);
  return timed_out ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse(argc, argv);
    choose_dialect(a.dialect);
    if (a.mode == "ops") return run_ops(a);
    if (a.mode == "storm") return run_storm(a);
    throw std::runtime_error("mode must be ops or storm");
  } catch (const std::exception& e) {
    fmt::print(stderr, "store_load: error: {}\n", e.what());
    return 1;
  }
}
