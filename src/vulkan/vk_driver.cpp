#include "vulkan/vk_driver.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "vulkan/vk_compiler.h"
#include "wick/config.h"
#include "wick/error.h"

namespace wick::vulkan {

namespace {

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default:
      return "VkResult error";
  }
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    fail(ErrorKind::Internal, "vulkan", what, " failed: ", result_name(r), " (", r, ")");
}

// A zeroed Vulkan info struct with its sType set.
template <typename T>
T vk_struct(VkStructureType type) {
  T t{};
  t.sType = type;
  return t;
}

// An extension's feature structure as the device reports it (queried on its own; pNext null).
template <typename T>
T device_features(VkPhysicalDevice physical, VkStructureType type) {
  auto want = vk_struct<T>(type);
  auto f2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  f2.pNext = &want;
  vkGetPhysicalDeviceFeatures2(physical, &f2);
  want.pNext = nullptr;
  return want;
}

constexpr VkPipelineStageFlags kWorkStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

// Physical devices usable by wick, in enumeration order.
std::vector<VkPhysicalDevice> usable_devices(VkInstance inst) {
  uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(inst, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPhysicalDevice> all(n);
  vkEnumeratePhysicalDevices(inst, &n, all.data());
  std::vector<VkPhysicalDevice> out;
  for (VkPhysicalDevice pd : all) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qs(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qs.data());
    const bool compute = std::any_of(qs.begin(), qs.end(), [](const VkQueueFamilyProperties& q) {
      return (q.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
    });
    if (compute && p.apiVersion >= VK_API_VERSION_1_2) out.push_back(pd);
  }
  return out;
}

}  // namespace

// ---- process exit ------------------------------------------------------------------------------
// Some drivers (NVIDIA's) tear themselves down in an atexit handler; Vulkan calls after it crash.
// Devices held in static storage (Device::parse's table) are destroyed after that handler, so a
// handler of ours, registered after every device creation (atexit runs in reverse order), first
// finishes each live device: queue idle, pipeline cache saved. Teardown after it makes no Vulkan
// calls; the OS reclaims the rest.

namespace {

std::mutex g_live_mu;
std::vector<VkDriver*> g_live;
std::atomic<bool> g_exiting{false};

void finish_live_devices() {
  std::lock_guard<std::mutex> lock(g_live_mu);
  if (g_exiting.exchange(true)) return;
  for (VkDriver* d : g_live) d->finish_for_exit();
}

}  // namespace

bool VkDriver::exiting() {
  return g_exiting.load();
}

// ---- the process-wide instance ----------------------------------------------------------------

struct VulkanInstance {
  VkInstance handle = VK_NULL_HANDLE;
  ~VulkanInstance() {
    if (handle && !VkDriver::exiting()) vkDestroyInstance(handle, nullptr);
  }
  // Created once; null when there is no loader or no driver. Drivers keep it alive.
  static std::shared_ptr<VulkanInstance> get() {
    static std::mutex mu;
    static std::shared_ptr<VulkanInstance> inst;
    static bool tried = false;
    std::lock_guard<std::mutex> lock(mu);
    if (!tried) {
      tried = true;
      // Mesa's own shader disk cache races with pipeline teardown in lavapipe (Mesa 22.3): with it
      // on, 4 of 16 processes hung at exit (a driver thread spinning in LLVM's MCJIT destructor
      // while the queue drained); with it off, none of 16. wick persists its kernels and the
      // VkPipelineCache data itself, so the driver's cache is redundant: off unless the user set
      // it.
      setenv("MESA_SHADER_CACHE_DISABLE", "true", /*overwrite=*/0);
      auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
      app.pApplicationName = "wick";
      app.apiVersion = VK_API_VERSION_1_2;
      auto ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
      ci.pApplicationInfo = &app;
      auto created = std::make_shared<VulkanInstance>();
      if (vkCreateInstance(&ci, nullptr, &created->handle) == VK_SUCCESS) {
        inst = created;
        std::atexit(finish_live_devices);  // see "process exit" above
      } else {
        created->handle = VK_NULL_HANDLE;
      }
    }
    return inst;
  }
};

int physical_device_count() {
  auto inst = VulkanInstance::get();
  return inst ? static_cast<int>(usable_devices(inst->handle).size()) : 0;
}

// ---- objects behind the runtime's opaque handles -----------------------------------------------

struct VkDriver::BufferObj {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;  // its own memory, or null for a range of a block
  MemoryBlock* block = nullptr;            // the shared block it lies in
  VkDeviceSize offset = 0, span = 0;       // its range there
};

// Device memory that several small buffers share, each at its own range. vkAllocateMemory cost
// ~0.2 ms a call on the H100 (575 calls, 102-127 ms, in a process that loads SmolLM2-135M and
// decodes its first tokens: a third of the first decode step and most of the step's capture,
// session 25), so buffers up to kSharedMaxBytes take ranges of blocks of kBlockBytes.
struct VkDriver::MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint32_t type = 0;
  gpu::MemoryKind kind = gpu::MemoryKind::DeviceLocal;  // one type may serve both kinds
  VkDeviceSize used = 0;                                // bytes of its ranges handed out
  std::byte* mapped = nullptr;                          // host-visible blocks: mapped once, whole
  std::map<VkDeviceSize, VkDeviceSize> holes;  // free ranges: offset -> bytes, never adjacent
};

namespace {
constexpr VkDeviceSize kSharedMaxBytes = 4ull << 20;
constexpr VkDeviceSize kBlockBytes = 32ull << 20;
}  // namespace

struct VkDriver::PipelineObj final : gpu::Pipeline {
  VkDevice device;
  VkPipeline pipeline;
  PipelineObj(VkDevice d, VkPipeline p) : device(d), pipeline(p) {}
  ~PipelineObj() override {
    if (!VkDriver::exiting()) vkDestroyPipeline(device, pipeline, nullptr);
  }
};

// A command buffer, free once the submission that last used it finished.
struct VkDriver::CmdList {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  uint64_t submission = 0;              // 0: never submitted
  std::vector<VkDescriptorPool> pools;  // descriptor-pool fallback only
  size_t pool_index = 0;
  VkProfiler::Marks marks;  // WICK_VK_PROFILE only
};

void VkDriver::finish_for_exit() {
  vkDeviceWaitIdle(device_);
  save_pipeline_cache();
  if (profile_) {
    for (auto& l : lists_) profile_->harvest(l->marks, l->submission);
    profile_->print();
  }
}

VkDriver::BufferObj& VkDriver::buffer_of(uint64_t handle) {
  return *reinterpret_cast<VkDriver::BufferObj*>(static_cast<uintptr_t>(handle));
}

// ---- device ------------------------------------------------------------------------------------

VkDriver::VkDriver(int ordinal) : instance_(VulkanInstance::get()) {
  if (!instance_)
    fail(ErrorKind::Device, "vulkan",
         "no Vulkan driver found (is the loader and an ICD installed?)");
  const auto devices = usable_devices(instance_->handle);
  if (ordinal < 0 || ordinal >= static_cast<int>(devices.size()))
    fail(ErrorKind::Device, "vulkan", "no Vulkan device ", ordinal, " (", devices.size(),
         " usable device(s))");
  physical_ = devices[static_cast<size_t>(ordinal)];
  create_device();
}

bool VkDriver::has_coopmat_f16_shape() const {
  auto list = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance_->handle, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!list) return false;
  uint32_t n = 0;
  if (list(physical_, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(
      n, vk_struct<VkCooperativeMatrixPropertiesNV>(
             VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
  if (list(physical_, &n, shapes.data()) != VK_SUCCESS) return false;
  return std::any_of(shapes.begin(), shapes.begin() + n, [](const auto& p) {
    return p.MSize == 16 && p.NSize == 16 && p.KSize == 16 &&
           p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           p.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

void VkDriver::create_device() {
  // Properties.
  auto p12 = vk_struct<VkPhysicalDeviceVulkan12Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES);
  auto sub = vk_struct<VkPhysicalDeviceSubgroupProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  sub.pNext = &p12;
  auto props =
      vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props.pNext = &sub;
  vkGetPhysicalDeviceProperties2(physical_, &props);
  const VkPhysicalDeviceLimits& lim = props.properties.limits;
  caps_.name = props.properties.deviceName;
  caps_.vendor_id = props.properties.vendorID;
  caps_.device_id = props.properties.deviceID;
  caps_.driver_version = props.properties.driverVersion;
  caps_.api_version = props.properties.apiVersion;
  caps_.is_cpu = props.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  caps_.driver_name = p12.driverName;
  caps_.preserve_nan32 = p12.shaderSignedZeroInfNanPreserveFloat32;
  caps_.preserve_nan64 = p12.shaderSignedZeroInfNanPreserveFloat64;
  caps_.preserve_denorm32 = p12.shaderDenormPreserveFloat32;
  caps_.preserve_denorm64 = p12.shaderDenormPreserveFloat64;
  caps_.driver_info = p12.driverInfo;
  std::ostringstream uuid;
  for (uint8_t b : props.properties.pipelineCacheUUID)
    uuid << "0123456789abcdef"[b >> 4] << "0123456789abcdef"[b & 15];
  caps_.pipeline_cache_uuid = uuid.str();
  caps_.max_storage_buffer_range = lim.maxStorageBufferRange;
  caps_.max_group_count_x = lim.maxComputeWorkGroupCount[0];
  caps_.max_workgroup_size =
      std::min(lim.maxComputeWorkGroupInvocations, lim.maxComputeWorkGroupSize[0]);
  caps_.max_group_count_z = lim.maxComputeWorkGroupCount[2];
  caps_.subgroup_size = sub.subgroupSize;
  caps_.max_shared_memory = lim.maxComputeSharedMemorySize;
  // Every pipeline's layout binds kMaxBindings storage buffers (rope_kv uses them all).
  if (lim.maxPerStageDescriptorStorageBuffers < gpu::kMaxBindings)
    fail(ErrorKind::Device, "vulkan", caps_.name, " binds ",
         lim.maxPerStageDescriptorStorageBuffers,
         " storage buffers per stage; wick's kernels need ", gpu::kMaxBindings);
  caps_.subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                              (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  for (uint32_t i = 0; i < memory_.memoryHeapCount; i++)
    if (memory_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      caps_.device_local_bytes =
          std::max<uint64_t>(caps_.device_local_bytes, memory_.memoryHeaps[i].size);

  // Features: take what wick uses and the device has; the timeline semaphore is required.
  auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  f11.pNext = &f12;
  auto have = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  have.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(physical_, &have);
  if (!f12.timelineSemaphore)
    fail(ErrorKind::Device, "vulkan", caps_.name, " lacks timeline semaphores (Vulkan 1.2)");
  auto e12 = vk_struct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  e12.timelineSemaphore = VK_TRUE;
  e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
  e12.shaderInt8 = f12.shaderInt8;
  auto e11 = vk_struct<VkPhysicalDeviceVulkan11Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
  e11.pNext = &e12;
  auto enable = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  enable.features.shaderFloat64 = have.features.shaderFloat64;
  enable.features.shaderInt64 = have.features.shaderInt64;
  enable.features.shaderInt16 = have.features.shaderInt16;
  enable.pNext = &e11;
  caps_.float64 = have.features.shaderFloat64;
  caps_.int64 = have.features.shaderInt64;
  caps_.storage16 = f11.storageBuffer16BitAccess;
  caps_.storage8 = f12.storageBuffer8BitAccess;

  uint32_t next = 0;
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &next, nullptr);
  std::vector<VkExtensionProperties> exts(next);
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &next, exts.data());
  auto has_ext = [&](const char* name) {
    return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
      return std::strcmp(e.extensionName, name) == 0;
    });
  };
  std::vector<const char*> enable_exts;
  caps_.push_descriptor = has_ext(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (caps_.push_descriptor) {  // a dispatch pushes up to kMaxBindings descriptors
    auto push = vk_struct<VkPhysicalDevicePushDescriptorPropertiesKHR>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR);
    auto p2 =
        vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    p2.pNext = &push;
    vkGetPhysicalDeviceProperties2(physical_, &p2);
    caps_.push_descriptor = push.maxPushDescriptors >= gpu::kMaxBindings;
  }
  for (const char* e :
       {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix", "VK_NV_cooperative_matrix2"})
    if (has_ext(e)) {
      if (!caps_.cooperative_matrix.empty()) caps_.cooperative_matrix += ' ';
      caps_.cooperative_matrix += e;
    }
  if (caps_.push_descriptor) enable_exts.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);

  // Packed 8-bit dot products (OpSDot, emitted through GL_EXT_spirv_intrinsics: Debian 12's
  // glslang has no GLSL extension for them): qmatvec's integer loop takes them where they exist.
  auto dot = vk_struct<VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR);
  if (has_ext(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME) &&
      device_features<VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR>(
          physical_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR)
          .shaderIntegerDotProduct) {
    caps_.int_dot = true;
    dot.shaderIntegerDotProduct = VK_TRUE;
    dot.pNext = e11.pNext;
    e11.pNext = &dot;
    enable_exts.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }

  // Cooperative matrices (tensor cores) through VK_NV_cooperative_matrix, the one Debian 12's
  // glslang compiles: used when the device lists the 16x16x16 f16 shape the kernel is written for.
  auto coop = vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  if (has_ext(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) && f12.shaderFloat16 &&
      f12.vulkanMemoryModel && f11.storageBuffer16BitAccess && caps_.subgroup_size == 32 &&
      has_coopmat_f16_shape() &&
      device_features<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
          physical_, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV)
          .cooperativeMatrix) {
    caps_.coopmat_f16 = true;
    coop.cooperativeMatrix = VK_TRUE;
    e12.shaderFloat16 = VK_TRUE;
    e12.vulkanMemoryModel = VK_TRUE;
    e12.pNext = &coop;
    enable_exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }

  // A queue that computes; a compute-only family when there is one (WICK_VK_QUEUE=universal:
  // one that also does graphics).
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, qs.data());
  const bool want_graphics = knobs().vk_universal_queue;
  int best = -1;
  for (uint32_t i = 0; i < nq; i++) {
    if (!(qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    const bool preferred = ((qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0) == want_graphics;
    if (best < 0 || preferred) best = static_cast<int>(i);
    if (preferred) break;
  }
  queue_family_ = static_cast<uint32_t>(best);
  const float priority = 1.0f;
  auto qci = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  auto dci = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  dci.pNext = &enable;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(enable_exts.size());
  dci.ppEnabledExtensionNames = enable_exts.data();
  check(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    g_live.push_back(this);
  }
  std::atexit(finish_live_devices);  // after the driver's own handlers, so it runs before them
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (caps_.push_descriptor)
    push_descriptor_set_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  caps_.push_descriptor = push_descriptor_set_ != nullptr;

  auto tci = vk_struct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  tci.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  auto sci = vk_struct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
  sci.pNext = &tci;
  check(vkCreateSemaphore(device_, &sci, nullptr, &timeline_), "vkCreateSemaphore");

  auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family_;
  check(vkCreateCommandPool(device_, &pci, nullptr, &command_pool_), "vkCreateCommandPool");

  VkDescriptorSetLayoutBinding bindings[gpu::kMaxBindings];
  for (uint32_t i = 0; i < gpu::kMaxBindings; i++)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto lci = vk_struct<VkDescriptorSetLayoutCreateInfo>(
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  if (caps_.push_descriptor) lci.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  lci.bindingCount = gpu::kMaxBindings;
  lci.pBindings = bindings;
  check(vkCreateDescriptorSetLayout(device_, &lci, nullptr, &set_layout_),
        "vkCreateDescriptorSetLayout");
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, gpu::kMaxPushConstantBytes};
  auto plci = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &set_layout_;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &push;
  check(vkCreatePipelineLayout(device_, &plci, nullptr, &pipeline_layout_),
        "vkCreatePipelineLayout");
  if (knobs().vk_profile)
    profile_ = VkProfiler::create(device_, qs[queue_family_].timestampValidBits,
                                  lim.timestampPeriod, caps_.name);
}

VkDriver::~VkDriver() {
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    g_live.erase(std::remove(g_live.begin(), g_live.end(), this), g_live.end());
  }
  if (!device_ || exiting()) {
    if (profile_) profile_->forget_pools();  // no Vulkan calls at exit: the OS takes them
    return;
  }
  vkDeviceWaitIdle(device_);
  for (auto& l : returned_) lists_.push_back(std::move(l));
  if (profile_) {
    for (auto& l : lists_) profile_->harvest(l->marks, l->submission);
    profile_.reset();  // prints; destroys the query pools while the device lives
  }
  for (auto& l : lists_)
    for (VkDescriptorPool p : l->pools) vkDestroyDescriptorPool(device_, p, nullptr);
  lists_.clear();
  for (auto& b : blocks_) vkFreeMemory(device_, b->memory, nullptr);  // (buffers still held)
  blocks_.clear();
  if (pipeline_cache_) vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
  vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
  vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  vkDestroyCommandPool(device_, command_pool_, nullptr);
  vkDestroySemaphore(device_, timeline_, nullptr);
  vkDestroyDevice(device_, nullptr);
}

std::string VkDriver::identity() const {
  std::ostringstream os;
  os << "vulkan|" << caps_.name << "|" << std::hex << caps_.vendor_id << ":" << caps_.device_id
     << "|driver " << caps_.driver_name << " " << caps_.driver_info << " " << caps_.driver_version
     << "|api " << caps_.api_version << "|cache " << caps_.pipeline_cache_uuid;
  return os.str();
}

// ---- memory ------------------------------------------------------------------------------------

uint32_t VkDriver::memory_type(uint32_t allowed, gpu::MemoryKind kind) const {
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  // Preferred first: device-local for kernels; cached host memory for read-back.
  const std::vector<VkMemoryPropertyFlags> wants =
      kind == gpu::MemoryKind::DeviceLocal
          ? std::vector<VkMemoryPropertyFlags>{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0}
          : std::vector<VkMemoryPropertyFlags>{host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, host};
  for (VkMemoryPropertyFlags want : wants)
    for (uint32_t i = 0; i < memory_.memoryTypeCount; i++)
      if ((allowed & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
  fail(ErrorKind::Device, "vulkan", caps_.name, " has no suitable memory type");
}

VkDriver::MemoryBlock* VkDriver::place(uint32_t type, gpu::MemoryKind kind, VkDeviceSize bytes,
                                       VkDeviceSize alignment, VkDeviceSize& offset) {
  std::lock_guard<std::mutex> lock(blocks_mu_);
  const auto fit = [&](MemoryBlock& b) {  // first fit
    for (auto it = b.holes.begin(); it != b.holes.end(); ++it) {
      const VkDeviceSize at = (it->first + alignment - 1) / alignment * alignment;
      const VkDeviceSize end = it->first + it->second;
      if (at + bytes > end) continue;
      const VkDeviceSize start = it->first;
      b.holes.erase(it);
      if (at > start) b.holes.emplace(start, at - start);
      if (at + bytes < end) b.holes.emplace(at + bytes, end - at - bytes);
      b.used += bytes;
      offset = at;
      return true;
    }
    return false;
  };
  for (auto& b : blocks_)
    if (b->type == type && b->kind == kind && fit(*b)) return b.get();
  auto block = std::make_unique<MemoryBlock>();
  auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  mai.allocationSize = kBlockBytes;
  mai.memoryTypeIndex = type;
  if (vkAllocateMemory(device_, &mai, nullptr, &block->memory) != VK_SUCCESS) return nullptr;
  if (kind == gpu::MemoryKind::HostVisible) {
    void* p = nullptr;
    if (vkMapMemory(device_, block->memory, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) {
      vkFreeMemory(device_, block->memory, nullptr);
      return nullptr;
    }
    block->mapped = static_cast<std::byte*>(p);
  }
  block->type = type;
  block->kind = kind;
  block->holes.emplace(0, kBlockBytes);
  blocks_.push_back(std::move(block));
  MemoryBlock* b = blocks_.back().get();
  const bool placed = fit(*b);  // bytes <= kSharedMaxBytes < kBlockBytes: always
  WICK_ASSERT(placed);
  return b;
}

void VkDriver::release(MemoryBlock* block, VkDeviceSize offset, VkDeviceSize bytes) {
  std::lock_guard<std::mutex> lock(blocks_mu_);
  VkDeviceSize start = offset, end = offset + bytes;
  auto next = block->holes.lower_bound(offset);
  if (next != block->holes.end() && next->first == end) {  // joins the hole after it
    end += next->second;
    next = block->holes.erase(next);
  }
  if (next != block->holes.begin()) {  // and the one before
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      block->holes.erase(prev);
    }
  }
  block->holes.emplace(start, end - start);
  block->used -= bytes;
  if (block->used > 0) return;
  // An empty block goes back to the driver (the pool above keeps the buffers worth keeping).
  vkFreeMemory(device_, block->memory, nullptr);  // unmaps too
  blocks_.erase(std::find_if(blocks_.begin(), blocks_.end(),
                             [&](const auto& b) { return b.get() == block; }));
}

gpu::Allocation VkDriver::allocate(size_t bytes, gpu::MemoryKind kind) {
  if (bytes > caps_.max_storage_buffer_range)
    fail(ErrorKind::OutOfMemory, "vulkan", "a buffer of ", bytes, " bytes exceeds the ",
         caps_.max_storage_buffer_range, "-byte storage-buffer range of ", caps_.name);
  const VkDeviceSize size = std::max<VkDeviceSize>((bytes + 15) / 16 * 16, 16);
  auto obj = std::make_unique<BufferObj>();
  auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bci, nullptr, &obj->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, obj->buffer, &req);
  const uint32_t type = memory_type(req.memoryTypeBits, kind);
  gpu::Allocation a;
  a.size = size;
  if (req.size <= kSharedMaxBytes) {
    if (MemoryBlock* b = place(type, kind, req.size, req.alignment, obj->offset)) {
      obj->block = b;
      obj->span = req.size;
      check(vkBindBufferMemory(device_, obj->buffer, b->memory, obj->offset), "vkBindBufferMemory");
      if (b->mapped) a.mapped = b->mapped + obj->offset;
      a.handle = reinterpret_cast<uintptr_t>(obj.release());
      return a;
    }
  }
  auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  const VkResult r = vkAllocateMemory(device_, &mai, nullptr, &obj->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, obj->buffer, nullptr);
    fail(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
             ? ErrorKind::OutOfMemory
             : ErrorKind::Internal,
         "vulkan", "allocating ", bytes, " bytes on ", caps_.name, " failed: ", result_name(r),
         " (", caps_.device_local_bytes, " bytes of device memory)");
  }
  check(vkBindBufferMemory(device_, obj->buffer, obj->memory, 0), "vkBindBufferMemory");
  if (kind == gpu::MemoryKind::HostVisible) {
    void* p = nullptr;
    check(vkMapMemory(device_, obj->memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    a.mapped = static_cast<std::byte*>(p);
  }
  a.handle = reinterpret_cast<uintptr_t>(obj.release());
  return a;
}

void VkDriver::free(const gpu::Allocation& a) {
  std::unique_ptr<BufferObj> obj(&buffer_of(a.handle));
  free_count_.fetch_add(1, std::memory_order_release);
  if (exiting()) return;
  vkDestroyBuffer(device_, obj->buffer, nullptr);
  if (obj->block)
    release(obj->block, obj->offset, obj->span);
  else
    vkFreeMemory(device_, obj->memory, nullptr);  // unmaps too
}

// ---- kernels -----------------------------------------------------------------------------------

const gpu::KernelLanguage& VkDriver::language() const {
  static const gpu::KernelLanguage glsl{gpu::glsl_kernel_files(), ".comp", false};
  return glsl;
}

void VkDriver::add_capability_defines(gpu::Defines& defines) const {
  const DeviceCaps& c = caps_;
  if (c.float64) defines.emplace_back("WICK_F64", "1");
  if (c.int64) defines.emplace_back("WICK_I64", "1");
  if (c.preserve_nan32) defines.emplace_back("WICK_PRESERVE_NAN32", "1");
  if (c.preserve_denorm32) defines.emplace_back("WICK_PRESERVE_DENORM32", "1");
  if (c.float64 && c.preserve_nan64) defines.emplace_back("WICK_PRESERVE_NAN64", "1");
  if (c.float64 && c.preserve_denorm64) defines.emplace_back("WICK_PRESERVE_DENORM64", "1");
}

gpu::ModuleCode VkDriver::compile(const gpu::CompileRequest& req) {
  return compile_glsl(req);
}

bool VkDriver::validate_module(const gpu::ModuleCode& code, const std::string& entry) {
  // One linear pass over the words. SPIRV-Tools' full validator took 7-10 ms a module here
  // (70 ms of the first decode step's 110 on the H100, session 25): an entry's checksum already
  // proves it is the module wick's compiler produced and stored, so what is left to catch is an
  // entry someone else wrote under the key: not SPIR-V, truncated, or without the entry point.
  if (code.size() < 20 || code.size() % 4 != 0) return false;
  std::vector<uint32_t> words(code.size() / 4);
  std::memcpy(words.data(), code.data(), code.size());
  if (words[0] != 0x07230203u) return false;  // the SPIR-V magic number
  constexpr uint32_t kEntryPoint = 15, kFunction = 54, kFunctionEnd = 56, kFunctionCall = 57;
  uint32_t entry_fn = 0, last_opcode = 0;
  bool in_function = false;
  std::vector<uint32_t> defined, called;
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16, opcode = words[i] & 0xffffu;
    if (count == 0 || i + count > words.size()) return false;        // cut inside an instruction
    if (opcode == kEntryPoint && count >= 4 && words[i + 1] == 5) {  // GLCompute
      const char* name = reinterpret_cast<const char*>(&words[i + 3]);
      const size_t max_len = (count - 3) * 4;
      if (strnlen(name, max_len) < max_len && entry == name) entry_fn = words[i + 2];
    } else if (opcode == kFunction && count >= 5) {
      if (in_function) return false;
      in_function = true;
      defined.push_back(words[i + 2]);
    } else if (opcode == kFunctionEnd) {
      if (!in_function) return false;
      in_function = false;
    } else if (opcode == kFunctionCall && count >= 4) {
      called.push_back(words[i + 3]);
    }
    last_opcode = opcode;
    i += count;
  }
  // Whole: it ends with a function's end, and the entry point and every called function are
  // among the functions it defines (a cut between two functions leaves one out).
  if (entry_fn == 0 || in_function || last_opcode != kFunctionEnd) return false;
  std::sort(defined.begin(), defined.end());
  called.push_back(entry_fn);
  for (uint32_t f : called)
    if (!std::binary_search(defined.begin(), defined.end(), f)) return false;
  return true;
}

std::unique_ptr<gpu::Pipeline> VkDriver::create_pipeline(const gpu::ModuleCode& code,
                                                         const std::string& entry,
                                                         std::span<const uint32_t> constants,
                                                         uint32_t /*block: the WG_SIZE define*/) {
  auto smci = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  std::vector<uint32_t> words((code.size() + 3) / 4);
  std::memcpy(words.data(), code.data(), code.size());
  smci.codeSize = code.size();
  smci.pCode = words.data();
  VkShaderModule module;
  check(vkCreateShaderModule(device_, &smci, nullptr, &module), "vkCreateShaderModule");
  std::vector<VkSpecializationMapEntry> entries(constants.size());
  for (uint32_t i = 0; i < constants.size(); i++) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                            constants.size_bytes(), constants.data()};
  auto cpci =
      vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = module;
  cpci.stage.pName = entry.c_str();
  cpci.stage.pSpecializationInfo = constants.empty() ? nullptr : &spec;
  cpci.layout = pipeline_layout_;
  VkPipeline pipeline;
  const VkResult r =
      vkCreateComputePipelines(device_, pipeline_cache_, 1, &cpci, nullptr, &pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  check(r, "vkCreateComputePipelines");
  pipelines_created_++;
  return std::make_unique<PipelineObj>(device_, pipeline);
}

static std::string pipeline_cache_key(const std::string& identity) {
  return "vk-pipeline-cache\n" + identity;
}

void VkDriver::load_pipeline_cache(const gpu::DiskCache& disk) {
  pipeline_disk_ = disk;
  const auto data = disk.load(pipeline_cache_key(identity()));
  auto ci = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  if (data) {
    ci.initialDataSize = data->size();
    ci.pInitialData = data->data();
  }
  // The driver checks the header itself and ignores data from another driver or device.
  if (vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_) != VK_SUCCESS) {
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    check(vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_), "vkCreatePipelineCache");
  }
}

void VkDriver::save_pipeline_cache() {
  const gpu::DiskCache& disk = pipeline_disk_;
  if (!pipeline_cache_ || pipelines_created_ == 0 || !disk.enabled()) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS || size == 0)
    return;
  std::vector<uint8_t> data(size);
  if (vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  disk.store(pipeline_cache_key(identity()), data);
}

// ---- recording ---------------------------------------------------------------------------------

void VkDriver::return_list(std::unique_ptr<CmdList> list) {
  std::lock_guard<std::mutex> lock(returned_mu_);
  returned_.push_back(std::move(list));
}

VkDriver::CmdList& VkDriver::current() {
  if (open_) return *open_;
  {
    std::lock_guard<std::mutex> lock(returned_mu_);
    for (auto& l : returned_) lists_.push_back(std::move(l));
    returned_.clear();
  }
  const uint64_t done = completed();
  CmdList* list = nullptr;
  if (!capturing_)
    for (auto& l : lists_)
      if (l->submission <= done) {
        list = l.get();
        break;
      }
  if (list) {
    if (profile_) profile_->harvest(list->marks, list->submission);
    check(vkResetCommandBuffer(list->cb, 0), "vkResetCommandBuffer");
    for (VkDescriptorPool p : list->pools) vkResetDescriptorPool(device_, p, 0);
    list->pool_index = 0;
  } else {
    auto fresh = std::make_unique<CmdList>();
    auto ai =
        vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = command_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device_, &ai, &fresh->cb), "vkAllocateCommandBuffers");
    list = fresh.get();
    // A capture's command buffer belongs to its recording, not to the rotation.
    if (capturing_)
      capture_list_ = std::move(fresh);
    else
      lists_.push_back(std::move(fresh));
  }
  list->submission = std::numeric_limits<uint64_t>::max();  // busy until submitted and finished
  auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  // A recording may be submitted again while its previous submission is pending.
  bi.flags = capturing_ ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                        : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(list->cb, &bi), "vkBeginCommandBuffer");
  if (profile_) profile_->begin(list->cb, list->marks);
  open_ = list;
  bound_ = VK_NULL_HANDLE;
  pushed_valid_ = false;
  pushed_words_n_ = 0;
  return *list;
}

VkDescriptorSet VkDriver::allocate_set(CmdList& list) {
  for (;;) {
    if (list.pool_index == list.pools.size()) {
      const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 256 * gpu::kMaxBindings};
      auto ci =
          vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
      ci.maxSets = 256;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkDescriptorPool pool;
      check(vkCreateDescriptorPool(device_, &ci, nullptr, &pool), "vkCreateDescriptorPool");
      list.pools.push_back(pool);
    }
    auto ai =
        vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    ai.descriptorPool = list.pools[list.pool_index];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &set_layout_;
    VkDescriptorSet set;
    const VkResult r = vkAllocateDescriptorSets(device_, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      check(r, "vkAllocateDescriptorSets");
    list.pool_index++;  // this pool is full: the next one
  }
}

void VkDriver::record_dispatch(const gpu::Dispatch& d) {
  CmdList& list = current();
  const VkPipeline pipeline = static_cast<const PipelineObj*>(d.pipeline)->pipeline;
  if (pipeline != bound_) {
    vkCmdBindPipeline(list.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    bound_ = pipeline;
  }
  const size_t n = d.buffers.size();
  std::array<VkBuffer, gpu::kMaxBindings> buffers;
  for (size_t i = 0; i < n; i++) buffers[i] = buffer_of(d.buffers[i].handle).buffer;
  const uint64_t freed = free_count_.load(std::memory_order_acquire);
  if (!pushed_valid_ || pushed_count_ != n || pushed_at_free_count_ != freed ||
      !std::equal(buffers.begin(), buffers.begin() + n, pushed_buffers_.begin())) {
    VkDescriptorBufferInfo infos[gpu::kMaxBindings];
    for (size_t i = 0; i < n; i++) infos[i] = {buffers[i], 0, VK_WHOLE_SIZE};
    auto write = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    write.dstBinding = 0;
    write.descriptorCount = static_cast<uint32_t>(n);
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = infos;
    if (push_descriptor_set_) {
      push_descriptor_set_(list.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout_, 0, 1, &write);
    } else {
      write.dstSet = allocate_set(list);
      vkUpdateDescriptorSets(device_, 1, &write, 0, nullptr);
      vkCmdBindDescriptorSets(list.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout_, 0, 1,
                              &write.dstSet, 0, nullptr);
    }
    pushed_valid_ = true;
    pushed_count_ = n;
    pushed_at_free_count_ = freed;
    std::copy(buffers.begin(), buffers.begin() + n, pushed_buffers_.begin());
  }
  const size_t words = d.push_constants.size();
  if (words != 0 &&
      (words != pushed_words_n_ ||
       !std::equal(d.push_constants.begin(), d.push_constants.end(), pushed_words_.begin()))) {
    vkCmdPushConstants(list.cb, pipeline_layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(d.push_constants.size_bytes()),
                       d.push_constants.data());
    pushed_words_n_ = words;
    std::copy(d.push_constants.begin(), d.push_constants.end(), pushed_words_.begin());
  }
  vkCmdDispatch(list.cb, d.groups[0], d.groups[1], d.groups[2]);
  if (profile_) profile_->after_dispatch(list.cb, list.marks, d.pipeline->label);
}

void VkDriver::record_barrier() {
  auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(current().cb, kWorkStages, kWorkStages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void VkDriver::record_copy(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                           uint64_t bytes) {
  const VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(current().cb, buffer_of(src).buffer, buffer_of(dst).buffer, 1, &region);
}

void VkDriver::record_fill(uint64_t dst, uint64_t offset, uint64_t bytes, uint32_t pattern) {
  vkCmdFillBuffer(current().cb, buffer_of(dst).buffer, offset, bytes, pattern);
}

void VkDriver::end_open() {
  // Make this list's writes visible to the host (read-back maps the memory after the wait).
  auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(open_->cb, kWorkStages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0,
                       nullptr);
  check(vkEndCommandBuffer(open_->cb), "vkEndCommandBuffer");
  open_ = nullptr;
}

// ---- capture -----------------------------------------------------------------------------------

struct VkDriver::CapturedList final : gpu::Recording {
  VkDriver* driver = nullptr;
  std::unique_ptr<CmdList> list;  // null when nothing was recorded
  ~CapturedList() override {
    if (list) driver->return_list(std::move(list));
  }
};

void VkDriver::begin_capture() {
  WICK_ASSERT(open_ == nullptr && !capturing_);
  capturing_ = true;
}

std::unique_ptr<gpu::Recording> VkDriver::end_capture() {
  WICK_ASSERT(capturing_);
  capturing_ = false;
  auto r = std::make_unique<CapturedList>();
  r->driver = this;
  if (open_) {
    end_open();
    capture_list_->submission = 0;
    r->list = std::move(capture_list_);
  }
  return r;
}

void VkDriver::replay(const gpu::Recording& r, uint64_t id) {
  const auto& c = static_cast<const CapturedList&>(r);
  if (c.list && profile_ && c.list->submission <= completed())  // the previous replay's times
    profile_->harvest(c.list->marks, c.list->submission);
  if (c.list) c.list->submission = id;
  submit(c.list ? c.list->cb : VK_NULL_HANDLE, id);
}

void VkDriver::commit(uint64_t id) {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (open_) {
    open_->submission = id;
    cb = open_->cb;
    end_open();
  }
  submit(cb, id);
  // A driver may initialise state of its own (function-local statics of its compiler: lavapipe
  // compiles with LLVM on its queue thread at first dispatch) while running the first list that
  // uses a new pipeline; whatever it registers then for exit would run before our exit handler,
  // and in-flight work at exit then crashed or hung in LLVM (~1 process in 5 on lavapipe). So the
  // first list after new pipelines is waited for and the handler registered again, after them.
  if (const uint64_t made = pipelines_created_.load(); made != pipelines_at_last_exit_hook_) {
    pipelines_at_last_exit_hook_ = made;
    wait(id);
    std::atexit(finish_live_devices);
  }
}

void VkDriver::submit(VkCommandBuffer cb, uint64_t id) {
  const uint64_t wait_value = id - 1;
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  auto tsi =
      vk_struct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  tsi.waitSemaphoreValueCount = 1;
  tsi.pWaitSemaphoreValues = &wait_value;
  tsi.signalSemaphoreValueCount = 1;
  tsi.pSignalSemaphoreValues = &id;
  auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.pNext = &tsi;
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &timeline_;
  si.pWaitDstStageMask = &wait_stage;
  si.commandBufferCount = cb ? 1 : 0;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &timeline_;
  check(vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
}

void VkDriver::wait(uint64_t id) {
  auto wi = vk_struct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  wi.semaphoreCount = 1;
  wi.pSemaphores = &timeline_;
  wi.pValues = &id;
  check(vkWaitSemaphores(device_, &wi, std::numeric_limits<uint64_t>::max()), "vkWaitSemaphores");
}

uint64_t VkDriver::completed() {
  uint64_t v = 0;
  check(vkGetSemaphoreCounterValue(device_, timeline_, &v), "vkGetSemaphoreCounterValue");
  return v;
}

}  // namespace wick::vulkan
