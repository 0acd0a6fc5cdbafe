# XLAUNCH_STATIC: a self-contained xlaunch that needs nothing but the C library (preset
# `package`, docs/install.md): static fmt and yaml-cpp (XlaunchStaticDeps.cmake), built against
# an older glibc.

include(${CMAKE_CURRENT_LIST_DIR}/XlaunchStaticDeps.cmake)

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
