# fmt and yaml-cpp as static libraries, for an xlaunch that links its C++ runtime in
# (XLAUNCH_STATIC_RUNTIME, and the self-contained XLAUNCH_STATIC): `fmt::fmt` and `yaml-cpp`
# mean fmt compiled from Debian's headers into a static library (Debian ships no libfmt.a) and
# Debian's libyaml-cpp.a.

find_path(XLAUNCH_FMT_INCLUDE_DIR fmt/format-inl.h REQUIRED)
add_library(xlaunch_fmt STATIC ${PROJECT_SOURCE_DIR}/packaging/fmt_compiled.cpp)
target_include_directories(xlaunch_fmt SYSTEM PUBLIC ${XLAUNCH_FMT_INCLUDE_DIR})
add_library(fmt::fmt ALIAS xlaunch_fmt)

find_library(XLAUNCH_YAML_CPP_ARCHIVE libyaml-cpp.a REQUIRED)
find_path(XLAUNCH_YAML_CPP_INCLUDE_DIR yaml-cpp/yaml.h REQUIRED)
add_library(yaml-cpp STATIC IMPORTED)
set_target_properties(yaml-cpp PROPERTIES
  IMPORTED_LOCATION ${XLAUNCH_YAML_CPP_ARCHIVE}
  INTERFACE_INCLUDE_DIRECTORIES ${XLAUNCH_YAML_CPP_INCLUDE_DIR})
