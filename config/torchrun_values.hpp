// torchrun's value syntaxes, parsed without side effects: --nnodes MIN:MAX,
// --nproc_per_node auto|gpu|cpu|N, --rdzv_endpoint host[:port], --rdzv_conf k=v,... and
// --signals_to_handle. The schema (schema_keys.cpp) uses these for flags, PET_*/XLAUNCH_*
// variables and config files alike.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// torchrun's default port for a c10d --rdzv_endpoint given without one.
inline constexpr int kDefaultRdzvPort = 29400;

struct MachineRange {
  int min = 1;
  int max = 1;
};

/// "N" (N:N) or "MIN:MAX" with 1 <= MIN <= MAX <= max_machines; nullopt otherwise.
std::optional<MachineRange> parse_nnodes(std::string_view text, int max_machines);

/// "auto", "gpu" or "cpu" (as written, lower-cased), or nullopt when `text` is none of them.
std::optional<std::string> parse_nproc_device(std::string_view text);

/// The worker count --nproc_per_node auto|gpu|cpu means on this machine, as torchrun counts:
/// gpu = the visible GPUs, cpu = the CPUs, auto = the GPUs when any, else the CPUs.
/// `gpus` names the GPUs found (for the message). Throws UsageError for "gpu" with none.
int count_for_nproc_device(std::string_view device, const std::vector<std::string>& gpus, int cpus);

struct Endpoint {
  std::string host;  ///< without IPv6 brackets
  int port = kDefaultRdzvPort;
  bool port_given = false;
};

/// "host", "host:port", "[v6]" or "[v6]:port"; nullopt when malformed or the port is not
/// 0..65535 (0: a free port, which only a one-machine job can use; launch_rules checks that).
std::optional<Endpoint> parse_endpoint(std::string_view text);

/// --rdzv_conf: comma-separated key=value pairs. Known keys: join_timeout and timeout (into
/// rdzv_timeout), last_call_timeout, close_timeout, read_timeout (seconds), is_host (boolean).
/// Any other key is added to `ignored` ("key=value"), as torchrun's backends ignore keys they
/// do not read, except etcd's TLS ones (protocol=https, cacert, cert, key): xlaunch cannot
/// honour those. Returns false and names the offending item in `problem` when something is
/// not allowed.
bool parse_rdzv_conf(std::string_view text, Settings& into, std::string& problem,
                     std::vector<std::string>* ignored = nullptr);

/// The rdzv_conf fields of `from` written back as "k=v,...", or nullopt when none is set.
std::optional<std::string> format_rdzv_conf(const Settings& from);

/// The signals that stop the job (xlaunch always handles them, named or not).
inline constexpr std::string_view kHandledSignals = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";

/// "SIGTERM,usr1, SIGHUP" -> "SIGTERM,SIGUSR1,SIGHUP"; nullopt when a name is not a signal.
std::optional<std::string> normalize_signal_list(std::string_view text);

/// The signals of a normalised list other than the four stop signals (e.g. SIGUSR1): xlaunch
/// forwards them to every worker and the job goes on.
std::vector<std::string> unhandled_signals(std::string_view normalized);

/// The number of a signal name normalize_signal_list accepts ("SIGUSR1" -> 10).
std::optional<int> signal_number(std::string_view name);

/// --numa_binding's choices (torchrun's): node, socket, exclusive, core-complex.
std::optional<std::string> parse_numa_binding(std::string_view text);

}  // namespace xlaunch::config
