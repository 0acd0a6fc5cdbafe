// The sitecustomize.py that xlaunch puts first on Python workers' PYTHONPATH: at start-up, in
// a rank's own process (not in the Pythons a rank starts), it registers faulthandler for the
// dump signal (writing to a per-process file the launcher reads) and notes a script's own
// MASTER_ADDR/MASTER_PORT; in every Python it then runs the sitecustomize it shadows. The script
// itself runs unchanged. First it drops NCCL_ASYNC_ERROR_HANDLING where it repeats
// TORCH_NCCL_ASYNC_ERROR_HANDLING and the torch found is 2.2 or newer, which would warn about the
// old name.
#pragma once

#include <string>
#include <string_view>

namespace xlaunch::diagnose {

/// The module's text for the ranks of the launcher whose pid is `launcher_pid`: a rank is a
/// child of it (of a parent outside its PID namespace, getppid() 0, with pidns containment).
std::string sitecustomize_text(long launcher_pid);

/// The signal a worker dumps its stacks on: SIGURG, whose default action is to ignore it, so
/// that a process that does not handle it (one that replaced its program with exec, or
/// unregistered faulthandler) is unharmed even when it changed between xlaunch's check and
/// the signal. Not SIGUSR1/SIGUSR2, which training frameworks use themselves (Lightning
/// requeues a SLURM job on SIGUSR1), and not a real-time signal, which ends such a process.
int stacks_signal();

/// Where a worker's dump and its notes go: DIR/rank_<rank>.<pid>.stacks / .env, and the
/// descriptor its faulthandler writes to (.fd, written once the handler is registered).
std::string stacks_file(const std::string& dir, int rank, long pid);
std::string notes_file(const std::string& dir, int rank, long pid);
std::string descriptor_file(const std::string& dir, int rank, long pid);

}  // namespace xlaunch::diagnose
