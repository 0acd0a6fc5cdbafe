#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "cluster/etcd_http.hpp"

namespace xlaunch::cluster::etcd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using error_code = boost::system::error_code;

namespace {

// etcd's own request limit is 1.5 MiB; a watch line holds a few events of that size at most.
constexpr std::size_t kMaxStreamLine = 16u << 20;
constexpr std::uint64_t kMaxErrorBody = 64u << 10;

std::string describe(const error_code& ec) {
  if (ec == beast::error::timeout || ec == asio::error::operation_aborted)
    return "no answer in time";
  return ec.message();
}

/// One connection; every operation runs the io_context until it completes, and the
/// stream's expiry (the caller's deadline) bounds connect, write and read.
class Connection {
 public:
  Connection(const Endpoint& endpoint, Clock::time_point deadline) : deadline_(deadline) {
    asio::ip::tcp::resolver resolver(ioc_);
    error_code ec;
    asio::ip::tcp::resolver::results_type results;
    bool resolved = false;
    resolver.async_resolve(endpoint.host, std::to_string(endpoint.port),
                           [&](const error_code& e, asio::ip::tcp::resolver::results_type r) {
                             ec = e;
                             results = std::move(r);
                             resolved = true;
                           });
    ioc_.run_until(deadline_);
    if (!resolved) {
      resolver.cancel();
      throw TransportError("cannot resolve " + endpoint.host + ": no answer in time");
    }
    ioc_.restart();
    if (ec) throw TransportError("cannot resolve " + endpoint.host + ": " + ec.message());
    stream_.expires_at(deadline_);
    stream_.async_connect(results, [&](const error_code& e, const auto&) { ec = e; });
    run();
    if (ec) throw TransportError("cannot connect: " + describe(ec));
  }

  ~Connection() {
    error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  void write(const Endpoint& endpoint, std::string_view target, std::string_view body) {
    http::request<http::string_body> request{http::verb::post, std::string(target), 11};
    request.set(http::field::host, endpoint.text());
    request.set(http::field::content_type, "application/json");
    request.body() = std::string(body);
    request.prepare_payload();
    error_code ec;
    stream_.expires_at(deadline_);
    http::async_write(stream_, request, [&](const error_code& e, std::size_t) { ec = e; });
    run();
    if (ec) throw TransportError("cannot send the request: " + describe(ec));
  }

  HttpReply read_all() {
    http::response<http::string_body> response;
    error_code ec;
    stream_.expires_at(deadline_);
    http::async_read(stream_, buffer_, response, [&](const error_code& e, std::size_t) { ec = e; });
    run();
    if (ec) throw TransportError("no complete reply: " + describe(ec));
    return {static_cast<int>(response.result_int()), std::move(response.body())};
  }

  bool read_stream(const std::function<bool(std::string_view)>& on_line) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);  // the stream is bounded by the deadline, lines are consumed
    error_code ec;
    stream_.expires_at(deadline_);
    http::async_read_header(stream_, buffer_, parser,
                            [&](const error_code& e, std::size_t) { ec = e; });
    run();
    if (ec == beast::error::timeout) return false;
    if (ec) throw TransportError("no reply: " + describe(ec));
    if (parser.get().result_int() != 200) {
      parser.body_limit(kMaxErrorBody);  // only its start is shown
      http::async_read(stream_, buffer_, parser, [&](const error_code& e, std::size_t) { ec = e; });
      run();
      throw ReplyError("etcd answered HTTP " + std::to_string(parser.get().result_int()) + ": " +
                       error_text(parser.get().body()));
    }
    std::size_t scanned = 0;  // bytes of the body known to hold no newline
    while (true) {
      std::string& body = parser.get().body();
      std::size_t newline;
      while ((newline = body.find('\n', scanned)) != std::string::npos) {
        std::string line = body.substr(0, newline);
        body.erase(0, newline + 1);  // the body reader appends at the current end
        scanned = 0;
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        if (!on_line(line)) return true;
      }
      scanned = body.size();
      // A watch event is one line of JSON holding a few small records; a line that never
      // ends (a broken proxy, a hostile server) must not grow memory until the deadline.
      if (body.size() > kMaxStreamLine) {
        throw TransportError("a line of the watch stream is longer than " +
                             std::to_string(kMaxStreamLine >> 20) + " MiB");
      }
      if (parser.is_done()) throw TransportError("the stream ended");
      http::async_read_some(stream_, buffer_, parser,
                            [&](const error_code& e, std::size_t) { ec = e; });
      run();
      if (ec == beast::error::timeout) return false;
      if (ec) throw TransportError("the stream broke: " + describe(ec));
    }
  }

 private:
  void run() {
    ioc_.run();
    ioc_.restart();
  }

  Clock::time_point deadline_;
  asio::io_context ioc_;
  beast::tcp_stream stream_{ioc_};
  beast::flat_buffer buffer_;
};

}  // namespace

HttpReply http_post(const Endpoint& endpoint, std::string_view target, std::string_view body,
                    Clock::time_point deadline) {
  Connection connection(endpoint, deadline);
  connection.write(endpoint, target, body);
  return connection.read_all();
}

bool http_post_stream(const Endpoint& endpoint, std::string_view target, std::string_view body,
                      Clock::time_point deadline,
                      const std::function<bool(std::string_view)>& on_line) {
  Connection connection(endpoint, deadline);
  connection.write(endpoint, target, body);
  return connection.read_stream(on_line);
}

}  // namespace xlaunch::cluster::etcd
