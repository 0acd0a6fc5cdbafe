// StoreServer's public face: starting and stopping the loop's thread, and what other
// threads may ask of it (clear, clients, counters). The loop itself: server_core.hpp.
#include <fmt/core.h>

#include <future>
#include <memory>

#include "rendezvous/server_core.hpp"

namespace xlaunch::rendezvous {
namespace asio = boost::asio;

struct StoreServer::Impl : ServerCore {
  using ServerCore::ServerCore;
};

StoreServer::StoreServer(ListeningSocket socket, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(socket), std::move(options))) {}

StoreServer::~StoreServer() { stop(); }

void StoreServer::start() {
  if (impl_->thread.joinable() || impl_->stopped) return;
  raise_open_file_limit();
  impl_->accept();
  impl_->wait_ready();
  impl_->thread = std::thread([impl = impl_.get()] {
    for (;;) {
      try {
        impl->io.run();
        return;
      } catch (const std::exception& e) {
        // One request's failure (e.g. out of memory) must not end the store.
        impl->log(fmt::format("internal error, continuing: {}", e.what()));
      }
    }
  });
}

void StoreServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // The loop is stopped, so this thread may now touch what it owned.
  impl_->close_all();
}

void StoreServer::clear(const std::string& keep_prefix) {
  if (!impl_->thread.joinable() || impl_->stopped) {
    impl_->clear_now(keep_prefix);
    return;
  }
  std::promise<void> done;
  asio::post(impl_->io, [&] {
    impl_->clear_now(keep_prefix);
    done.set_value();
  });
  done.get_future().wait();
}

std::vector<StoreServer::ClientInfo> StoreServer::clients() const {
  auto collect = [core = impl_.get()] {
    std::vector<ClientInfo> out;
    std::unordered_map<ConnId, std::vector<std::string>> waiting;
    for (auto& [conn, keys] : core->state.waiting()) waiting[conn] = std::move(keys);
    for (const auto& [id, c] : core->conns) {
      ClientInfo info{c.peer_addr, c.peer_port, c.requests, {}};
      if (auto w = waiting.find(id); w != waiting.end()) info.waiting = std::move(w->second);
      out.push_back(std::move(info));
    }
    return out;
  };
  if (!impl_->thread.joinable() || impl_->stopped) return collect();
  std::promise<std::vector<ClientInfo>> done;
  asio::post(impl_->io, [&] {
    // An exception (out of memory) must reach the caller, not leave it waiting forever.
    try {
      done.set_value(collect());
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  return done.get_future().get();
}

std::uint16_t StoreServer::port() const { return impl_->port; }

std::size_t StoreServer::num_keys() const { return impl_->num_keys.load(); }

std::size_t StoreServer::num_parked() const { return impl_->num_parked.load(); }

std::size_t StoreServer::num_connections() const { return impl_->num_conns.load(); }

std::size_t StoreServer::buffered_bytes() const { return impl_->num_buffered.load(); }

std::size_t StoreServer::unsent_bytes() const { return impl_->num_unsent.load(); }

}  // namespace xlaunch::rendezvous
