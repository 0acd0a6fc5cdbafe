// The launcher's end of `xlaunch stacks` (stacks_registry.hpp): a Unix socket in the private
// runtime folder, served on the supervisor's event loop while an attempt runs. A request is
// the line "stacks"; the answer is "<length>\n<text>", then the connection closes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

namespace xlaunch::diagnose {

class StacksChannel {
 public:
  /// Answers one request; may be called later, from the loop.
  using Reply = std::function<void(std::string text)>;
  using OnRequest = std::function<void(Reply reply)>;

  /// Binds <dir>/<run_id>.sock (stacks_registry.hpp). When it cannot, problem() says why
  /// and nothing listens; the job runs on.
  StacksChannel(boost::asio::io_context& io, const std::string& dir, const std::string& run_id,
                OnRequest on_request);
  /// Closes every connection and removes the socket (when it is still this one's).
  ~StacksChannel();
  StacksChannel(const StacksChannel&) = delete;
  StacksChannel& operator=(const StacksChannel&) = delete;

  /// Why nothing listens ("" when it does), and whether the folder itself was refused (which
  /// the user should hear of) rather than, say, taken by another launcher of the same run.
  const std::string& problem() const;
  bool folder_refused() const;
  /// The socket's path ("" when nothing listens).
  const std::string& path() const;

  /// Accepts requests (each attempt); stop() closes those not answered yet, so that the
  /// attempt's loop can end.
  void start();
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace xlaunch::diagnose
