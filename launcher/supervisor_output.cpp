// One attempt's output: each worker's pipes, cut into lines for its log file and the console.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <system_error>

#include "launcher/prefix_lines.hpp"
#include "launcher/supervisor_impl.hpp"

namespace xlaunch::launcher {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
}  // namespace

void Supervisor::Impl::read_more(Worker& worker, Stream& stream) {
  stream.pipe->async_read_some(
      asio::buffer(stream.buffer.get(), kReadChunk),
      [this, &worker, &stream](const boost::system::error_code& ec, std::size_t n) {
        // Closed meanwhile: a read that completed just before the drain grace ran out.
        if (!stream.pipe) return;
        if (n > 0) on_bytes(worker, stream, std::string_view(stream.buffer.get(), n));
        if (ec) {
          close_stream(worker, stream);
        } else {
          read_more(worker, stream);
        }
      });
}

// A failed write (a full disk, a file size limit) stops the rank's log where it is, and says
// so once: on the console now, in xlaunch.log and summary.json at the end (job/finish.cpp). The
// output still reaches the console; a later write might land after a gap, so none is tried.
void Supervisor::Impl::log_bytes(Worker& worker, Stream& stream, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(stream.log_fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const LogCut cut{worker.outcome.rank, attempt, stream.log_path, stream.logged,
                       n < 0 ? std::strerror(errno) : "nothing written"};
      say("xlaunch: warning: {}\n", describe_log_cut(cut));
      log_cuts.push_back(cut);  // xlaunch.log gets it at the end, when there may be room again
      close_fd(stream.log_fd);
      stream.shown = true;  // a stream kept off the console (--redirects) would be lost
      return;
    }
    stream.logged += static_cast<std::uint64_t>(n);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Per read, not per line: a chatty rank writes millions of short lines, and anything done
// for each (a clock read, a lock, a system call) is what slows it down.
void Supervisor::Impl::on_bytes(Worker& worker, Stream& stream, std::string_view bytes) {
  if (stream.log_fd >= 0) log_bytes(worker, stream, bytes);
  start_batch(bytes);
  // Every piece ends with a byte of the read, or is a cut of a long line, or the flush.
  const std::size_t text_bytes = stream.splitter.partial_size() + bytes.size();
  if (stream.shown) console_batch.reserve(text_bytes, text_bytes + 1, worker.prefix.size());
  auto to_pieces = [&](std::string_view text, char terminator) {
    on_piece(worker, stream, text, terminator);
  };
  if (stream.shown && !stream.is_stderr) {
    // A chatty rank's plain lines in one pass (prefix_lines.hpp).
    feed_shown(stream.splitter, console_batch, worker.prefix, bytes, to_pieces,
               [&](const PrefixedLines& plain) {
                 batch_lines += plain.lines;
                 if (!plain.last_text.empty()) batch_last_line = plain.last_text;
                 stream.bar_open = false;
               });
  } else {
    stream.splitter.feed(bytes, to_pieces);
  }
  end_batch(worker, stream);
}

void Supervisor::Impl::start_batch(std::string_view bytes) {
  batch_time = Clock::now();
  batch_lines = 0;
  batch_bytes = bytes;
  batch_last_line = {};
  batch_tail_count = 0;
  console_batch.clear();
}

void Supervisor::Impl::push_stderr_line(Worker& worker, std::string_view line) {
  worker.stderr_tail.emplace_back(line);
  if (worker.stderr_tail.size() > kStderrTailLines) worker.stderr_tail.pop_front();
}

void Supervisor::Impl::keep_stderr_tail(Worker& worker) {
  const std::size_t n = std::min(batch_tail_count, batch_tail.size());
  for (std::size_t i = batch_tail_count - n; i < batch_tail_count; ++i)
    push_stderr_line(worker, batch_tail[i % batch_tail.size()]);
  batch_tail_count = 0;
}

void Supervisor::Impl::end_batch(Worker& worker, Stream& stream) {
  keep_stderr_tail(worker);
  if (batch_lines > 0) {
    activity.note(attempt, worker.outcome.rank, batch_time, batch_lines);
    if (monitor)
      monitor->on_output(worker.outcome.local_rank, batch_lines, batch_last_line, batch_time);
  }
  // One queueing of the read's lines, then one write of what the console takes now.
  if (!console_batch.empty()) console_worker_text(stream.console, console_batch.view());
  console_flush_now();
  arm_console();
}

void Supervisor::Impl::on_piece(Worker& worker, Stream& stream, std::string_view text,
                                char terminator) {
  if (text.empty() && terminator == '\r') return;  // tqdm starts each redraw with '\r'
  ++batch_lines;
  // A piece that is not a view of the read (a line that spanned reads) lives in the
  // splitter's buffer, which the next piece overwrites: keep a copy.
  const std::less_equal<const char*> before_or_at;
  const bool in_read =
      !batch_bytes.empty() && before_or_at(batch_bytes.data(), text.data()) &&
      before_or_at(text.data() + text.size(), batch_bytes.data() + batch_bytes.size());
  if (!text.empty()) {
    if (in_read) {
      batch_last_line = text;
    } else {
      batch_last_copy.assign(text.substr(0, 300));
      batch_last_line = batch_last_copy;
    }
  }
  if (stream.is_stderr && !text.empty()) {
    if (in_read) {
      // Copied at the end of the read, the last kStderrTailLines only: no allocation per line.
      batch_tail[batch_tail_count++ % batch_tail.size()] = text;
    } else {
      keep_stderr_tail(worker);
      push_stderr_line(worker, text);
    }
  }
  if (!stream.shown) return;
  console_batch.add(worker.prefix, text, terminator);
  stream.bar_open = terminator == '\r';
}

void Supervisor::Impl::arm_console() {
  if (attempt_done) return;
  for (ConsoleStream stream : {ConsoleStream::out, ConsoleStream::err}) {
    const int i = static_cast<int>(stream);
    if (console_armed[i]) continue;
    const int fd = console_wait_fd(stream);
    if (fd < 0) continue;
    if (!console_waiters[i]) {
      const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (own < 0) continue;
      console_waiters[i] = std::make_unique<asio::posix::stream_descriptor>(io, own);
    }
    console_armed[i] = true;
    console_waiters[i]->async_wait(asio::posix::descriptor_base::wait_write,
                                   [this, i](const boost::system::error_code& ec) {
                                     console_armed[i] = false;
                                     if (ec) return;
                                     console_flush_now();
                                     arm_console();
                                   });
  }
}

void Supervisor::Impl::close_stream(Worker& worker, Stream& stream) {
  if (!stream.pipe) return;
  start_batch({});
  stream.splitter.flush(
      [&](std::string_view text, char terminator) { on_piece(worker, stream, text, terminator); });
  // A progress bar's last redraw stays on screen, and the next line starts below it.
  if (stream.bar_open) console_batch.add_newline();
  end_batch(worker, stream);
  stream.pipe.reset();
  close_fd(stream.log_fd);
  if (!worker.running && worker.drained()) finish_worker(worker);
}

void Supervisor::Impl::stop_reading_later(Worker& worker, bool say_why) {
  if (worker.drained()) return;
  worker.drain_timer->expires_after(kDrainGrace);
  worker.drain_timer->async_wait([this, &worker, say_why](const boost::system::error_code& ec) {
    if (ec) return;
    if (say_why) {
      files.log(
          fmt::format("rank {}: its output pipes were still open {}s after it exited "
                      "(held by a descendant); stopped reading them",
                      worker.outcome.rank, kDrainGrace.count()));
    }
    close_stream(worker, worker.out);
    close_stream(worker, worker.err);
  });
}

// Logging trouble (a full disk, a file where the attempt's folder goes) costs the rank its
// log file, not its run or a restart: its output goes to the console only, as after a log
// cut. The first such log of an attempt is said at once, all of them at the end (log_cuts).
void Supervisor::Impl::log_not_made(int rank, Stream& stream, const std::string& why) {
  log_cuts.push_back(LogCut{rank, attempt, stream.log_path, 0, why});
  stream.shown = true;  // a stream kept off the console (--redirects) would be lost
  if (unmade_log_said) return;
  unmade_log_said = true;
  say("xlaunch: warning: {}; attempt {}'s ranks whose log files cannot be made run with their "
      "output on the console only (summary.json's log_cuts lists them)\n",
      why, attempt);
}

void Supervisor::Impl::open_stream(Stream& stream, int rank_index,
                                   const RunFiles::RankFiles& rank_files, bool is_stderr,
                                   Pipe& pipe) {
  stream.is_stderr = is_stderr;
  stream.console = is_stderr ? ConsoleStream::err : ConsoleStream::out;
  const bool rank_shown = !plan.console_ranks || plan.console_ranks->contains(rank_index);
  const auto& streams = plan.console_streams[rank_index];
  stream.shown = rank_shown && (is_stderr ? streams.stderr_shown : streams.stdout_shown);
  const char* name = is_stderr ? "stderr.log" : "stdout.log";
  const std::string& log_dir = rank_files.log_dir;
  stream.log_path = log_dir.empty() ? "" : fmt::format("{}/{}", log_dir, name);
  stream.log_fd = -1;
  stream.logged = 0;
  const int rank = plan.rank_offset + rank_index;
  if (!rank_files.log_error.empty()) {
    log_not_made(rank, stream, rank_files.log_error);
  } else {
    try {
      stream.log_fd = files.open_stream_log(log_dir, name);
    } catch (const std::system_error& e) {
      log_not_made(rank, stream, e.what());
    }
  }
  if (!stream.buffer) stream.buffer = std::make_unique_for_overwrite<char[]>(kReadChunk);
  stream.pipe = std::make_unique<asio::posix::stream_descriptor>(io, pipe.read_fd);
  pipe.read_fd = -1;
}

}  // namespace xlaunch::launcher
