#pragma once

#include <stdexcept>
#include <string>

namespace xlaunch::rendezvous {

/// Any store failure: connect, I/O, timeout, protocol. The message names the address,
/// the operation, the attempt count where relevant, and the cause.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// ListeningSocket::bind: the address is in use (EADDRINUSE), e.g. by another launcher's
/// store.
class AddressInUse : public StoreError {
 public:
  using StoreError::StoreError;
};

/// A blocking call ran past its timeout.
class StoreTimeout : public StoreError {
 public:
  using StoreError::StoreError;
};

}  // namespace xlaunch::rendezvous
