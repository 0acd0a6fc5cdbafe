// How large a rank's stdout and stderr pipes are made. Pure: the OS side (process_posix.cpp)
// reads the user's pipe limit and resizes the pipes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xlaunch::launcher {

/// The size for each of a machine's `pipes` rank output pipes, or 0 to leave the kernel's
/// default (64 KiB). A rank that writes faster than 64 KiB per wake-up of the launcher waits
/// on a full pipe at every fill: a 256 KiB pipe took a chatty rank from 0.5 to 2 GB/s here.
/// Larger pipes count against the user's `fs.pipe-user-pages-soft` (`soft_pages`, 0 when
/// unlimited), and a user over it gets 2-page pipes from then on, the ranks' own pipes too:
/// all of a launcher's pipes together stay within a sixteenth of it, smaller when there are
/// many ranks, the default when even 128 KiB each would not fit.
std::size_t rank_pipe_size(std::size_t pipes, std::uint64_t soft_pages, std::size_t page_size);

}  // namespace xlaunch::launcher
