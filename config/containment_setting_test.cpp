#include "config/containment_setting.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch::config;

namespace {

ContainmentRequest request_for(std::optional<std::string> value) {
  return containment_request([&](const std::string& name) -> std::optional<std::string> {
    if (name != "XLAUNCH_CONTAINMENT") return std::nullopt;
    return value;
  });
}

}  // namespace

TEST_CASE("XLAUNCH_CONTAINMENT: unset, empty or auto chooses, a mechanism's name forces it",
          "[containment]") {
  CHECK(request_for(std::nullopt) == ContainmentRequest::Auto);
  CHECK(request_for("") == ContainmentRequest::Auto);
  CHECK(request_for("auto") == ContainmentRequest::Auto);
  CHECK(request_for("cgroup") == ContainmentRequest::Cgroup);
  CHECK(request_for("pidns") == ContainmentRequest::PidNamespace);
  CHECK(request_for("group") == ContainmentRequest::ProcessGroup);
}

TEST_CASE("XLAUNCH_CONTAINMENT: any other value is a usage error naming it", "[containment]") {
  try {
    request_for("namespace");
    FAIL("accepted a bad value");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()) == "XLAUNCH_CONTAINMENT=namespace: not a containment mechanism");
    CHECK(e.hint() == "use auto (the default), cgroup, pidns or group");
  }
}
