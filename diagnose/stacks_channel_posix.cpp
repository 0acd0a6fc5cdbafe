#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <istream>
#include <list>
#include <optional>

#include "diagnose/stacks_channel.hpp"
#include "diagnose/stacks_registry.hpp"

namespace xlaunch::diagnose {
namespace {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

// A few `xlaunch stacks` at once is plenty; more are closed at once.
constexpr std::size_t kMaxConnections = 8;
constexpr std::size_t kMaxRequest = 64;

int bind_socket(const std::string& path, int& error) {
  const std::optional<sockaddr_un> addr = unix_address(path);
  if (!addr) {
    error = ENAMETOOLONG;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  const auto* a = reinterpret_cast<const sockaddr*>(&*addr);
  int bound = ::bind(fd, a, sizeof *addr);
  if (bound != 0 && errno == EADDRINUSE) {
    // A socket file is there: stale (nobody listens: replace it) or another launcher's.
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool stale =
        probe >= 0 && ::connect(probe, a, sizeof *addr) != 0 && errno == ECONNREFUSED;
    if (probe >= 0) ::close(probe);
    if (stale && ::unlink(path.c_str()) == 0) bound = ::bind(fd, a, sizeof *addr);
    if (!stale) errno = EADDRINUSE;
  }
  if (bound != 0 || ::listen(fd, static_cast<int>(kMaxConnections)) != 0) {
    error = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

struct StacksChannel::Impl : std::enable_shared_from_this<Impl> {
  struct Connection {
    explicit Connection(Local::socket s) : socket(std::move(s)) {}
    Local::socket socket;
    asio::streambuf request{kMaxRequest};
    std::string answer;
  };

  asio::io_context& io;
  OnRequest on_request;
  std::string path;
  std::string problem;
  bool folder_refused = false;
  struct stat bound {};
  std::optional<Local::acceptor> acceptor;
  std::list<std::shared_ptr<Connection>> open;
  bool accepting = false;

  Impl(asio::io_context& i, OnRequest r) : io(i), on_request(std::move(r)) {}

  void bind(const std::string& dir, const std::string& run_id) {
    if (auto refused = prepare_runtime_dir(dir)) {
      problem = *refused;
      folder_refused = true;
      return;
    }
    const std::string where = socket_path(dir, run_id);
    int error = 0;
    const int fd = bind_socket(where, error);
    if (fd < 0) {
      problem = error == EADDRINUSE
                    ? fmt::format("another launcher of run {} on this machine listens at {}",
                                  run_id, where)
                    : fmt::format("cannot listen at {}: {}", where, std::strerror(error));
      return;
    }
    ::lstat(where.c_str(), &bound);
    acceptor.emplace(io, Local(), fd);
    path = where;
  }

  void accept_next() {
    acceptor->async_accept(
        [self = shared_from_this()](const boost::system::error_code& ec, Local::socket socket) {
          if (ec || !self->accepting) return;
          self->serve(std::move(socket));
          self->accept_next();
        });
  }

  void serve(Local::socket socket) {
    ucred peer{};
    socklen_t size = sizeof peer;
    // The folder is private; this also keeps out whoever was handed a descriptor to it.
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
        (peer.uid != ::getuid() && peer.uid != 0) || open.size() >= kMaxConnections) {
      return;  // closed as it goes out of scope
    }
    auto c = std::make_shared<Connection>(std::move(socket));
    open.push_back(c);
    asio::async_read_until(
        c->socket, c->request, '\n',
        [self = shared_from_this(), c](const boost::system::error_code& ec, std::size_t) {
          if (ec) return self->close(c);
          std::istream in(&c->request);
          std::string line;
          std::getline(in, line);
          if (line != "stacks") return self->close(c);
          self->on_request([self, c](std::string text) { self->answer(c, std::move(text)); });
        });
  }

  void answer(const std::shared_ptr<Connection>& c, std::string text) {
    if (!c->socket.is_open()) return;  // stop() closed it: the attempt ended
    c->answer = fmt::format("{}\n{}", text.size(), text);
    asio::async_write(c->socket, asio::buffer(c->answer),
                      [self = shared_from_this(), c](const boost::system::error_code&,
                                                     std::size_t) { self->close(c); });
  }

  void close(const std::shared_ptr<Connection>& c) {
    boost::system::error_code ignored;
    c->socket.close(ignored);
    open.remove(c);
  }

  void stop() {
    accepting = false;
    boost::system::error_code ignored;
    if (acceptor) acceptor->cancel(ignored);
    while (!open.empty()) close(open.front());
  }
};

StacksChannel::StacksChannel(boost::asio::io_context& io, const std::string& dir,
                             const std::string& run_id, OnRequest on_request)
    : impl_(std::make_shared<Impl>(io, std::move(on_request))) {
  impl_->bind(dir, run_id);
}

StacksChannel::~StacksChannel() {
  impl_->stop();
  if (!impl_->acceptor) return;
  boost::system::error_code ignored;
  impl_->acceptor->close(ignored);
  // Only our own socket: the path may have been removed and reused since.
  struct stat now {};
  if (::lstat(impl_->path.c_str(), &now) == 0 && now.st_dev == impl_->bound.st_dev &&
      now.st_ino == impl_->bound.st_ino) {
    ::unlink(impl_->path.c_str());
  }
}

const std::string& StacksChannel::problem() const { return impl_->problem; }
bool StacksChannel::folder_refused() const { return impl_->folder_refused; }
const std::string& StacksChannel::path() const { return impl_->path; }

void StacksChannel::start() {
  if (!impl_->acceptor || impl_->accepting) return;
  impl_->accepting = true;
  impl_->accept_next();
}

void StacksChannel::stop() { impl_->stop(); }

}  // namespace xlaunch::diagnose
