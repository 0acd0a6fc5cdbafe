#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iterator>
#include <system_error>

#include "config/terminal.hpp"

namespace xlaunch::config {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;  // the signal that arrived, 0 for none

void on_stop_signal(int signal) { g_interrupted = signal; }

// Ctrl-C, and the signals that end a terminal session or a job (kill, a closed window): each
// must leave the wizard through its destructors, so raw mode is undone and no file half-written.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/// While alive, those signals only set a flag; without SA_RESTART they also make a blocked
/// read() return EINTR, so the wizard notices at once and can leave the config file untouched.
class SigintGuard {
 public:
  SigintGuard() {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
      ::sigaction(kStopSignals[i], &action, &saved_[i]);
    }
  }
  ~SigintGuard() {
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
      ::sigaction(kStopSignals[i], &saved_[i], nullptr);
    }
  }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  struct sigaction saved_[std::size(kStopSignals)]{};
};

/// One byte from stdin: nullopt at end of input; throws Interrupted after a stop signal.
std::optional<char> read_byte() {
  for (;;) {
    if (g_interrupted) throw Interrupted(g_interrupted);
    char c = 0;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    // A signal that raced with the read (e.g. input closed right after Ctrl-C) still wins.
    if (g_interrupted) throw Interrupted(g_interrupted);
    if (n == 1) return c;
    if (n == 0) return std::nullopt;
    if (errno == EINTR) continue;
    throw std::system_error(errno, std::generic_category(), "cannot read the terminal");
  }
}

void write_all(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // output gone (closed pipe): answers can still be read
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

/// Piped or redirected input: one answer per line. Answers are echoed when stdin is not a
/// terminal, so a transcript shows what was answered.
class LineTerminal : public Terminal {
 public:
  bool interactive() const override { return false; }
  void write(std::string_view text) override { write_all(text); }
  std::optional<std::string> read_line() override {
    std::string line;
    for (;;) {
      const auto c = read_byte();
      if (!c) {
        if (line.empty()) return std::nullopt;
        break;  // a last line without newline still counts
      }
      if (*c == '\n') break;
      line += *c;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!stdin_is_tty_) write_all(line + "\n");
    return line;
  }
  Key read_key() override { return {Key::EndOfInput}; }

 private:
  SigintGuard guard_;
  bool stdin_is_tty_ = ::isatty(STDIN_FILENO) == 1;
};

/// A real terminal in raw mode (no echo, no line buffering, no signal keys) so arrow keys
/// and Ctrl-C arrive as bytes. Output processing stays on, so "\n" still starts a new line.
class RawTerminal : public Terminal {
 public:
  RawTerminal() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) {
      throw std::system_error(errno, std::generic_category(), "cannot read terminal settings");
    }
    struct termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO | ISIG | IEXTEN));
    raw.c_iflag &= static_cast<tcflag_t>(~(IXON | ICRNL));
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (::tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) {
      throw std::system_error(errno, std::generic_category(), "cannot set terminal raw mode");
    }
  }
  ~RawTerminal() override { ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_); }

  bool interactive() const override { return true; }
  void write(std::string_view text) override { write_all(text); }
  std::optional<std::string> read_line() override { return std::nullopt; }

  Key read_key() override {
    const auto c = read_byte();
    if (!c) return {Key::EndOfInput};
    switch (*c) {
      case '\r':
      case '\n':
        return {Key::Enter};
      case 0x03:
        return {Key::Interrupt};  // Ctrl-C
      case 0x04:
        return {Key::EndOfInput};  // Ctrl-D
      case 0x7f:
      case 0x08:
        return {Key::Backspace};
      case 0x1b:
        return read_escape();
      default:
        return {Key::Char, *c};
    }
  }

 private:
  /// ESC [ A / ESC O A (up), B (down); a lone ESC or other sequences are ignored.
  Key read_escape() {
    if (!byte_ready()) return {Key::Other};
    const auto introducer = read_byte();
    if (!introducer || (*introducer != '[' && *introducer != 'O')) return {Key::Other};
    std::optional<char> final_byte;
    // Skip parameters ("1;5A" from Ctrl+arrow) up to the final byte.
    do {
      if (!byte_ready()) return {Key::Other};
      final_byte = read_byte();
    } while (final_byte &&
             (std::isdigit(static_cast<unsigned char>(*final_byte)) || *final_byte == ';'));
    if (final_byte == 'A') return {Key::Up};
    if (final_byte == 'B') return {Key::Down};
    return {Key::Other};
  }

  /// Escape sequences arrive in one burst; a short wait tells them from a lone ESC.
  static bool byte_ready() {
    struct pollfd pfd {
      STDIN_FILENO, POLLIN, 0
    };
    return ::poll(&pfd, 1, 50) == 1;
  }

  SigintGuard guard_;
  struct termios saved_ {};
};

}  // namespace

std::unique_ptr<Terminal> make_stdio_terminal() {
  // A closed output (`xlaunch config | head -1`) must not end the wizard by SIGPIPE:
  // write_all goes on, and the answers can still be read. The wizard starts no process.
  ::signal(SIGPIPE, SIG_IGN);
  if (::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1) {
    return std::make_unique<RawTerminal>();
  }
  return std::make_unique<LineTerminal>();
}

}  // namespace xlaunch::config
