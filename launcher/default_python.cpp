// The pure part of default_python.hpp: where xlaunch was found, and which python3 that means.
#include "launcher/default_python.hpp"

#include <string_view>

namespace xlaunch::launcher {
namespace {

std::string parent_of(const std::string& folder) {
  std::string_view trimmed = folder;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  const std::size_t slash = trimmed.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? "/" : std::string(trimmed.substr(0, slash));
}

std::string join(const std::string& folder, std::string_view name) {
  return folder.ends_with('/') ? folder + std::string(name) : folder + "/" + std::string(name);
}

}  // namespace

std::string python_beside(const std::string& folder,
                          const std::function<bool(const std::string&)>& exists,
                          const std::function<bool(const std::string&)>& is_program) {
  if (folder.empty()) return "python3";
  const std::string environment = parent_of(folder);
  const bool is_environment =
      exists(join(environment, "pyvenv.cfg")) || exists(join(environment, "conda-meta"));
  const std::string python = join(folder, "python3");
  return is_environment && is_program(python) ? python : "python3";
}

std::string invoked_folder(const std::string& argv0, const std::string& path,
                           const std::string& working_folder,
                           const std::function<bool(const std::string&)>& is_program) {
  if (argv0.empty()) return "";
  if (const std::size_t slash = argv0.rfind('/'); slash != std::string::npos) {
    const std::string folder = slash == 0 ? "/" : argv0.substr(0, slash);
    return folder.starts_with('/') ? folder : join(working_folder, folder);
  }
  std::string_view rest = path;
  while (true) {
    const std::size_t colon = rest.find(':');
    std::string folder(rest.substr(0, colon));
    // POSIX: an empty entry is the working folder.
    if (folder.empty() || folder == ".") {
      folder = working_folder;
    } else if (!folder.starts_with('/')) {
      folder = join(working_folder, folder);
    }
    if (is_program(join(folder, argv0))) return folder;
    if (colon == std::string_view::npos) return "";
    rest.remove_prefix(colon + 1);
  }
}

}  // namespace xlaunch::launcher
