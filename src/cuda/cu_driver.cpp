#include "cuda/cu_driver.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "cuda/cu_compiler.h"
#include "wick/config.h"
#include "wick/error.h"

namespace wick::cuda {

namespace {

// What a buffer handle points at: the device address, and the host address of mapped memory.
struct BufferObj {
  CUdeviceptr device = 0;
  void* host = nullptr;  // pinned host memory (HostVisible), else null
  bool adopted = false;  // other code's memory (adopt): never freed here
};

BufferObj& buffer_of(uint64_t handle) {
  return *reinterpret_cast<BufferObj*>(static_cast<uintptr_t>(handle));
}

struct CuPipeline final : gpu::Pipeline {
  const DriverApi* api = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  uint32_t block = 0;
  bool dependent_launch = false;  // its kernels wait for the previous grid (common.cuh)
  ~CuPipeline() override {
    if (module) api->cuModuleUnload(module);
  }
};

// The kernels' argument (kernels/cuda/include/common.cuh): bindings, then the parameter block.
struct KernelArgs {
  CUdeviceptr buffers[gpu::kMaxBindings];
  alignas(8) uint32_t params[gpu::kMaxPushConstantBytes / 4];
};
static_assert(sizeof(KernelArgs) == 8 * gpu::kMaxBindings + gpu::kMaxPushConstantBytes);

const DriverApi& api_or_fail() {
  std::string why;
  const DriverApi* api = driver_api(&why);
  if (!api) fail(ErrorKind::Device, "cuda", why);
  return *api;
}

int attribute(const DriverApi& api, CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  check(api, api.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
  return v;
}

}  // namespace

int cuda_device_count(std::string* why) {
  const DriverApi* api = driver_api(why);
  if (!api) return 0;
  int n = 0;
  if (api->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  if (n == 0 && why) *why = "the NVIDIA driver reports no CUDA device";
  return n;
}

CuDriver::CuDriver(int ordinal) : api_(api_or_fail()), ordinal_(ordinal) {
  int n = 0;
  check(api_, api_.cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= n)
    fail(ErrorKind::Device, "cuda", "no CUDA device ", ordinal, " (", n, " device(s))");
  std::string why;
  if (!nvrtc_available(&why)) fail(ErrorKind::Device, "cuda", "kernels cannot be compiled: ", why);
  check(api_, api_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  check(api_, api_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
  check(api_, api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  char name[256] = {};
  check(api_, api_.cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
  caps_.name = name;
  caps_.float64 = caps_.int64 = caps_.storage16 = caps_.storage8 = true;
  size_t total = 0;
  check(api_, api_.cuDeviceTotalMem(&total, device_), "cuDeviceTotalMem");
  caps_.device_local_bytes = total;
  caps_.max_storage_buffer_range = total;
  caps_.max_group_count_x =
      static_cast<uint32_t>(attribute(api_, device_, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X));
  caps_.max_group_count_z =
      static_cast<uint32_t>(attribute(api_, device_, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z));
  caps_.max_workgroup_size =
      static_cast<uint32_t>(attribute(api_, device_, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  caps_.subgroup_size =
      static_cast<uint32_t>(attribute(api_, device_, CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  // Static shared memory per block (the kernels declare theirs statically).
  caps_.max_shared_memory = 48 * 1024;
  caps_.subgroup_arithmetic = true;
  caps_.sm_major = attribute(api_, device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  caps_.sm_minor = attribute(api_, device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  caps_.int8_mma = caps_.sm_major >= 8;  // mma.sync m16n8k16 .s8
  caps_.multiprocessors = attribute(api_, device_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  check(api_, api_.cuDriverGetVersion(&caps_.driver_version), "cuDriverGetVersion");
  caps_.nvrtc_version = nvrtc_version();
  dependent_launch_ = caps_.sm_major >= 9 && knobs().cuda_dependent_launch &&
                      api_.cuLaunchKernelEx && api_.cuModuleGetGlobal;
}

CuDriver::~CuDriver() {
  make_current();
  api_.cuStreamSynchronize(stream_);
  for (auto& [id, ev] : pending_) api_.cuEventDestroy(ev);
  for (CUevent ev : spare_) api_.cuEventDestroy(ev);
  api_.cuStreamDestroy(stream_);
  api_.cuDevicePrimaryCtxRelease(device_);
}

void CuDriver::make_current() const {
  // The driver API works on the calling thread's current context; ops come from any thread.
  thread_local CUcontext current = nullptr;
  if (current != context_) {
    check(api_, api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    current = context_;
  }
}

const gpu::KernelLanguage& CuDriver::language() const {
  static const gpu::KernelLanguage cuda{gpu::cuda_kernel_files(), ".cu", true};
  return cuda;
}

void CuDriver::add_capability_defines(gpu::Defines& defines) const {
  defines.emplace_back("WICK_F64", "1");
  defines.emplace_back("WICK_I64", "1");
}

std::string CuDriver::identity() const {
  std::ostringstream os;
  os << "cuda|" << caps_.name << "|sm_" << caps_.sm_major << caps_.sm_minor << "|driver "
     << caps_.driver_version << "|nvrtc " << caps_.nvrtc_version;
  return os.str();
}

// ---- memory ------------------------------------------------------------------------------------

gpu::Allocation CuDriver::allocate(size_t bytes, gpu::MemoryKind kind) {
  make_current();
  const size_t size = std::max<size_t>((bytes + 255) / 256 * 256, 256);
  auto obj = std::make_unique<BufferObj>();
  CUresult r;
  if (kind == gpu::MemoryKind::HostVisible) {
    r = api_.cuMemHostAlloc(&obj->host, size, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_SUCCESS) r = api_.cuMemHostGetDevicePointer(&obj->device, obj->host, 0);
  } else {
    r = api_.cuMemAlloc(&obj->device, size);
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    fail(ErrorKind::OutOfMemory, "cuda", "allocating ", bytes, " bytes of ",
         kind == gpu::MemoryKind::HostVisible ? "pinned host" : "device", " memory on ", caps_.name,
         " failed: out of memory (", caps_.device_local_bytes, " bytes on the device)");
  check(api_, r, "allocate");
  gpu::Allocation a;
  a.size = size;
  a.mapped = static_cast<std::byte*>(obj->host);
  a.handle = reinterpret_cast<uintptr_t>(obj.release());
  return a;
}

void CuDriver::free(const gpu::Allocation& a) {
  {
    std::lock_guard<std::mutex> lock(frees_mu_);
    if (capturing_) {
      deferred_frees_.push_back(a);
      return;
    }
  }
  std::unique_ptr<BufferObj> obj(&buffer_of(a.handle));
  if (obj->adopted) return;
  make_current();
  if (obj->host)
    api_.cuMemFreeHost(obj->host);
  else
    api_.cuMemFree(obj->device);
}

CUdeviceptr CuDriver::address(uint64_t handle) {
  return buffer_of(handle).device;
}

gpu::Allocation CuDriver::adopt(uint64_t address, size_t bytes) {
  make_current();
  const auto p = static_cast<CUdeviceptr>(address);
  auto attribute = [&](CUpointer_attribute what, void* out) {
    return api_.cuPointerGetAttribute(out, what, p);
  };
  auto refuse = [&](auto&&... why) {
    fail(ErrorKind::Device, "from_blob", "memory at 0x", std::hex, address, std::dec, " (", bytes,
         " bytes) ", why..., "; wick uses device memory of cuda:", ordinal_, " (", caps_.name,
         ") in place");
  };
  if (bytes > 0) {
    unsigned int type = 0;
    if (attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, &type) != CUDA_SUCCESS)
      refuse("is not memory the CUDA driver knows (host memory?)");
    if (type != CU_MEMORYTYPE_DEVICE)
      refuse("is ", type == CU_MEMORYTYPE_HOST ? "host memory" : "not device memory");
    int device = -1;
    check(api_, attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &device), "cuPointerGetAttribute");
    if (device != ordinal_) refuse("is on CUDA device ", device);
    // Memory of another context is not mapped in the primary one (virtual memory mappings
    // belong to none).
    CUcontext context = nullptr;
    if (attribute(CU_POINTER_ATTRIBUTE_CONTEXT, &context) == CUDA_SUCCESS && context &&
        context != context_)
      refuse("belongs to another CUDA context than the device's primary one");
    CUdeviceptr start = 0;
    size_t size = 0;
    if (attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, &start) == CUDA_SUCCESS &&
        attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, &size) == CUDA_SUCCESS &&
        p - start + bytes > size)
      refuse("runs past the end of its allocation (", size - (p - start), " bytes from there)");
  }
  auto obj = std::make_unique<BufferObj>();
  obj->device = p;
  obj->adopted = true;
  gpu::Allocation a;
  a.size = bytes;
  a.handle = reinterpret_cast<uintptr_t>(obj.release());
  return a;
}

void CuDriver::wait_for_other_work() {
  make_current();
  check(api_, api_.cuStreamSynchronize(CU_STREAM_LEGACY), "cuStreamSynchronize(legacy stream)");
}

// ---- kernels -----------------------------------------------------------------------------------

gpu::ModuleCode CuDriver::compile(const gpu::CompileRequest& req) {
  return compile_cuda(req, caps_.sm_major, caps_.sm_minor);
}

bool CuDriver::validate_module(const gpu::ModuleCode& code, const std::string&) {
  return cubin_is_whole(code);
}

std::unique_ptr<gpu::Pipeline> CuDriver::create_pipeline(const gpu::ModuleCode& code,
                                                         const std::string& entry,
                                                         std::span<const uint32_t>,
                                                         uint32_t block) {
  make_current();
  auto p = std::make_unique<CuPipeline>();
  p->api = &api_;
  p->block = block;
  check(api_, api_.cuModuleLoadData(&p->module, code.data()), "cuModuleLoadData");
  // GLSL's entry is "main"; a CUDA kernel cannot be called that.
  const std::string name = entry == "main" ? "wick_main" : entry;
  check(api_, api_.cuModuleGetFunction(&p->function, p->module, name.c_str()),
        "cuModuleGetFunction");
  if (dependent_launch_) {
    CUdeviceptr marker = 0;
    size_t bytes = 0;
    p->dependent_launch = api_.cuModuleGetGlobal(&marker, &bytes, p->module,
                                                 "wick_waits_for_previous_grid") == CUDA_SUCCESS;
  }
  return p;
}

// ---- recording ---------------------------------------------------------------------------------

CUstream CuDriver::stream() {
  make_current();
  return stream_;
}

void CuDriver::record_dispatch(const gpu::Dispatch& d) {
  make_current();
  const auto& p = static_cast<const CuPipeline&>(*d.pipeline);
  KernelArgs args{};
  for (size_t i = 0; i < d.buffers.size(); i++) args.buffers[i] = address(d.buffers[i].handle);
  std::memcpy(args.params, d.push_constants.data(), d.push_constants.size_bytes());
  size_t size = sizeof args;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  if (p.dependent_launch) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = d.groups[0];
    config.gridDimY = d.groups[1];
    config.gridDimZ = d.groups[2];
    config.blockDimX = p.block;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = stream_;
    config.attrs = &attr;
    config.numAttrs = 1;
    check(api_, api_.cuLaunchKernelEx(&config, p.function, nullptr, extra), "cuLaunchKernelEx");
    return;
  }
  check(api_,
        api_.cuLaunchKernel(p.function, d.groups[0], d.groups[1], d.groups[2], p.block, 1, 1, 0,
                            stream_, nullptr, extra),
        "cuLaunchKernel");
}

void CuDriver::record_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                           uint64_t bytes) {
  make_current();
  check(api_,
        api_.cuMemcpyAsync(address(dst) + dst_offset, address(src) + src_offset, bytes, stream_),
        "cuMemcpyAsync");
}

void CuDriver::record_fill(uint64_t dst, uint64_t offset, uint64_t bytes, uint32_t pattern) {
  make_current();
  check(api_, api_.cuMemsetD32Async(address(dst) + offset, pattern, bytes / 4, stream_),
        "cuMemsetD32Async");
}

// ---- capture ----------------------------------------------------------------------------------

namespace {

struct CuGraph final : gpu::Recording {
  const DriverApi* api = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~CuGraph() override {
    if (exec) api->cuGraphExecDestroy(exec);
    if (graph) api->cuGraphDestroy(graph);
  }
};

}  // namespace

void CuDriver::begin_capture() {
  make_current();
  check(api_, api_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
        "cuStreamBeginCapture");
  std::lock_guard<std::mutex> lock(frees_mu_);
  capturing_ = true;
}

std::unique_ptr<gpu::Recording> CuDriver::end_capture() {
  make_current();
  auto g = std::make_unique<CuGraph>();
  g->api = &api_;
  const CUresult ended = api_.cuStreamEndCapture(stream_, &g->graph);
  std::vector<gpu::Allocation> deferred;
  {
    std::lock_guard<std::mutex> lock(frees_mu_);
    capturing_ = false;
    deferred.swap(deferred_frees_);
  }
  for (const gpu::Allocation& a : deferred) free(a);
  check(api_, ended, "cuStreamEndCapture");
  check(api_, api_.cuGraphInstantiate(&g->exec, g->graph, 0), "cuGraphInstantiate");
  return g;
}

void CuDriver::replay(const gpu::Recording& r, uint64_t id) {
  make_current();
  check(api_, api_.cuGraphLaunch(static_cast<const CuGraph&>(r).exec, stream_), "cuGraphLaunch");
  commit(id);
}

void CuDriver::commit(uint64_t id) {
  make_current();
  CUevent ev = nullptr;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    if (!spare_.empty()) {
      ev = spare_.back();
      spare_.pop_back();
    }
  }
  if (!ev) check(api_, api_.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(api_, api_.cuEventRecord(ev, stream_), "cuEventRecord");
  std::lock_guard<std::mutex> lock(events_mu_);
  pending_.emplace_back(id, ev);
}

void CuDriver::wait(uint64_t id) {
  if (completed_.load() >= id) return;
  make_current();
  CUevent ev = nullptr;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    for (const auto& [pid, pev] : pending_)
      if (pid >= id) {
        ev = pev;
        break;
      }
  }
  // An event recycled meanwhile belongs to a later submission: waiting for it waits longer,
  // never too little.
  if (ev) check(api_, api_.cuEventSynchronize(ev), "cuEventSynchronize");
  uint64_t done = completed_.load();
  while (done < id && !completed_.compare_exchange_weak(done, id)) {
  }
  completed();  // recycle the events that finished
}

uint64_t CuDriver::completed() {
  make_current();
  std::lock_guard<std::mutex> lock(events_mu_);
  while (!pending_.empty()) {
    const CUresult r = api_.cuEventQuery(pending_.front().second);
    if (r == CUDA_ERROR_NOT_READY) break;
    check(api_, r, "cuEventQuery");
    uint64_t done = completed_.load();
    const uint64_t id = pending_.front().first;
    while (done < id && !completed_.compare_exchange_weak(done, id)) {
    }
    spare_.push_back(pending_.front().second);
    pending_.pop_front();
  }
  return completed_.load();
}

}  // namespace wick::cuda
