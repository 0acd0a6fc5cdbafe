# XLAUNCH_STATIC: a self-contained xlaunch that needs nothing but the C library (preset
# `package`, docs/install.md). The modules link `fmt::fmt` and `yaml-cpp`; here those names
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

# Against an older root's glibc (cmake/debian11-sysroot.cmake), /usr/include holds this
# machine's newer glibc headers: never put it on a compile line.
if(CMAKE_SYSROOT)
  list(APPEND CMAKE_C_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
  list(APPEND CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES /usr/include)
endif()

# What the C++ sources use from a newer glibc than the sysroot's, declared for every file.
set(compat_header ${PROJECT_SOURCE_DIR}/packaging/glibc_compat.h)
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-include$<SEMICOLON>${compat_header}>)

# xlaunch_link_self_contained(TARGET): libstdc++ and libgcc linked in, plus the few C library
# symbols they were built to expect from a newer glibc than the sysroot's (glibc_compat.c).
function(xlaunch_link_self_contained target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/packaging/glibc_compat.c)
endfunction()
