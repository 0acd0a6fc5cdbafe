// Random bits for names that must not collide (run ids, run cgroups).
#pragma once

#include <cstdint>

namespace xlaunch::launcher {

/// 64 bits from the kernel (getrandom(2), /dev/urandom where it is missing). Not
/// std::random_device: it asks the CPU first (cpuid), which a virtual machine traps
/// (about 11 µs a call on the CI machines, against 0.4 µs).
std::uint64_t random_bits();

}  // namespace xlaunch::launcher
