// The wizard's view of the user's terminal, so its question flow is testable with a fake.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace xlaunch::config {

/// One key press in interactive mode.
struct Key {
  enum Kind { Char, Up, Down, Enter, Backspace, Interrupt, EndOfInput, Other };
  Kind kind = Other;
  char ch = 0;  ///< the character, for Char
};

/// The user pressed Ctrl-C (or the process got SIGINT, SIGTERM, SIGHUP or SIGQUIT) while the
/// wizard waited for input.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal = 2) : std::runtime_error("interrupted"), signal_(signal) {}
  /// The signal's number (2 for Ctrl-C), for an exit status of 128 + it.
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// Input ended before the wizard had every answer.
class EndOfInput : public std::runtime_error {
 public:
  EndOfInput() : std::runtime_error("end of input") {}
};

/// Where questions go and answers come from. Not thread-safe; one wizard at a time.
class Terminal {
 public:
  virtual ~Terminal() = default;
  /// True for a real terminal: menus take arrow keys and are redrawn in place, and colour and
  /// cursor codes may be written. False: line mode, plain text, one answer per line.
  virtual bool interactive() const = 0;
  /// Writes text as is.
  virtual void write(std::string_view text) = 0;
  /// Line mode: the next line without its newline; nullopt at end of input. Blocks.
  /// Throws Interrupted on SIGINT.
  virtual std::optional<std::string> read_line() = 0;
  /// Interactive mode: the next key press. Blocks.
  virtual Key read_key() = 0;
};

/// The process's stdin/stdout: interactive (raw mode, restored on destruction) when both are
/// terminals, line mode otherwise. While it lives, SIGINT (SIGTERM, SIGHUP, SIGQUIT) makes reads
/// throw Interrupted instead of killing the process, so the caller can restore the terminal and
/// exit cleanly with 128 + the signal (130 for Ctrl-C).
std::unique_ptr<Terminal> make_stdio_terminal();

}  // namespace xlaunch::config
