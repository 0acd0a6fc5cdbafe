#include "launcher/containment.hpp"

#include <fmt/format.h>

#include "config/usage_error.hpp"

namespace xlaunch::launcher {
namespace {

std::string_view request_name(ContainmentRequest request) {
  switch (request) {
    case ContainmentRequest::Cgroup:
      return "cgroup";
    case ContainmentRequest::PidNamespace:
      return "pidns";
    case ContainmentRequest::ProcessGroup:
      return "group";
    case ContainmentRequest::Auto:
      break;
  }
  return "auto";
}

const ContainmentProbe* find_probe(const std::vector<ContainmentProbe>& probes,
                                   Containment mechanism) {
  for (const ContainmentProbe& probe : probes) {
    if (probe.mechanism == mechanism) return &probe;
  }
  return nullptr;
}

std::string why_not(const std::vector<ContainmentProbe>& probes, Containment mechanism) {
  const ContainmentProbe* probe = find_probe(probes, mechanism);
  if (probe == nullptr) return "not tried";
  return probe->works ? "available" : probe->detail;
}

// Splits on `separator`, keeping empty pieces.
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  while (true) {
    std::size_t at = text.find(separator);
    pieces.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return pieces;
    text.remove_prefix(at + 1);
  }
}

// mountinfo writes space, tab, newline and backslash as \ooo (octal).
std::string unescape_octal(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    auto octal = [&](std::size_t k) { return field[k] >= '0' && field[k] <= '7'; };
    if (field[i] == '\\' && i + 3 < field.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                               (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

}  // namespace

std::string_view to_string(Containment mechanism) {
  switch (mechanism) {
    case Containment::Cgroup:
      return "cgroup";
    case Containment::PidNamespace:
      return "pid-namespace";
    case Containment::ProcessGroup:
      break;
  }
  return "process-group";
}

std::vector<Containment> containment_candidates(ContainmentRequest request) {
  switch (request) {
    case ContainmentRequest::Cgroup:
      return {Containment::Cgroup};
    case ContainmentRequest::PidNamespace:
      return {Containment::PidNamespace};
    case ContainmentRequest::ProcessGroup:
      return {Containment::ProcessGroup};
    case ContainmentRequest::Auto:
      break;
  }
  return {Containment::Cgroup, Containment::PidNamespace, Containment::ProcessGroup};
}

std::optional<std::string> cgroup2_path(std::string_view proc_self_cgroup) {
  for (std::string_view line : split(proc_self_cgroup, '\n')) {
    // "hierarchy-ID:controllers:path"; v2 is hierarchy 0 with no controllers. The path
    // itself may contain ':'.
    if (line.substr(0, 3) == "0::" && line.size() > 3 && line[3] == '/') {
      return std::string(line.substr(3));
    }
  }
  return std::nullopt;
}

std::optional<MountInfo> parse_mountinfo_line(std::string_view line) {
  // id parent major:minor root mount-point options [optional fields...] - type source super
  std::vector<std::string_view> fields;
  for (std::string_view field : split(line, ' ')) {
    if (!field.empty()) fields.push_back(field);
  }
  if (fields.size() < 7) return std::nullopt;
  for (std::size_t i = 6; i + 1 < fields.size(); ++i) {
    if (fields[i] == "-") {
      return MountInfo{unescape_octal(fields[3]), unescape_octal(fields[4]),
                       std::string(fields[i + 1])};
    }
  }
  return std::nullopt;
}

std::optional<std::string> cgroup_directory(std::string_view mountinfo, std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  for (std::string_view piece : split(path, '/')) {
    if (piece == "..") return std::nullopt;  // outside this cgroup namespace's root
  }
  for (std::string_view line : split(mountinfo, '\n')) {
    std::optional<MountInfo> mount = parse_mountinfo_line(line);
    if (!mount || mount->fs_type != "cgroup2") continue;
    std::string_view root = mount->root;
    if (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
    std::string_view rest = path;
    if (root != "/") {
      if (path.substr(0, root.size()) != root) continue;
      rest = path.substr(root.size());
      if (!rest.empty() && rest.front() != '/') continue;  // "/a" does not contain "/ab"
    }
    if (rest == "/") rest = {};
    return mount->mount_point + std::string(rest);
  }
  return std::nullopt;
}

std::string run_cgroup_name(long launcher_pid, unsigned long long random) {
  return fmt::format("xlaunch-{}-{:08x}", launcher_pid, random & 0xffffffffull);
}

std::optional<Containment> choose_containment(ContainmentRequest request,
                                              const std::vector<ContainmentProbe>& probes) {
  for (Containment mechanism : containment_candidates(request)) {
    if (mechanism == Containment::ProcessGroup) return mechanism;  // needs nothing
    const ContainmentProbe* probe = find_probe(probes, mechanism);
    if (probe != nullptr && probe->works) return mechanism;
  }
  return std::nullopt;
}

std::string unavailable_message(ContainmentRequest request,
                                const std::vector<ContainmentProbe>& probes) {
  Containment wanted = containment_candidates(request).front();
  return fmt::format("{}={}, but {} containment is not possible here: {}", kContainmentVariable,
                     request_name(request), to_string(wanted), why_not(probes, wanted));
}

std::string fallback_note(const std::vector<ContainmentProbe>& probes) {
  return fmt::format(
      "orphan containment falls back to process groups (cgroup: {}; pid-namespace: {}): a "
      "descendant that leaves its worker's process group can outlive a SIGKILLed launcher",
      why_not(probes, Containment::Cgroup), why_not(probes, Containment::PidNamespace));
}

std::string describe_containment(ContainmentRequest request,
                                 const std::vector<ContainmentProbe>& probes) {
  std::optional<Containment> chosen = choose_containment(request, probes);
  if (!chosen) {
    return fmt::format("none: {} (xlaunch launch exits 2)", unavailable_message(request, probes));
  }
  std::string text(to_string(*chosen));
  if (*chosen == Containment::Cgroup) {
    text += fmt::format(" under {}", find_probe(probes, Containment::Cgroup)->detail);
  }
  text += fmt::format(" ({}={}", kContainmentVariable, request_name(request));
  // Why not the better ones (auto), or what else would work.
  for (Containment other : {Containment::Cgroup, Containment::PidNamespace}) {
    if (other == *chosen) continue;
    if (find_probe(probes, other) == nullptr) continue;
    text += fmt::format("; {}: {}", to_string(other), why_not(probes, other));
  }
  return text + ")";
}

}  // namespace xlaunch::launcher
