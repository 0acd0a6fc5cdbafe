// `xlaunch config`: the questions, in order, each only when relevant.
#pragma once

#include <string>

#include "config/machine.hpp"
#include "config/settings.hpp"
#include "config/terminal.hpp"

namespace xlaunch::config {

/// Asks on `term`: one machine or several; distributed type (only those that run here:
/// without a GPU no DDP or DP, with several machines no NO); for several machines their
/// number, this one's rank, the main process's IP and port; processes in total (DDP and
/// MULTI_CPU); which GPUs; mixed precision; log directory. Defaults come from `start` (a
/// template or the existing file) and then `machine`. Keys not asked about are kept from
/// `start`, except those the answers say in other words (nproc_per_node, an nnodes range,
/// rdzv_endpoint). Returns the settings to write; writes nothing itself. Throws Interrupted
/// or EndOfInput (from the terminal) when the user stops early.
Settings run_wizard(Terminal& term, const MachineFacts& machine, const Settings& start);

/// "  key: value" per set key, in schema order: the wizard's closing summary.
std::string summarize(const Settings& settings);

}  // namespace xlaunch::config
