// `xlaunch store serve`: the rendezvous store as a process of its own.
#include <fmt/core.h>

#include <array>
#include <charconv>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "config/usage_error.hpp"
#include "rendezvous/standalone.hpp"

namespace xlaunch::cli {
namespace {

// The numeric limit flags, one line each. Their upper ends lie far beyond any real use and
// keep the server's size arithmetic clear of overflow: 1 TiB for bytes, INT_MAX for counts
// (a connection is a file descriptor, an int).
constexpr long long kMaxBytes = 1LL << 40;
constexpr long long kMaxCount = std::numeric_limits<int>::max();

using Limits = rendezvous::ServerLimits;

struct LimitFlag {
  const char* name;
  std::size_t Limits::*field;
  long long max;
  const char* help;
};

constexpr std::array kLimitFlags{
    LimitFlag{"--max_key_bytes", &Limits::max_key_bytes, kMaxBytes, "Longest key accepted"},
    LimitFlag{"--max_value_bytes", &Limits::max_value_bytes, kMaxBytes, "Longest value accepted"},
    LimitFlag{"--max_keys_per_request", &Limits::max_keys_per_request, kMaxCount,
              "Most keys in one request"},
    LimitFlag{"--max_connections", &Limits::max_connections, kMaxCount,
              "Most open client connections"},
    LimitFlag{"--max_request_bytes", &Limits::max_request_bytes, kMaxBytes,
              "Largest single request; never more than --max_buffered_bytes"},
    LimitFlag{"--max_buffered_bytes", &Limits::max_buffered_bytes, kMaxBytes,
              "Most bytes of unfinished requests buffered across all connections; past it the "
              "connection buffering the most is closed"},
    LimitFlag{"--max_stored_bytes", &Limits::max_stored_bytes, kMaxBytes,
              "Most bytes of keys, values, queued items, parked WAIT and watched keys the store "
              "holds, all together (64 more counted for each); a request that would pass it "
              "closes its connection"},
};

struct StoreFlags {
  std::string host = "127.0.0.1";
  std::string port = "0";  // text too, so that 99999999999999999999 is named as typed
  std::string legacy_dialect = "1.13";
  // As given, else the defaults. Text, so that a bad value is reported as typed (CLI11
  // would quietly saturate one too large for a long long).
  std::array<std::string, kLimitFlags.size()> limits;
};

std::size_t checked_limit(const std::string& text, const LimitFlag& flag,
                          std::size_t default_value) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || value < 1 || value > flag.max) {
    throw UsageError(fmt::format("{} must be between 1 and {} (got {})", flag.name, flag.max, text),
                     fmt::format("give a value in that range, or omit {} to keep the default ({})",
                                 flag.name, default_value));
  }
  return static_cast<std::size_t>(value);
}

rendezvous::ServerOptions to_options(const StoreFlags& f) {
  rendezvous::ServerOptions o;
  if (f.legacy_dialect == "1.13") {
    o.legacy_dialect = rendezvous::LegacyDialect::Torch113;
  } else if (f.legacy_dialect == "2.1") {
    o.legacy_dialect = rendezvous::LegacyDialect::Torch21;
  } else {
    throw UsageError(
        fmt::format("--legacy_dialect {}: unknown PyTorch generation", f.legacy_dialect),
        "use 1.13 (1.13-2.0 clients) or 2.1 (2.1 clients); 2.2+ is detected by itself");
  }
  const Limits defaults;
  for (std::size_t i = 0; i < kLimitFlags.size(); ++i) {
    const LimitFlag& flag = kLimitFlags[i];
    o.limits.*flag.field = checked_limit(f.limits[i], flag, defaults.*flag.field);
  }
  return o;
}

}  // namespace

void add_store_command(CLI::App& app, Action& run) {
  CLI::App* store = app.add_subcommand("store", "The rendezvous store (PyTorch TCPStore protocol)");
  store->require_subcommand(1);
  CLI::App* serve = store->add_subcommand(
      "serve",
      "Serve the store until SIGINT/SIGTERM; prints 'xlaunch store: listening on HOST:PORT'");
  auto f = std::make_shared<StoreFlags>();
  const Limits defaults;
  serve
      ->add_option("--host", f->host,
                   "Address to bind; '::' = every interface (no authentication: keep it private)")
      ->capture_default_str();
  serve->add_option("--port", f->port, "TCP port; 0 picks a free one")
      ->capture_default_str()
      ->type_name("INT");
  serve
      ->add_option("--legacy_dialect", f->legacy_dialect,
                   "How to read codes 7/8 from clients without a handshake: 1.13 or 2.1")
      ->capture_default_str();
  for (std::size_t i = 0; i < kLimitFlags.size(); ++i) {
    const LimitFlag& flag = kLimitFlags[i];
    f->limits[i] = std::to_string(defaults.*flag.field);
    serve->add_option(flag.name, f->limits[i], fmt::format("{} (1..{})", flag.help, flag.max))
        ->capture_default_str()
        ->type_name("INT");
  }
  serve->callback([&run, f] {
    unsigned port = 0;
    const char* end = f->port.data() + f->port.size();
    const auto [stop, error] = std::from_chars(f->port.data(), end, port);
    if (f->port.empty() || error != std::errc() || stop != end || port > 65535) {
      throw UsageError(fmt::format("--port {}: not a TCP port", f->port),
                       "use 0..65535 (0 = any free port)");
    }
    rendezvous::ServerOptions options = to_options(*f);
    run = [f, options, port] {
      return rendezvous::serve_until_signal(f->host, static_cast<std::uint16_t>(port), options);
    };
  });
}

}  // namespace xlaunch::cli
