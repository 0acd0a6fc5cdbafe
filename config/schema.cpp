#include "config/schema.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "config/accelerate_keys.hpp"
#include "config/text.hpp"
#include "config/torchrun_values.hpp"

namespace xlaunch::config {
namespace {

template <typename T>
using Field = std::optional<T> Settings::*;

std::string format_number(double value) {
  // Whole seconds print as "30", not "30.000000", so written files read naturally.
  if (std::floor(value) == value && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{}", value);
}

KeySpec int_key(std::string_view name, Field<int> field, long long min, long long max,
                std::string_view allowed, std::string_view help) {
  return {name,
          ValueKind::Integer,
          allowed,
          help,
          [field, min, max](std::string_view text, Settings& into, std::string&) {
            const auto value = parse_integer(text);
            if (!value || *value < min || *value > max) return false;
            into.*field = static_cast<int>(*value);
            return true;
          },
          [field](const Settings& from) -> std::optional<std::string> {
            if (!(from.*field)) return std::nullopt;
            return std::to_string(*(from.*field));
          }};
}

KeySpec seconds_key(std::string_view name, Field<double> field, bool zero_ok,
                    std::string_view allowed, std::string_view help) {
  return {name,
          ValueKind::Number,
          allowed,
          help,
          [field, zero_ok](std::string_view text, Settings& into, std::string&) {
            const auto value = parse_number(text);
            if (!value || !std::isfinite(*value) || *value < 0 || (!zero_ok && *value == 0) ||
                *value > kMaxSeconds) {
              return false;
            }
            into.*field = *value;
            return true;
          },
          [field](const Settings& from) -> std::optional<std::string> {
            if (!(from.*field)) return std::nullopt;
            return format_number(*(from.*field));
          }};
}

KeySpec bool_key(std::string_view name, Field<bool> field, std::string_view help) {
  return {name,
          ValueKind::Boolean,
          "true or false",
          help,
          [field](std::string_view text, Settings& into, std::string&) {
            const auto value = parse_boolean(text);
            if (!value) return false;
            into.*field = *value;
            return true;
          },
          [field](const Settings& from) -> std::optional<std::string> {
            if (!(from.*field)) return std::nullopt;
            return *(from.*field) ? "true" : "false";
          }};
}

/// `check` normalises the text or rejects it with nullopt.
KeySpec text_key(std::string_view name, Field<std::string> field, ValueKind kind,
                 std::string_view allowed, std::string_view help,
                 std::function<std::optional<std::string>(std::string_view)> check) {
  return {name,
          kind,
          allowed,
          help,
          [field, check](std::string_view text, Settings& into, std::string&) {
            auto value = check(trim(text));
            if (!value) return false;
            into.*field = std::move(*value);
            return true;
          },
          [field](const Settings& from) { return from.*field; }};
}

std::optional<std::string> non_empty(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> host_name(std::string_view text) {
  if (text.empty() || std::any_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isspace(c) || c == '/' || c == ',';
      })) {
    return std::nullopt;
  }
  return std::string(text);
}

std::optional<std::string> one_of(std::string_view text,
                                  std::initializer_list<std::string_view> choices) {
  const std::string t = lower(text);
  for (std::string_view choice : choices) {
    if (t == lower(choice)) return std::string(choice);
  }
  return std::nullopt;
}

/// "1,3" -> true; every comma-separated item must be a non-negative integer.
bool is_index_list(std::string_view text) {
  if (text.empty()) return false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const auto value = parse_integer(text.substr(start, comma - start));
    if (!value || *value < 0) return false;
    start = comma + 1;
  }
  return true;
}

std::string without_blanks(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

/// torchrun's --tee/--redirects: 0-3 for every rank, or "rank:value" pairs ("0:3,1:2").
std::optional<std::string> std_streams(std::string_view text) {
  const std::string t = without_blanks(text);
  if (t.empty()) return std::nullopt;
  std::size_t start = 0;
  while (start <= t.size()) {
    const std::size_t comma = std::min(t.find(',', start), t.size());
    std::string_view item = std::string_view(t).substr(start, comma - start);
    const std::size_t colon = item.find(':');
    if (colon != std::string_view::npos) {
      const auto rank = parse_integer(item.substr(0, colon));
      if (!rank || *rank < 0) return std::nullopt;
      item = item.substr(colon + 1);
    } else if (t.find(',') != std::string::npos) {
      return std::nullopt;  // a list must map ranks
    }
    const auto value = parse_integer(item);
    if (!value || *value < 0 || *value > 3) return std::nullopt;
    start = comma + 1;
  }
  return t;
}

std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> keys;
  keys.push_back(text_key("compute_environment", &Settings::compute_environment, ValueKind::Choice,
                          "LOCAL_MACHINE",
                          "accelerate's compute environment; xlaunch runs on your own machines",
                          [](std::string_view t) { return one_of(t, {"LOCAL_MACHINE"}); }));
  keys.push_back(
      {"distributed_type", ValueKind::Choice,
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
       }});
  keys.push_back({"mixed_precision", ValueKind::Choice, "no, fp16, bf16, fp8",
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
                  }});
  keys.push_back(int_key("num_processes", &Settings::num_processes, 1, 1 << 20, "an integer >= 1",
                         "processes in total, across all machines"));
  keys.push_back({"num_machines", ValueKind::Integer,
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
                  }});
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
  // xlaunch's own keys (accelerate rejects files that contain them).
  keys.push_back({"nproc_per_node", ValueKind::Text,
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
                  }});
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
  // Not trimmed like other text: the id names folders, so what is checked is what is used.
  keys.push_back({"rdzv_id", ValueKind::Text,
                  "a name of 1-128 letters, digits, '.', '_' or '-', starting with a letter or "
                  "digit (it names the run's folders)",
                  "identifies the job all machines join",
                  [](std::string_view text, Settings& into, std::string&) {
                    if (!is_valid_run_id(text)) return false;
                    into.rdzv_id = std::string(text);
                    return true;
                  },
                  [](const Settings& s) { return s.rdzv_id; }});
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
  // torchrun's own settings (flags --rdzv_endpoint, --role, ...; PET_* variables).
  keys.push_back(text_key("rdzv_endpoint", &Settings::rdzv_endpoint, ValueKind::Text,
                          "host, host:port, [ipv6] or [ipv6]:port (port 1..65535)",
                          "where the store is: its host hosts it (default port 29400)",
                          [](std::string_view t) -> std::optional<std::string> {
                            if (!parse_endpoint(t)) return std::nullopt;
                            return std::string(t);
                          }));
  keys.push_back({"rdzv_conf", ValueKind::Text,
                  "key=value pairs such as join_timeout=600,last_call_timeout=30 (keys: "
                  "join_timeout, last_call_timeout, close_timeout, read_timeout, is_host, "
                  "timeout)",
                  "torchrun's rendezvous options; join_timeout and timeout set rdzv_timeout",
                  [](std::string_view text, Settings& into, std::string& notice) {
                    std::string problem;
                    if (parse_rdzv_conf(text, into, problem)) return true;
                    notice = problem;
                    return false;
                  },
                  format_rdzv_conf});
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
                          "signals that stop the job (xlaunch handles TERM, INT, HUP, QUIT)",
                          normalize_signal_list));
  keys.push_back(bool_key("virtual_local_rank", &Settings::virtual_local_rank,
                          "every worker sees only its own GPU and gets LOCAL_RANK=0"));
  keys.push_back(text_key("numa_binding", &Settings::numa_binding, ValueKind::Choice,
                          "node, socket, exclusive, core-complex",
                          "accepted for torchrun compatibility; xlaunch does not bind to NUMA "
                          "nodes",
                          parse_numa_binding));
  // Diagnosis (docs/diagnose.md).
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
  return keys;
}

const IgnoredKey kIgnored[] = {
    {"tp_config", "xlaunch does not configure tensor parallelism"},
    {"ipex_config", "xlaunch does not set up Intel Extension for PyTorch"},
    {"mpirun_config", "xlaunch starts workers itself, not through mpirun"},
    {"main_training_function", "only accelerate's notebook launcher uses it", "main"},
    {"downcast_bf16", "xlaunch does not run on TPUs"},
    {"command_file", "xlaunch does not run on TPUs"},
    {"commands", "xlaunch does not run on TPUs"},
    {"tpu_", "xlaunch does not run on TPUs"},  // every tpu_* key
    {"fp16", "use mixed_precision: fp16"},
    // Keys of accelerate's SageMaker configs.
    {"ec2_instance_type", "xlaunch does not launch on SageMaker"},
    {"iam_role_name", "xlaunch does not launch on SageMaker"},
    {"image_uri", "xlaunch does not launch on SageMaker"},
    {"profile", "xlaunch does not launch on SageMaker"},
    {"region", "xlaunch does not launch on SageMaker"},
    {"base_job_name", "xlaunch does not launch on SageMaker"},
    {"pytorch_version", "xlaunch does not launch on SageMaker"},
    {"transformers_version", "xlaunch does not launch on SageMaker"},
    {"py_version", "xlaunch does not launch on SageMaker"},
    {"sagemaker_inputs_file", "xlaunch does not launch on SageMaker"},
    {"sagemaker_metrics_file", "xlaunch does not launch on SageMaker"},
    {"additional_args", "xlaunch does not launch on SageMaker"},
};

}  // namespace

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> keys = build_schema();
  return keys;
}

const KeySpec* find_key(std::string_view name) {
  for (const KeySpec& key : schema()) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

const IgnoredKey* find_ignored_key(std::string_view name) {
  for (const IgnoredKey& key : kIgnored) {
    if (key.name == name) return &key;
    if (key.name == "tpu_" && name.size() > 4 && name.substr(0, 4) == "tpu_") return &key;
  }
  return nullptr;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> suggest_key(std::string_view unknown) {
  const std::string wanted = lower(unknown);
  std::optional<std::string> best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const KeySpec& key : schema()) {
    const std::size_t d = edit_distance(wanted, key.name);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(key.name);
    }
  }
  // A third of the length catches dropped/swapped letters without pairing unrelated words.
  const std::size_t limit = std::max<std::size_t>(2, unknown.size() / 3);
  if (best_distance > limit) return std::nullopt;
  return best;
}

std::string env_var_name(std::string_view key) {
  std::string out = "XLAUNCH_";
  for (char c : key) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<long long> parse_integer(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<bool> parse_boolean(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "y" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "n" || t == "0") return false;
  return std::nullopt;
}

bool is_valid_run_id(std::string_view text) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (text.empty() || text.size() > kMaxRunIdLength || !alnum(text.front())) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::optional<std::string> normalize_gpu_ids(std::string_view text) {
  const std::string t = without_blanks(text);
  if (lower(t) == "all") return std::string("all");
  if (!is_index_list(t)) return std::nullopt;
  return t;
}

}  // namespace xlaunch::config
