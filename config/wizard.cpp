#include "config/wizard.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <vector>

#include "config/accelerate_keys.hpp"
#include "config/prompts.hpp"
#include "config/schema.hpp"

namespace xlaunch::config {
namespace {

constexpr int kDefaultPort = 29500;

/// A Check that accepts integers in [min, max] and says what it wanted otherwise.
Check integer_between(long long min, long long max, std::string what) {
  return [=](std::string_view answer) -> std::string {
    const auto value = parse_integer(answer);
    if (value && *value >= min && *value <= max) return "";
    return fmt::format("'{}' is not {}", answer, what);
  };
}

int ask_integer(Terminal& term, std::string_view question, int default_value, long long min,
                long long max, const std::string& what) {
  const std::string answer =
      ask_text(term, question, std::to_string(default_value), integer_between(min, max, what));
  return static_cast<int>(*parse_integer(answer));
}

/// Comma-separated GPU indexes in `ids` (already normalised), or 0 for "all".
std::size_t id_count(const std::string& ids) {
  if (ids == "all") return 0;
  return static_cast<std::size_t>(std::count(ids.begin(), ids.end(), ',')) + 1;
}

void describe_machine(Terminal& term, const MachineFacts& machine) {
  const int gpus = machine.gpu_count;
  if (gpus > 0) {
    std::string names;
    for (const std::string& name : machine.gpu_names) names += (names.empty() ? "" : ", ") + name;
    term.write(fmt::format("This machine has {} GPU{}{}.\n", gpus, gpus == 1 ? "" : "s",
                           names.empty() ? "" : ": " + names));
  } else {
    term.write("This machine has no GPU that xlaunch can see.\n");
  }
}

bool ask_several_machines(Terminal& term, const Settings& start) {
  return ask_choice(term, "Where will the job run?",
                    {{"single", "this machine only", {"this", "one", "local"}},
                     {"multi", "several machines", {"several", "many"}}},
                    start.num_machines.value_or(1) > 1 ? 1 : 0) == 1;
}

// Only the types that run here are offered: NO runs one process, so not on several machines;
// DDP and DP need a GPU. A file that `launch` refuses is no answer.
DistributedType ask_distributed_type(Terminal& term, const Settings& start, int gpus,
                                     bool several) {
  struct Option {
    DistributedType type;
    Choice choice;
  };
  std::vector<Option> options;
  if (!several) {
    options.push_back(
        {DistributedType::No,
         {"NO", gpus > 0 ? "one process, no distribution" : "one process on the CPU", {"none"}}});
  }
  if (gpus > 0) {
    options.push_back({DistributedType::MultiGpu,
                       {"DDP", "one process per GPU (DistributedDataParallel)", {"MULTI_GPU"}}});
    options.push_back({DistributedType::DataParallel,
                       {"DP", "one process per machine using all its GPUs (DataParallel)", {}}});
  } else {
    term.write(
        "DDP and DP need GPUs, so this machine runs CPU processes. For a GPU machine, "
        "run `xlaunch config` there.\n");
  }
  options.push_back(
      {DistributedType::MultiCpu, {"MULTI_CPU", "several processes on CPUs", {"CPU"}}});
  if (options.size() == 1) {
    term.write("Distributed type: MULTI_CPU (several processes on CPUs)\n");
    return DistributedType::MultiCpu;
  }
  // The default: the starting file's type, or what this machine suggests, among those offered.
  DistributedType wanted =
      start.distributed_type.value_or(gpus >= 2 ? DistributedType::MultiGpu : DistributedType::No);
  if (gpus == 0 && wanted != DistributedType::No) wanted = DistributedType::MultiCpu;
  if (several && wanted == DistributedType::No) {
    wanted = gpus > 0 ? DistributedType::MultiGpu : DistributedType::MultiCpu;
  }
  std::size_t default_index = 0;
  std::vector<Choice> choices;
  for (const Option& o : options) {
    if (o.type == wanted) default_index = choices.size();
    choices.push_back(o.choice);
  }
  return options[ask_choice(term, "Distributed type:", choices, default_index)].type;
}

/// Several machines: how many, this one's rank, the main machine's address and port.
/// Returns the number of machines.
int ask_machines(Terminal& term, const Settings& start, Settings& s) {
  const int machines =
      ask_integer(term, "How many machines?", std::max(2, start.num_machines.value_or(2)), 2,
                  1 << 16, "a whole number of machines, 2 or more");
  const int rank_default =
      start.machine_rank.value_or(0) < machines ? start.machine_rank.value_or(0) : 0;
  s.machine_rank = ask_integer(term, "This machine's rank (0 is the main machine)?", rank_default,
                               0, machines - 1, fmt::format("a rank from 0 to {}", machines - 1));
  const KeySpec& ip_key = *find_key("main_process_ip");
  s.main_process_ip =
      ask_text(term, "IP address or host name of the main machine (rank 0)?",
               start.main_process_ip.value_or(""), [&](std::string_view answer) -> std::string {
                 Settings probe;
                 std::string notice;
                 if (answer.empty()) return "every machine needs the main machine's address";
                 if (!ip_key.parse(answer, probe, notice)) {
                   return fmt::format("'{}' is not {}", answer, ip_key.allowed);
                 }
                 return "";
               });
  const int port_default =
      start.main_process_port.value_or(0) > 0 ? *start.main_process_port : kDefaultPort;
  s.main_process_port = ask_integer(term, "Port on the main machine?", port_default, 1, 65535,
                                    "a port number from 1 to 65535");
  if (!s.rdzv_backend) s.rdzv_backend = "static";
  if (!s.same_network) s.same_network = true;
  return machines;
}

/// DDP and MULTI_CPU: processes in total. Returns the processes per machine.
int ask_processes(Terminal& term, const Settings& start, Settings& s, DistributedType type,
                  int gpus, int machines) {
  const int suggested_per_machine = type == DistributedType::MultiGpu ? std::max(1, gpus) : 2;
  int default_total = suggested_per_machine * machines;
  if (start.num_processes && start.distributed_type == type &&
      *start.num_processes % machines == 0) {
    default_total = *start.num_processes;
  }
  const std::string answer = ask_text(
      term, "How many processes in total (all machines together)?", std::to_string(default_total),
      [&](std::string_view text) -> std::string {
        const auto value = parse_integer(text);
        if (!value || *value < 1 || *value > (1 << 20)) {
          return fmt::format("'{}' is not a whole number of processes, 1 or more", text);
        }
        if (*value % machines != 0) {
          return fmt::format("{} processes do not split evenly over {} machines", *value, machines);
        }
        if (*value / machines > kMaxLocalWorkers) {
          return fmt::format("{} processes on each machine; xlaunch runs at most {} per machine",
                             *value / machines, kMaxLocalWorkers);
        }
        if (type == DistributedType::MultiGpu && gpus > 0 && *value / machines > gpus) {
          return fmt::format("DDP runs one process per GPU and this machine has {} GPU{}", gpus,
                             gpus == 1 ? "" : "s");
        }
        return "";
      });
  s.num_processes = static_cast<int>(*parse_integer(answer));
  return *s.num_processes / machines;
}

/// Why `text` is not an answer to "which GPUs" (empty when it is one).
std::string gpu_ids_problem(std::string_view text, int gpus, DistributedType type,
                            int per_machine) {
  const auto ids = normalize_gpu_ids(text);
  if (!ids) return fmt::format("'{}' is not 'all' or a list like 0,1", text);
  if (*ids == "all") return "";
  std::vector<std::string_view> seen;
  for (std::size_t start_at = 0; start_at <= ids->size();) {
    const std::size_t comma = std::min(ids->find(',', start_at), ids->size());
    const std::string_view id = std::string_view(*ids).substr(start_at, comma - start_at);
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) {
      return fmt::format("GPU {} is named twice: each process needs a GPU of its own", id);
    }
    seen.push_back(id);
    start_at = comma + 1;
  }
  if (gpus > 0) {
    for (std::size_t start_at = 0; start_at <= ids->size();) {
      const std::size_t comma = std::min(ids->find(',', start_at), ids->size());
      if (*parse_integer(std::string_view(*ids).substr(start_at, comma - start_at)) >= gpus) {
        return fmt::format("this machine's GPU ids are 0 to {}", gpus - 1);
      }
      start_at = comma + 1;
    }
  }
  if (type == DistributedType::MultiGpu &&
      id_count(*ids) != static_cast<std::size_t>(per_machine)) {
    return fmt::format(
        "DDP runs one process per GPU: {} process{} per machine need{} {} "
        "GPU id{}, or all",
        per_machine, per_machine == 1 ? "" : "es", per_machine == 1 ? "s" : "", per_machine,
        per_machine == 1 ? "" : "s");
  }
  return "";
}

MixedPrecision ask_mixed_precision(Terminal& term, const Settings& start) {
  const std::size_t precision =
      ask_choice(term, "Mixed precision:",
                 {{"no", "full precision (fp32)", {"fp32"}},
                  {"fp16", "16-bit floats", {}},
                  {"bf16", "bfloat16 (GPUs of compute capability 8.0 or newer)", {}},
                  {"fp8", "8-bit floats (Hopper or newer, with Transformer Engine or MS-AMP)", {}}},
                 static_cast<std::size_t>(start.mixed_precision.value_or(MixedPrecision::No)));
  return std::array<MixedPrecision, 4>{MixedPrecision::No, MixedPrecision::Fp16,
                                       MixedPrecision::Bf16, MixedPrecision::Fp8}[precision];
}

}  // namespace

Settings run_wizard(Terminal& term, const MachineFacts& machine, const Settings& start) {
  Settings s = start;
  // The answers replace what says the same in other words: torchrun's per-machine count and
  // MIN:MAX, and an endpoint that would override the main machine's address.
  s.nproc_per_node.reset();
  s.nproc_per_node_device.reset();
  s.min_machines.reset();
  s.max_machines.reset();
  s.rdzv_endpoint.reset();
  const int gpus = machine.gpu_count;
  describe_machine(term, machine);
  const bool several = ask_several_machines(term, start);
  const DistributedType type = ask_distributed_type(term, start, gpus, several);
  s.distributed_type = type;
  // FSDP, DeepSpeed and Megatron-LM run one process per GPU: kept, with their sections, for
  // DDP, the type they are read as; any other answer drops them (their sections stay, unused).
  if (const auto paradigm = selected_paradigm(start.accelerate)) {
    if (type == DistributedType::MultiGpu) {
      term.write(
          fmt::format("Keeping distributed_type {} and its settings from the file.\n", *paradigm));
    } else {
      select_paradigm(s.accelerate, std::nullopt);
    }
  }
  s.compute_environment = "LOCAL_MACHINE";

  int machines = 1;
  if (several) {
    machines = ask_machines(term, start, s);
  } else {
    s.machine_rank = 0;
    s.main_process_ip.reset();
    s.main_process_port.reset();
  }
  s.num_machines = machines;

  int per_machine = 1;
  if (type == DistributedType::MultiGpu || type == DistributedType::MultiCpu) {
    per_machine = ask_processes(term, start, s, type, gpus, machines);
  } else {
    s.num_processes = machines;  // NO and DP: one process per machine
  }

  const bool cpu_only =
      type == DistributedType::MultiCpu || (type == DistributedType::No && gpus == 0);
  s.use_cpu = cpu_only;
  if (cpu_only) {
    s.gpu_ids.reset();
  } else {
    s.gpu_ids = ask_text(
        term, "Which GPUs (comma-separated ids, or all)?", start.gpu_ids.value_or("all"),
        [&](std::string_view text) { return gpu_ids_problem(text, gpus, type, per_machine); });
    s.gpu_ids = *normalize_gpu_ids(*s.gpu_ids);
  }

  s.mixed_precision = ask_mixed_precision(term, start);
  const std::string logs =
      ask_text(term, "Where should logs go (a directory, or none)?", start.log_dir.value_or("none"),
               [](std::string_view text) -> std::string {
                 for (unsigned char c : text) {
                   if (c < 0x20 || c == 0x7f) return "a folder's name holds no control characters";
                 }
                 return "";
               });
  if (logs == "none") {
    s.log_dir.reset();
  } else {
    s.log_dir = logs;
  }
  return s;
}

std::string summarize(const Settings& settings) {
  std::string out;
  for (const KeySpec& key : schema()) {
    if (auto value = key.print(settings)) out += fmt::format("  {}: {}\n", key.name, *value);
  }
  return out;
}

}  // namespace xlaunch::config
