// The table of keys xlaunch understands (schema.hpp), in the order files are written:
// accelerate's keys first, then xlaunch's own, torchrun's and the diagnosis keys.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "config/accelerate_keys.hpp"
#include "config/module_list.hpp"
#include "config/schema_table.hpp"
#include "config/text.hpp"
#include "config/torchrun_values.hpp"

namespace xlaunch::config::detail {
namespace {

KeySpec distributed_type_key() {
  return {"distributed_type",
          ValueKind::Choice,
          "NO, MULTI_GPU (or DDP), DP, MULTI_CPU, FSDP, DEEPSPEED, MEGATRON_LM",
          "NO: one process; MULTI_GPU: one process per GPU (DDP); DP: one process per machine "
          "using all its GPUs; MULTI_CPU: several CPU processes; FSDP, DEEPSPEED, MEGATRON_LM: "
          "MULTI_GPU plus accelerate's environment for them",
          [](std::string_view text, Settings& into, std::string&) {
            const std::string t = lower(trim(text));
            if (auto type = parse_distributed_type(t)) {
              into.distributed_type = type;
              select_paradigm(into.accelerate, std::nullopt);  // over a lower source's FSDP...
              return true;
            }
            // One process per GPU, plus accelerate's environment for the paradigm.
            if (auto paradigm = paradigm_switch(t)) {
              into.distributed_type = DistributedType::MultiGpu;
              select_paradigm(into.accelerate, paradigm);
              return true;
            }
            return false;
          },
          [](const Settings& s) -> std::optional<std::string> {
            if (!s.distributed_type) return std::nullopt;
            if (auto paradigm = selected_paradigm(s.accelerate)) return paradigm;
            return std::string(to_string(*s.distributed_type));
          }};
}

KeySpec mixed_precision_key() {
  return {"mixed_precision",
          ValueKind::Choice,
          "no, fp16, bf16, fp8",
          "passed to workers as ACCELERATE_MIXED_PRECISION and XLAUNCH_MIXED_PRECISION",
          [](std::string_view text, Settings& into, std::string&) {
            auto p = parse_mixed_precision(trim(text));
            if (!p) return false;
            into.mixed_precision = p;
            return true;
          },
          [](const Settings& s) -> std::optional<std::string> {
            if (!s.mixed_precision) return std::nullopt;
            return std::string(to_string(*s.mixed_precision));
          }};
}

KeySpec num_machines_key() {
  return {"num_machines",
          ValueKind::Integer,
          "an integer >= 1, or torchrun's MIN:MAX range such as 1:4",
          "machines taking part (MIN:MAX: elastic, between MIN and MAX)",
          [](std::string_view text, Settings& into, std::string&) {
            const auto range = parse_nnodes(text, 1 << 16);
            if (!range) return false;
            into.min_machines = range->min;
            into.max_machines = range->max;
            into.num_machines = range->max;  // an elastic job plans for MAX machines
            return true;
          },
          [](const Settings& s) -> std::optional<std::string> {
            if (s.min_machines && s.max_machines && *s.min_machines != *s.max_machines) {
              return fmt::format("{}:{}", *s.min_machines, *s.max_machines);
            }
            if (!s.num_machines) return std::nullopt;
            return std::to_string(*s.num_machines);
          }};
}

KeySpec nproc_per_node_key() {
  return {"nproc_per_node",
          ValueKind::Text,
          "an integer >= 1, or auto, gpu, cpu (torchrun's meanings)",
          "processes per machine (torchrun's meaning)",
          [](std::string_view text, Settings& into, std::string&) {
            if (auto device = parse_nproc_device(text)) {
              into.nproc_per_node_device = device;
              into.nproc_per_node = std::nullopt;
              return true;
            }
            const auto value = parse_integer(text);
            if (!value || *value < 1 || *value > (1 << 16)) return false;
            into.nproc_per_node = static_cast<int>(*value);
            into.nproc_per_node_device = std::nullopt;
            return true;
          },
          [](const Settings& s) -> std::optional<std::string> {
            if (s.nproc_per_node_device) return s.nproc_per_node_device;
            if (!s.nproc_per_node) return std::nullopt;
            return std::to_string(*s.nproc_per_node);
          }};
}

// Not trimmed like other text: the id names folders, so what is checked is what is used.
KeySpec rdzv_id_key() {
  return {"rdzv_id",
          ValueKind::Text,
          "a name of 1-128 letters, digits, '.', '_' or '-', starting with a letter or "
          "digit (it names the run's folders)",
          "identifies the job all machines join",
          [](std::string_view text, Settings& into, std::string&) {
            if (!is_valid_run_id(text)) return false;
            into.rdzv_id = std::string(text);
            return true;
          },
          [](const Settings& s) { return s.rdzv_id; }};
}

KeySpec rdzv_conf_key() {
  return {"rdzv_conf",
          ValueKind::Text,
          "key=value pairs such as join_timeout=600,last_call_timeout=30 (keys: "
          "join_timeout, last_call_timeout, close_timeout, read_timeout, is_host, "
          "timeout; others are ignored with a note, as torchrun ignores them)",
          "torchrun's rendezvous options; join_timeout and timeout set rdzv_timeout",
          [](std::string_view text, Settings& into, std::string& notice) {
            std::string problem;
            std::vector<std::string> ignored;
            if (!parse_rdzv_conf(text, into, problem, &ignored)) {
              notice = problem;
              return false;
            }
            if (!ignored.empty()) {
              notice = fmt::format(
                  "ignored {} (xlaunch reads join_timeout, last_call_timeout, close_timeout, "
                  "read_timeout, is_host and timeout; torchrun's backends ignore keys they "
                  "do not read)",
                  fmt::join(ignored, ", "));
            }
            return true;
          },
          format_rdzv_conf};
}

// accelerate's keys: what runs.
void add_accelerate_job_keys(std::vector<KeySpec>& keys) {
  keys.push_back(text_key("compute_environment", &Settings::compute_environment, ValueKind::Choice,
                          "LOCAL_MACHINE",
                          "accelerate's compute environment; xlaunch runs on your own machines",
                          [](std::string_view t) { return one_of(t, {"LOCAL_MACHINE"}); }));
  keys.push_back(distributed_type_key());
  keys.push_back(mixed_precision_key());
  keys.push_back(int_key("num_processes", &Settings::num_processes, 1, 1 << 20, "an integer >= 1",
                         "processes in total, across all machines"));
  keys.push_back(num_machines_key());
}

// accelerate's keys: where it runs.
void add_accelerate_machine_keys(std::vector<KeySpec>& keys) {
  keys.push_back(int_key("machine_rank", &Settings::machine_rank, 0, (1 << 16) - 1,
                         "an integer >= 0, below num_machines", "this machine's rank, 0 = main"));
  keys.push_back(text_key("main_process_ip", &Settings::main_process_ip, ValueKind::Text,
                          "a host name or IP address", "address of machine 0 (multi-machine)",
                          host_name));
  keys.push_back(int_key("main_process_port", &Settings::main_process_port, 0, 65535,
                         "a port number 0..65535 (0: any free port, one machine only)",
                         "port of the rendezvous store on machine 0"));
  keys.push_back(text_key("gpu_ids", &Settings::gpu_ids, ValueKind::Text,
                          "all, or comma-separated GPU indexes such as 0,1",
                          "which of the visible GPUs to use", normalize_gpu_ids));
  keys.push_back(text_key("rdzv_backend", &Settings::rdzv_backend, ValueKind::Choice,
                          "static, c10d, etcd, etcd-v2", "how machines meet",
                          [](std::string_view t) {
                            return one_of(t, {"static", "c10d", "etcd", "etcd-v2"});
                          }));
  keys.push_back(bool_key("same_network", &Settings::same_network,
                          "whether all machines share a local network"));
  keys.push_back(bool_key("use_cpu", &Settings::use_cpu, "run on CPU even when GPUs exist"));
  keys.push_back(bool_key("debug", &Settings::debug, "extra checks and logging"));
}

// xlaunch's own keys (accelerate rejects files that contain them).
void add_own_keys(std::vector<KeySpec>& keys) {
  keys.push_back(nproc_per_node_key());
  keys.push_back(text_key("log_dir", &Settings::log_dir, ValueKind::Text, "a directory path",
                          "where per-rank logs are written", non_empty));
  keys.push_back(int_key("max_restarts", &Settings::max_restarts, 0, 1 << 20, "an integer >= 0",
                         "restarts of the whole worker group after a failure"));
  keys.push_back(seconds_key("term_timeout", &Settings::term_timeout, true,
                             "seconds >= 0 and <= 1000000",
                             "grace period between SIGTERM and SIGKILL"));
  keys.push_back(seconds_key("rdzv_timeout", &Settings::rdzv_timeout, false,
                             "seconds > 0 and <= 1000000",
                             "how long machines wait for each other"));
  keys.push_back(seconds_key("heartbeat_timeout", &Settings::heartbeat_timeout, false,
                             "seconds > 0 and <= 1000000",
                             "a machine silent this long counts as failed"));
  keys.push_back(rdzv_id_key());
  keys.push_back(text_key("tee", &Settings::tee, ValueKind::Text,
                          "0-3 (none, stdout, stderr, both) or rank:value pairs such as 0:3,1:2",
                          "copy worker output to the console as well as the log files",
                          std_streams));
  keys.push_back(text_key("redirects", &Settings::redirects, ValueKind::Text,
                          "0-3 (none, stdout, stderr, both) or rank:value pairs such as 0:3,1:2",
                          "send worker output to the log files only", std_streams));
  keys.push_back(text_key("local_ranks_filter", &Settings::local_ranks_filter, ValueKind::Text,
                          "comma-separated local ranks such as 0 or 0,2",
                          "which local ranks print to the console",
                          [](std::string_view t) -> std::optional<std::string> {
                            const std::string s = without_blanks(t);
                            if (!is_index_list(s)) return std::nullopt;
                            return s;
                          }));
  keys.push_back(text_key("python", &Settings::python, ValueKind::Text, "an interpreter path",
                          "interpreter that runs .py programs", non_empty));
  keys.push_back(text_key("bind_addr", &Settings::bind_addr, ValueKind::Text,
                          "a host name or IP address", "address the store listens on", host_name));
}

// torchrun's own settings (flags --rdzv_endpoint, --role, ...; PET_* variables).
void add_torchrun_keys(std::vector<KeySpec>& keys) {
  keys.push_back(text_key("rdzv_endpoint", &Settings::rdzv_endpoint, ValueKind::Text,
                          "host, host:port, [ipv6] or [ipv6]:port (port 0..65535; 0: a free "
                          "port, one machine only)",
                          "where the store is: its host hosts it (default port 29400)",
                          [](std::string_view t) -> std::optional<std::string> {
                            if (!parse_endpoint(t)) return std::nullopt;
                            return std::string(t);
                          }));
  keys.push_back(rdzv_conf_key());
  keys.push_back(text_key("role", &Settings::role, ValueKind::Text, "a name without blanks",
                          "the workers' ROLE_NAME (default 'default')",
                          [](std::string_view t) -> std::optional<std::string> {
                            if (t.empty() || std::any_of(t.begin(), t.end(), [](unsigned char c) {
                                  return std::isspace(c) || std::iscntrl(c);
                                })) {
                              return std::nullopt;
                            }
                            return std::string(t);
                          }));
  keys.push_back(text_key("local_addr", &Settings::local_addr, ValueKind::Text,
                          "a host name or IP address",
                          "this machine's address as the other machines see it", host_name));
  keys.push_back(text_key("signals_to_handle", &Settings::signals_to_handle, ValueKind::Text,
                          "comma-separated signal names such as SIGTERM,SIGINT,SIGUSR1",
                          "TERM, INT, HUP, QUIT stop the job; others are forwarded to "
                          "every worker",
                          normalize_signal_list));
  keys.push_back(bool_key("virtual_local_rank", &Settings::virtual_local_rank,
                          "every worker sees only its own GPU and gets LOCAL_RANK=0"));
  keys.push_back(text_key("numa_binding", &Settings::numa_binding, ValueKind::Choice,
                          "node, socket, exclusive, core-complex",
                          "accepted for torchrun compatibility; xlaunch does not bind to NUMA "
                          "nodes",
                          parse_numa_binding));
}

// Diagnosis (docs/diagnose.md).
void add_diagnosis_keys(std::vector<KeySpec>& keys) {
  keys.push_back(seconds_key("stall_timeout", &Settings::stall_timeout, true,
                             "seconds >= 0 and <= 1000000 (0: off)",
                             "report a stall after this long without output, store traffic or "
                             "CPU time"));
  keys.push_back(text_key("on_stall", &Settings::on_stall, ValueKind::Choice, "continue, stop",
                          "what a stall does after its report", [](std::string_view t) {
                            return one_of(t, {"continue", "stop"});
                          }));
  keys.push_back(bool_key("python_stacks", &Settings::python_stacks,
                          "let xlaunch dump Python workers' stacks (faulthandler)"));
  keys.push_back(text_key("preload", &Settings::preload, ValueKind::Text,
                          "comma-separated Python module names such as torch,numpy",
                          "import these once in a template process on each machine and fork "
                          "every Python rank from it (empty: off)",
                          normalize_module_list));
}

}  // namespace

std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> keys;
  add_accelerate_job_keys(keys);
  add_accelerate_machine_keys(keys);
  add_own_keys(keys);
  add_torchrun_keys(keys);
  add_diagnosis_keys(keys);
  return keys;
}

}  // namespace xlaunch::config::detail
