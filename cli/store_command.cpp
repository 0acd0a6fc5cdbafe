// `xlaunch store serve`: the rendezvous store as a process of its own.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "config/usage_error.hpp"
#include "rendezvous/standalone.hpp"

namespace xlaunch::cli {
namespace {

struct StoreFlags {
  std::string host = "127.0.0.1";
  long long port = 0;
  std::string legacy_dialect = "1.13";
  long long max_key_bytes = 0;
  long long max_value_bytes = 0;
  long long max_keys_per_request = 0;
  long long max_connections = 0;
  long long max_request_bytes = 0;
  long long max_buffered_bytes = 0;
};

// 0 = "not given": keep the default.
void apply_limit(std::size_t& field, long long value, const char* flag) {
  if (value < 0) {
    throw UsageError(fmt::format("{} must be positive, got {}", flag, value),
                     "omit the flag to keep the default");
  }
  if (value > 0) field = static_cast<std::size_t>(value);
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
  apply_limit(o.limits.max_key_bytes, f.max_key_bytes, "--max_key_bytes");
  apply_limit(o.limits.max_value_bytes, f.max_value_bytes, "--max_value_bytes");
  apply_limit(o.limits.max_keys_per_request, f.max_keys_per_request, "--max_keys_per_request");
  apply_limit(o.limits.max_connections, f.max_connections, "--max_connections");
  apply_limit(o.limits.max_request_bytes, f.max_request_bytes, "--max_request_bytes");
  apply_limit(o.limits.max_buffered_bytes, f.max_buffered_bytes, "--max_buffered_bytes");
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
  const rendezvous::ServerLimits defaults;
  serve
      ->add_option("--host", f->host,
                   "Address to bind; '::' = every interface (no authentication: keep it private)")
      ->capture_default_str();
  serve->add_option("--port", f->port, "TCP port; 0 picks a free one")->capture_default_str();
  serve
      ->add_option("--legacy_dialect", f->legacy_dialect,
                   "How to read codes 7/8 from clients without a handshake: 1.13 or 2.1")
      ->capture_default_str();
  serve->add_option("--max_key_bytes", f->max_key_bytes,
                    fmt::format("Longest key accepted (default {})", defaults.max_key_bytes));
  serve->add_option("--max_value_bytes", f->max_value_bytes,
                    fmt::format("Longest value accepted (default {})", defaults.max_value_bytes));
  serve->add_option(
      "--max_keys_per_request", f->max_keys_per_request,
      fmt::format("Most keys in one request (default {})", defaults.max_keys_per_request));
  serve->add_option(
      "--max_connections", f->max_connections,
      fmt::format("Most open client connections (default {})", defaults.max_connections));
  serve->add_option(
      "--max_request_bytes", f->max_request_bytes,
      fmt::format("Largest single request (default {}; never more than --max_buffered_bytes)",
                  defaults.max_request_bytes));
  serve->add_option(
      "--max_buffered_bytes", f->max_buffered_bytes,
      fmt::format("Most bytes of unfinished requests buffered across all connections; past it "
                  "the connection buffering the most is closed (default {})",
                  defaults.max_buffered_bytes));
  serve->callback([&run, f] {
    if (f->port < 0 || f->port > 65535) {
      throw UsageError(fmt::format("--port {}: not a TCP port", f->port),
                       "use 0..65535 (0 = any free port)");
    }
    rendezvous::ServerOptions options = to_options(*f);
    run = [f, options] {
      return rendezvous::serve_until_signal(f->host, static_cast<std::uint16_t>(f->port), options);
    };
  });
}

}  // namespace xlaunch::cli
