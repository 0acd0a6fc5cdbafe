# The Debian package (scripts/package runs `cpack` in build/package): the self-contained xlaunch,
# the client library libxlaunch.so with its headers, CMake package (find_package(xlaunch)) and
# pkg-config file. dpkg-shlibdeps (dpkg-dev) derives Depends from what the files link: the C
# library at the floor the binary was measured at, libstdc++6 and libgcc-s1 for the library.
# The packages hold xlaunch and the library only (preset package builds just those): installing
# must not build everything else first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME xlaunch)
set(CPACK_PACKAGE_VENDOR xlaunch)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "launcher for distributed training jobs (torchrun and accelerate launch compatible)")
set(CPACK_PACKAGE_DESCRIPTION
    "xlaunch runs one training program as N cooperating worker processes, one per GPU, on one
machine or many, hosts the PyTorch-compatible rendezvous store they meet in and stops the job
cleanly when one of them fails. The package also holds the worker client library (C and C++)
with its headers, CMake package and pkg-config file.")
set(CPACK_PACKAGE_CONTACT "xlaunch maintainers <xlaunch@localhost>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
# A shlibs file, so that a package of a worker linking libxlaunch gets its Depends from
# dpkg-shlibdeps; with it CPack's postinst and postrm run ldconfig, so that the library is
# in ld.so's cache.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/cpack)
include(CPack)
