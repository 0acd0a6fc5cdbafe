#include "config/schema.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include "config/schema_table.hpp"
#include "config/text.hpp"

namespace xlaunch::config {
namespace {

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
  static const std::vector<KeySpec> keys = detail::build_schema();
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

}  // namespace xlaunch::config
