// NVML through dlopen: xlaunch must start on machines without a GPU driver, so it links
// no GPU library and looks the few functions it needs up at run time.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "gpu/nvml.hpp"

namespace xlaunch::gpu {
namespace {

using Device = void*;
struct Memory {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned gpu, memory;
};
// nvmlProcessInfo_t as the _v3 (and _v2) entry points fill it.
struct ProcessInfo {
  unsigned pid;
  unsigned long long used_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
constexpr int kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE

template <typename F>
bool bind(void* lib, const char* symbol, F& into) {
  into = reinterpret_cast<F>(::dlsym(lib, symbol));
  return into != nullptr;
}

const char* library_override() {
  const char* path = std::getenv("XLAUNCH_NVML_LIBRARY");
  return path != nullptr && *path != '\0' ? path : nullptr;
}

// The driver's library to load, or null when no NVIDIA driver runs here: NVML cannot
// initialise without the driver's device node (/dev/dxg under WSL), and looking for the
// library through every directory of the loader's path costs a CPU-only launch about 80
// system calls.
const char* library_path() {
  if (const char* path = library_override()) return path;
  const bool driver = ::access("/dev/nvidiactl", F_OK) == 0 || ::access("/dev/dxg", F_OK) == 0;
  return driver ? "libnvidia-ml.so.1" : nullptr;
}

void* open_library() {
  const char* path = library_path();
  return path == nullptr ? nullptr : ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

struct NvmlSession::Impl {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Device*) = nullptr;
  int (*name)(Device, char*, unsigned) = nullptr;
  int (*uuid)(Device, char*, unsigned) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*capability)(Device, int*, int*) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*processes)(Device, unsigned*, ProcessInfo*) = nullptr;
  std::vector<ProcessInfo> buffer = std::vector<ProcessInfo>(64);
  bool initialised = false;
  bool kept_until_exit = false;

  ~Impl() {
    if (kept_until_exit) return;
    if (initialised) shutdown();
    if (lib) ::dlclose(lib);
  }
};

NvmlSession::NvmlSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NvmlSession::~NvmlSession() = default;

std::unique_ptr<NvmlSession> NvmlSession::open() {
  auto impl = std::make_unique<Impl>();
  impl->lib = open_library();
  if (impl->lib == nullptr) return nullptr;
  void* lib = impl->lib;
  // Drivers since r470 export the _v3 process list; older ones only _v2.
  const bool ok =
      bind(lib, "nvmlInit_v2", impl->init) && bind(lib, "nvmlShutdown", impl->shutdown) &&
      bind(lib, "nvmlDeviceGetCount_v2", impl->count) &&
      bind(lib, "nvmlDeviceGetHandleByIndex_v2", impl->handle) &&
      bind(lib, "nvmlDeviceGetName", impl->name) && bind(lib, "nvmlDeviceGetUUID", impl->uuid) &&
      bind(lib, "nvmlDeviceGetMemoryInfo", impl->memory) &&
      bind(lib, "nvmlDeviceGetCudaComputeCapability", impl->capability) &&
      bind(lib, "nvmlSystemGetDriverVersion", impl->driver) &&
      bind(lib, "nvmlDeviceGetUtilizationRates", impl->utilization) &&
      (bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", impl->processes) ||
       bind(lib, "nvmlDeviceGetComputeRunningProcesses_v2", impl->processes));
  if (!ok || impl->init() != 0) return nullptr;
  impl->initialised = true;
  return std::unique_ptr<NvmlSession>(new NvmlSession(std::move(impl)));
}

void NvmlSession::keep_until_exit() { impl_->kept_until_exit = true; }

NvmlReport NvmlSession::report() {
  Impl& nvml = *impl_;
  NvmlReport report;
  std::array<char, 96> text{};
  if (nvml.driver(text.data(), text.size()) == 0) report.driver_version = text.data();
  unsigned count = 0;
  if (nvml.count(&count) != 0) return report;
  for (unsigned i = 0; i < count; ++i) {
    Device device = nullptr;
    if (nvml.handle(i, &device) != 0) continue;
    GpuInfo gpu;
    gpu.index = i;
    if (nvml.name(device, text.data(), text.size()) == 0) gpu.name = text.data();
    if (nvml.uuid(device, text.data(), text.size()) == 0) gpu.uuid = text.data();
    Memory memory{};
    if (nvml.memory(device, &memory) == 0) gpu.memory_bytes = memory.total;
    nvml.capability(device, &gpu.compute_major, &gpu.compute_minor);
    report.gpus.push_back(gpu);
  }
  return report;
}

std::optional<NvmlReport> query_nvml() {
  std::unique_ptr<NvmlSession> session = NvmlSession::open();
  if (!session) return std::nullopt;
  return session->report();
}

std::optional<GpuReading> NvmlSession::read(unsigned index) {
  Impl& nvml = *impl_;
  Device device = nullptr;
  if (nvml.handle(index, &device) != 0) return std::nullopt;
  GpuReading reading;
  Memory memory{};
  if (nvml.memory(device, &memory) != 0) return std::nullopt;
  reading.memory_used = memory.used;
  reading.memory_total = memory.total;
  Utilization utilization{};
  if (nvml.utilization(device, &utilization) == 0) reading.utilization = utilization.gpu;
  for (int tries = 0; tries < 3; ++tries) {
    unsigned count = static_cast<unsigned>(nvml.buffer.size());
    const int rc = nvml.processes(device, &count, nvml.buffer.data());
    if (rc == kInsufficientSize) {  // more processes than room: grow and ask again
      nvml.buffer.resize(std::max<std::size_t>(count + 16, nvml.buffer.size() * 2));
      continue;
    }
    if (rc != 0) break;
    for (unsigned i = 0; i < count && i < nvml.buffer.size(); ++i) {
      // NVML reports "not available" as ~0ULL.
      const unsigned long long used = nvml.buffer[i].used_memory;
      reading.processes.push_back(
          GpuProcess{static_cast<long>(nvml.buffer[i].pid), used == ~0ULL ? 0 : used});
    }
    break;
  }
  return reading;
}

}  // namespace xlaunch::gpu
