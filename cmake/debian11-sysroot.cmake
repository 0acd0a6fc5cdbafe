# Toolchain of the shipped build (preset `package`, scripts/package): this machine's GCC 12,
# its libstdc++ and libgcc, and the third-party headers installed here (Boost, fmt, yaml-cpp,
# CLI11), but the C library of a Debian 11 root (scripts/debian11-root): its headers, start files
# and libc.so. A program linked against glibc 2.31 runs on every glibc from 2.31 on, while one
# linked here would need this machine's 2.36 (docs/install.md: the glibc floor).
if(DEFINED ENV{XLAUNCH_DEBIAN11_ROOT})
  set(_xlaunch_root "$ENV{XLAUNCH_DEBIAN11_ROOT}")
else()
  set(_xlaunch_root /var/cache/xlaunch-tests/bullseye)
endif()
set(XLAUNCH_SYSROOT "${_xlaunch_root}" CACHE PATH
    "Debian root whose glibc the shipped build links against (scripts/debian11-root)")
set(_xlaunch_libdir "${XLAUNCH_SYSROOT}/usr/lib/x86_64-linux-gnu")
if(NOT EXISTS "${_xlaunch_libdir}/libc_nonshared.a")
  message(FATAL_ERROR "no Debian root with libc6-dev at XLAUNCH_SYSROOT=${XLAUNCH_SYSROOT}: "
                      "run scripts/debian11-root (scripts/package does), or pass "
                      "-DXLAUNCH_SYSROOT=<root>")
endif()

# Not a cross build (CMAKE_SYSTEM_NAME stays unset): the programs run here, and GNUInstallDirs
# keeps Debian's multiarch library folder.
set(CMAKE_SYSROOT "${XLAUNCH_SYSROOT}")
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)

# Debian's GCC has no built-in sysroot: its multiarch search paths still lead to this
# machine's crt1.o and libc.so ahead of the root's. -B and -L put the root's first.
# (CMake reads this file more than once; the flags are set, not appended.)
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-B${_xlaunch_libdir}/ -L${_xlaunch_libdir}")
endforeach()

# The third-party packages are found here (find_package searches the root, then this machine).
# Their include directory, /usr/include, must not reach the compiler: it holds glibc 2.36's
# headers too. Only their own header trees do, through links in the build folder; top-level
# CMakeLists.txt then treats /usr/include as implicit, so CMake never adds it.
set(_xlaunch_headers "${CMAKE_BINARY_DIR}/host-include")
foreach(tree boost fmt yaml-cpp CLI)
  if(NOT EXISTS "${_xlaunch_headers}/${tree}")
    file(MAKE_DIRECTORY "${_xlaunch_headers}")
    file(CREATE_LINK "/usr/include/${tree}" "${_xlaunch_headers}/${tree}" SYMBOLIC)
  endif()
endforeach()
set(CMAKE_CXX_FLAGS_INIT "-isystem ${_xlaunch_headers}")
