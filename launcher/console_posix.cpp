#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>

#include "launcher/console.hpp"
#include "launcher/console_buffer.hpp"

namespace xlaunch::launcher {
namespace {

// How a console descriptor can be written without blocking.
enum class WriteMode {
  plain,         // a regular file or block device: writes do not wait on a reader
  own_nonblock,  // a pipe, FIFO or terminal reopened through /proc as our own O_NONBLOCK
                 // description (setting O_NONBLOCK on fd 1 itself would change it for the
                 // shell and every other process sharing it)
  send,          // a socket: send(MSG_DONTWAIT)
  poll_first,    // no reopen possible: write at most PIPE_BUF bytes after poll says ready
  none,          // not open
};

struct Channel {
  int fd = -1;
  WriteMode mode = WriteMode::none;
  ConsoleBuffer buffer;
};

void open_channel(Channel& channel, int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    channel.buffer.close();
    return;
  }
  channel.fd = fd;
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    channel.mode = WriteMode::plain;
  } else if (S_ISSOCK(st.st_mode)) {
    channel.mode = WriteMode::send;
  } else {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    int own = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (own >= 0) {
      channel.fd = own;
      channel.mode = WriteMode::own_nonblock;
    } else if (errno == ENXIO) {
      channel.buffer.close();  // a pipe whose reader is already gone
    } else {
      channel.mode = WriteMode::poll_first;
    }
  }
}

bool same_file(int a, int b) {
  struct stat sa {};
  struct stat sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino && sa.st_rdev == sb.st_rdev;
}

class Console {
 public:
  Console() {
    open_channel(channels_[0], 1);
    // `2>&1` and a terminal: one queue for both, so that a partial write of one stream's
    // line is never interleaved with the other's, and their order is kept.
    if (same_file(1, 2)) {
      route_[1] = &channels_[0];
      channels_[1].buffer.close();
    } else {
      open_channel(channels_[1], 2);
    }
  }

  void add(ConsoleStream stream, std::string_view text, bool own) {
    std::function<void()> notify;
    {
      std::lock_guard lock(mutex_);
      Channel& channel = *route_[static_cast<int>(stream)];
      if (own) {
        channel.buffer.add_own_text(text);
        if (write_some(channel)) notify = notify_;
      } else {
        // One read's lines at once: one system call per read, not one per line (which cost
        // 5/6 of the console's throughput, and a failing write per line when the console
        // lags). Straight from the caller's batch when nothing waits, saving a copy.
        if (channel.buffer.pending().empty() && !channel.buffer.closed()) {
          const ssize_t n = write_once(channel, text);
          if (n < 0) channel.buffer.close();  // EPIPE and the like: the job goes on
          if (n > 0) text.remove_prefix(static_cast<std::size_t>(n));
        }
        channel.buffer.add_worker_text(text);
      }
    }
    if (notify) notify();
  }

  bool flush_now() {
    std::lock_guard lock(mutex_);
    bool left = false;
    for (Channel& channel : channels_) left = write_some(channel) || left;
    return left;
  }

  int wait_fd(ConsoleStream stream) {
    std::lock_guard lock(mutex_);
    const Channel& channel = channels_[static_cast<int>(stream)];
    if (&channel != route_[static_cast<int>(stream)]) return -1;  // shares the other's queue
    if (channel.buffer.pending().empty() || channel.mode == WriteMode::plain) return -1;
    return channel.fd;
  }

  void on_backlog(std::function<void()> notify) {
    std::lock_guard lock(mutex_);
    notify_ = std::move(notify);
  }

  void drain(std::chrono::milliseconds limit) {
    // Once a console made the launcher wait in vain, it is not waited for again.
    if (gave_up_) limit = std::chrono::milliseconds(0);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (flush_now()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        gave_up_ = true;
        break;
      }
      pollfd fds[2];
      nfds_t n = 0;
      for (ConsoleStream s : {ConsoleStream::out, ConsoleStream::err}) {
        int fd = wait_fd(s);
        if (fd >= 0) fds[n++] = pollfd{fd, POLLOUT, 0};
      }
      if (n == 0) break;
      ::poll(fds, n, static_cast<int>(left.count()));
    }
  }

  ConsoleStats stats() {
    std::lock_guard lock(mutex_);
    ConsoleStats s;
    for (const Channel& channel : channels_) {
      if (route_[1] != &channels_[1] && &channel == &channels_[1]) continue;
      s.dropped_lines +=
          channel.buffer.dropped_lines_total() + count_lines(channel.buffer.pending());
      s.lost_lines += channel.buffer.lost_lines_total();
    }
    s.out_closed = route_[0]->buffer.closed();
    s.err_closed = route_[1]->buffer.closed();
    return s;
  }

 private:
  // One write of `bytes` the channel's way: the bytes taken, 0 when it takes none now, -1
  // when the console is gone.
  static ssize_t write_once(Channel& channel, std::string_view bytes) {
    while (true) {
      ssize_t n = -1;
      switch (channel.mode) {
        case WriteMode::plain:
        case WriteMode::own_nonblock:
          n = ::write(channel.fd, bytes.data(), bytes.size());
          break;
        case WriteMode::send:
          n = ::send(channel.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
          break;
        case WriteMode::poll_first: {
          pollfd p{channel.fd, POLLOUT, 0};
          if (::poll(&p, 1, 0) != 1) return 0;
          if ((p.revents & POLLOUT) == 0) return -1;  // POLLERR / POLLHUP: the reader is gone
          n = ::write(channel.fd, bytes.data(), std::min<std::size_t>(bytes.size(), PIPE_BUF));
          break;
        }
        case WriteMode::none:
          return -1;
      }
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return -1;  // EPIPE and the like
    }
  }

  // Writes what the descriptor takes now; true when bytes remain queued.
  static bool write_some(Channel& channel) {
    ConsoleBuffer& buffer = channel.buffer;
    while (!buffer.pending().empty()) {
      const ssize_t n = write_once(channel, buffer.pending());
      if (n < 0) {
        buffer.close();  // the console is gone; the job goes on
        return false;
      }
      if (n == 0) return true;
      buffer.consume(static_cast<std::size_t>(n));
      buffer.note_drops_if_any();
    }
    return false;
  }

  std::mutex mutex_;
  Channel channels_[2];
  Channel* route_[2] = {&channels_[0], &channels_[1]};
  std::function<void()> notify_;
  std::atomic<bool> gave_up_ = false;
};

Console& console() {
  static Console instance;
  return instance;
}

}  // namespace

void console_worker_text(ConsoleStream stream, std::string_view lines) {
  console().add(stream, lines, false);
}

void console_say(std::string_view text) { console().add(ConsoleStream::err, text, true); }

bool console_flush_now() { return console().flush_now(); }

int console_wait_fd(ConsoleStream stream) { return console().wait_fd(stream); }

void console_on_backlog(std::function<void()> notify) { console().on_backlog(std::move(notify)); }

void console_drain(std::chrono::milliseconds limit) { console().drain(limit); }

ConsoleStats console_stats() { return console().stats(); }

}  // namespace xlaunch::launcher
