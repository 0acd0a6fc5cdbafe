#include "config/machine.hpp"

#include <algorithm>

namespace xlaunch::config {
namespace {

// The GPUs the config would use here: the ids given, else every GPU.
int usable_gpus(const MachineFacts& machine, const Settings& given) {
  if (!given.gpu_ids || *given.gpu_ids == "all") return machine.gpu_count;
  return static_cast<int>(std::count(given.gpu_ids->begin(), given.gpu_ids->end(), ',')) + 1;
}

// distributed_type when none was given: what the process count and the GPUs allow. NO runs
// one process in all, so not for several processes or machines.
DistributedType type_for(const Settings& given, bool cpu, int gpus) {
  const DistributedType several = cpu ? DistributedType::MultiCpu : DistributedType::MultiGpu;
  if (given.num_machines.value_or(1) > 1) return several;
  // torchrun's per-machine count: cpu, gpu or auto is one per device, most often several.
  if (given.nproc_per_node_device) return several;
  if (given.nproc_per_node) return *given.nproc_per_node > 1 ? several : DistributedType::No;
  if (given.num_processes) return *given.num_processes > 1 ? several : DistributedType::No;
  return !cpu && gpus >= 2 ? DistributedType::MultiGpu : DistributedType::No;
}

// num_processes when none was given: one per GPU (DDP), two per machine (MULTI_CPU), else
// one per machine.
int processes_for(DistributedType type, const Settings& given, int gpus) {
  const int machines = given.num_machines.value_or(1);
  switch (type) {
    case DistributedType::MultiGpu:
      return std::max(1, gpus) * machines;
    case DistributedType::MultiCpu:
      return 2 * machines;
    case DistributedType::No:
    case DistributedType::DataParallel:
      break;
  }
  return machines;
}

}  // namespace

Settings default_settings(const MachineFacts& machine, const Settings& given) {
  Settings s;
  s.compute_environment = "LOCAL_MACHINE";
  s.mixed_precision = MixedPrecision::No;
  s.num_machines = 1;
  s.machine_rank = 0;
  const int gpus = usable_gpus(machine, given);
  // No GPU means CPU workers, unless a GPU type was asked for (the check then refuses it).
  const bool gpu_type = given.distributed_type == DistributedType::MultiGpu ||
                        given.distributed_type == DistributedType::DataParallel;
  const bool cpu = given.use_cpu.value_or(machine.gpu_count == 0 && !gpu_type) ||
                   given.distributed_type == DistributedType::MultiCpu ||
                   given.nproc_per_node_device == "cpu";
  s.use_cpu = cpu;
  s.distributed_type = given.distributed_type.value_or(type_for(given, cpu, gpus));
  // A per-machine count given says how many; a total beside it could only contradict it.
  if (!given.nproc_per_node && !given.nproc_per_node_device) {
    s.num_processes = processes_for(*s.distributed_type, given, gpus);
  }
  if (!cpu && machine.gpu_count > 0) s.gpu_ids = "all";
  return merge(s, given);
}

}  // namespace xlaunch::config
