// A C++17 Vulkan host for transpiled kernels: it loads the SPIR-V that the CMake module
// compiled from the generated GLSL and binds buffers and push constants exactly as the
// generated headers say (binding indices, the PushConstants struct, the grid of every
// entry point), then checks the results itself and prints OK.
//
// Usage: vulkan_host [SPIRV_DIR]   (default: where the build wrote them)
#include "vulkan_device.h"

#include "grid_energy.glsl.h"
#include "reduce_i32.glsl.h"
#include "seed_grid.glsl.h"
#include "standardize.glsl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#ifndef QD_SPIRV_DIR
#define QD_SPIRV_DIR "."
#endif

namespace {

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "vulkan_host: %s\n", what.c_str());
    std::exit(1);
}

void check(VkResult rc, const char* call) {
    if (rc != VK_SUCCESS) {
        fail(std::string(call) + " failed (VkResult " + std::to_string(rc) + ")");
    }
}
#define VK_CHECK(call) check((call), #call)

// ---------------------------------------------------------------- device features

// The feature structs the GLSL target may ask for (see the headers' device_features), and
// a name -> member table over one instance of each. Vulkan reads and writes them through
// a pNext chain, so one instance queries what the device has and another says what to enable.
struct Features {
    VkPhysicalDeviceFeatures2 core = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    VkPhysicalDeviceVulkan11Features v11 =
        make<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    VkPhysicalDeviceVulkan12Features v12 =
        make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float = make<VkPhysicalDeviceShaderAtomicFloatFeaturesEXT>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT);
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control = make<VkPhysicalDeviceSubgroupSizeControlFeaturesEXT>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT);

    Features(const Features&) = delete;
    Features& operator=(const Features&) = delete;
    // Chains the structs of the extensions in use only: the others are not the device's to fill.
    Features(bool with_atomic_float, bool with_size_control) {
        core.pNext = &v11;
        v11.pNext = &v12;
        void** tail = &v12.pNext;
        if (with_atomic_float) {
            *tail = &atomic_float;
            tail = &atomic_float.pNext;
        }
        if (with_size_control) {
            *tail = &size_control;
        }
    }

    VkBool32* find(const std::string& name) {
        const std::pair<const char*, VkBool32*> table[] = {
            {"shaderFloat64", &core.features.shaderFloat64},
            {"shaderInt64", &core.features.shaderInt64},
            {"shaderInt16", &core.features.shaderInt16},
            {"storageBuffer16BitAccess", &v11.storageBuffer16BitAccess},
            {"storageBuffer8BitAccess", &v12.storageBuffer8BitAccess},
            {"shaderInt8", &v12.shaderInt8},
            {"shaderFloat16", &v12.shaderFloat16},
            {"shaderBufferInt64Atomics", &v12.shaderBufferInt64Atomics},
            {"shaderSharedInt64Atomics", &v12.shaderSharedInt64Atomics},
            {"shaderBufferFloat32AtomicAdd", &atomic_float.shaderBufferFloat32AtomicAdd},
            {"shaderSharedFloat32AtomicAdd", &atomic_float.shaderSharedFloat32AtomicAdd},
            {"subgroupSizeControl", &size_control.subgroupSizeControl},
            {"computeFullSubgroups", &size_control.computeFullSubgroups},
        };
        for (const auto& [n, member] : table) {
            if (name == n) {
                return member;
            }
        }
        return nullptr;
    }
};

// ---------------------------------------------------------------- the device

struct Context {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t family = 0;
    uint32_t memory_type = 0;
    VkCommandPool pool = VK_NULL_HANDLE;
    std::string name;
    uint32_t subgroup_size = 0;      // the size the shaders are built for (0: any)
    bool require_subgroup_size = false;  // pipelines ask for it (VK_EXT_subgroup_size_control)
};

// VK_SUBGROUP_FEATURE_<NAME>_BIT for the names the headers' subgroup_operations use.
VkSubgroupFeatureFlags subgroup_bit(const std::string& name) {
    const std::pair<const char*, VkSubgroupFeatureFlags> table[] = {
        {"BASIC", VK_SUBGROUP_FEATURE_BASIC_BIT}, {"VOTE", VK_SUBGROUP_FEATURE_VOTE_BIT},
        {"ARITHMETIC", VK_SUBGROUP_FEATURE_ARITHMETIC_BIT}, {"BALLOT", VK_SUBGROUP_FEATURE_BALLOT_BIT},
        {"SHUFFLE", VK_SUBGROUP_FEATURE_SHUFFLE_BIT}, {"SHUFFLE_RELATIVE", VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT},
        {"CLUSTERED", VK_SUBGROUP_FEATURE_CLUSTERED_BIT}, {"QUAD", VK_SUBGROUP_FEATURE_QUAD_BIT},
    };
    for (const auto& [n, bit] : table) {
        if (name == n) {
            return bit;
        }
    }
    fail("unknown subgroup operation " + name);
}

// What the kernels need from the device, gathered from their headers.
struct Needs {
    std::set<std::string> features, extensions, subgroup_operations;
    uint32_t subgroup_size = 0;

    template <std::size_t F, std::size_t E, std::size_t O>
    void add(const std::array<const char*, F>& device_features, const std::array<const char*, E>& device_extensions,
             const std::array<const char*, O>& operations, uint32_t size) {
        features.insert(device_features.begin(), device_features.end());
        extensions.insert(device_extensions.begin(), device_extensions.end());
        subgroup_operations.insert(operations.begin(), operations.end());
        if (size != 0) {
            if (subgroup_size != 0 && subgroup_size != size) {
                fail("the kernels were built for different subgroup sizes");
            }
            subgroup_size = size;
        }
    }
};

Context create_context(Needs needs) {
    Context ctx;
    ctx.instance = create_instance();
    if (ctx.instance == VK_NULL_HANDLE) {
        fail("no Vulkan (apt-get install libvulkan1, and mesa-vulkan-drivers on a machine without a GPU)");
    }
    ctx.physical = pick_device(ctx.instance, ctx.name);
    if (ctx.physical == VK_NULL_HANDLE) {
        fail("no Vulkan 1.2 device (on a machine without a GPU: apt-get install mesa-vulkan-drivers)");
    }

    uint32_t n_ext = 0;
    VK_CHECK(vkEnumerateDeviceExtensionProperties(ctx.physical, nullptr, &n_ext, nullptr));
    std::vector<VkExtensionProperties> available(n_ext);
    VK_CHECK(vkEnumerateDeviceExtensionProperties(ctx.physical, nullptr, &n_ext, available.data()));
    auto has_extension = [&](const std::string& e) {
        return std::any_of(available.begin(), available.end(),
                           [&](const VkExtensionProperties& p) { return e == p.extensionName; });
    };

    // Subgroup operations are specialized to one width: ask every pipeline for it where the
    // device lets us choose (with full subgroups), else the device's own width must be it.
    const VkPhysicalDeviceSubgroupProperties subgroup = subgroup_properties(ctx.physical);
    for (const std::string& op : needs.subgroup_operations) {
        if (!(subgroup.supportedOperations & subgroup_bit(op)) ||
            !(subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
            fail(ctx.name + " lacks the subgroup operations " + op + " in compute shaders");
        }
    }
    ctx.subgroup_size = needs.subgroup_size;
    const bool size_control = needs.subgroup_size != 0 && has_extension(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    if (size_control) {
        auto limits = make<VkPhysicalDeviceSubgroupSizeControlPropertiesEXT>(
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT);
        auto props = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
        props.pNext = &limits;
        vkGetPhysicalDeviceProperties2(ctx.physical, &props);
        ctx.require_subgroup_size = limits.minSubgroupSize <= needs.subgroup_size &&
                                    needs.subgroup_size <= limits.maxSubgroupSize &&
                                    (limits.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    }
    if (ctx.require_subgroup_size) {
        needs.extensions.insert(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
        needs.features.insert({"subgroupSizeControl", "computeFullSubgroups"});
    } else if (needs.subgroup_size != 0 && needs.subgroup_size != subgroup.subgroupSize) {
        fail("the shaders are built for subgroups of " + std::to_string(needs.subgroup_size) + "; " + ctx.name +
             " runs " + std::to_string(subgroup.subgroupSize) + " (reconfigure with -DQD_VULKAN_SUBGROUP_SIZE=" +
             std::to_string(subgroup.subgroupSize) + ")");
    }

    std::vector<const char*> enabled_extensions;
    for (const std::string& e : needs.extensions) {
        if (!has_extension(e)) {
            fail(ctx.name + " lacks the device extension " + e);
        }
        enabled_extensions.push_back(e.c_str());
    }

    Features supported(needs.extensions.count(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) != 0,
                       ctx.require_subgroup_size);
    Features wanted(needs.extensions.count(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) != 0,
                    ctx.require_subgroup_size);
    vkGetPhysicalDeviceFeatures2(ctx.physical, &supported.core);
    for (const std::string& f : needs.features) {
        VkBool32* has = supported.find(f);
        if (has == nullptr) {
            fail("this host does not know how to enable the feature " + f);
        }
        if (!*has) {
            fail(ctx.name + " lacks the feature " + f);
        }
        *wanted.find(f) = VK_TRUE;
    }

    uint32_t n_families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &n_families, nullptr);
    std::vector<VkQueueFamilyProperties> families(n_families);
    vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &n_families, families.data());
    ctx.family = n_families;
    for (uint32_t k = 0; k < n_families && ctx.family == n_families; ++k) {
        if (families[k].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            ctx.family = k;
        }
    }
    if (ctx.family == n_families) {
        fail(ctx.name + " has no compute queue");
    }

    const float priority = 1.0f;
    auto queue_info = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue_info.queueFamilyIndex = ctx.family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    auto device_info = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    device_info.pNext = &wanted.core;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    device_info.enabledExtensionCount = static_cast<uint32_t>(enabled_extensions.size());
    device_info.ppEnabledExtensionNames = enabled_extensions.data();
    VK_CHECK(vkCreateDevice(ctx.physical, &device_info, nullptr, &ctx.device));
    vkGetDeviceQueue(ctx.device, ctx.family, 0, &ctx.queue);

    // Host-visible, coherent memory: the host writes inputs and reads results in place.
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(ctx.physical, &memory);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    ctx.memory_type = memory.memoryTypeCount;
    for (uint32_t k = 0; k < memory.memoryTypeCount && ctx.memory_type == memory.memoryTypeCount; ++k) {
        if ((memory.memoryTypes[k].propertyFlags & want) == want) {
            ctx.memory_type = k;
        }
    }
    if (ctx.memory_type == memory.memoryTypeCount) {
        fail(ctx.name + " has no host-visible coherent memory");
    }

    auto pool_info = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool_info.queueFamilyIndex = ctx.family;
    VK_CHECK(vkCreateCommandPool(ctx.device, &pool_info, nullptr, &ctx.pool));
    return ctx;
}

// ---------------------------------------------------------------- buffers

struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize bytes = 0;
    void* data = nullptr;

    template <class T>
    T* as() const { return static_cast<T*>(data); }
};

Buffer create_buffer(const Context& ctx, VkDeviceSize bytes) {
    Buffer b;
    b.bytes = std::max<VkDeviceSize>(bytes, 4);  // Vulkan has no empty buffers
    auto info = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    info.size = b.bytes;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VK_CHECK(vkCreateBuffer(ctx.device, &info, nullptr, &b.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx.device, b.buffer, &req);
    if (!(req.memoryTypeBits & (1u << ctx.memory_type))) {
        fail("storage buffers cannot live in host-visible memory on " + ctx.name);
    }
    auto alloc = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = ctx.memory_type;
    VK_CHECK(vkAllocateMemory(ctx.device, &alloc, nullptr, &b.memory));
    VK_CHECK(vkBindBufferMemory(ctx.device, b.buffer, b.memory, 0));
    VK_CHECK(vkMapMemory(ctx.device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.data));
    return b;
}

void destroy_buffer(const Context& ctx, Buffer& b) {
    vkUnmapMemory(ctx.device, b.memory);
    vkDestroyBuffer(ctx.device, b.buffer, nullptr);
    vkFreeMemory(ctx.device, b.memory, nullptr);
}

// ---------------------------------------------------------------- one kernel

std::vector<uint32_t> read_spirv(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        fail("cannot read " + path);
    }
    const std::streamsize bytes = in.tellg();
    std::vector<uint32_t> words(static_cast<std::size_t>(bytes) / 4);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
    return words;
}

// The pipelines of one kernel: one per entry point, sharing a descriptor-set layout with
// one storage buffer per ndarray and a pipeline layout with the kernel's push-constant
// range, as the header's buffers / push_constant_bytes describe.
template <std::size_t N>
struct Program {
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
    VkDescriptorSet set = VK_NULL_HANDLE;
    std::array<VkPipeline, N> pipelines{};
};

template <std::size_t N, std::size_t B>
Program<N> create_program(const Context& ctx, const std::string& dir, const std::array<const char*, N>& spirv_files,
                          const std::array<qd::embed::EntryPoint, N>& entry_points,
                          const std::array<qd::embed::Buffer, B>& buffers, uint32_t descriptor_set,
                          uint32_t push_constant_bytes) {
    Program<N> p;
    if (descriptor_set != 0) {
        fail("this host binds descriptor set 0 only");
    }
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const qd::embed::Buffer& b : buffers) {
        VkDescriptorSetLayoutBinding binding{};
        binding.binding = b.index;
        binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        binding.descriptorCount = 1;
        binding.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        bindings.push_back(binding);
    }
    auto set_info = make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    set_info.bindingCount = static_cast<uint32_t>(bindings.size());
    set_info.pBindings = bindings.data();
    VK_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_info, nullptr, &p.set_layout));

    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_constant_bytes};
    auto layout_info = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &p.set_layout;
    layout_info.pushConstantRangeCount = push_constant_bytes != 0 ? 1 : 0;
    layout_info.pPushConstantRanges = &range;
    VK_CHECK(vkCreatePipelineLayout(ctx.device, &layout_info, nullptr, &p.layout));

    for (std::size_t k = 0; k < N; ++k) {
        const std::vector<uint32_t> code = read_spirv(dir + "/" + spirv_files[k]);
        auto module_info = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
        module_info.codeSize = code.size() * 4;
        module_info.pCode = code.data();
        VkShaderModule module;
        VK_CHECK(vkCreateShaderModule(ctx.device, &module_info, nullptr, &module));
        auto pipeline_info = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
        pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        pipeline_info.stage.module = module;
        pipeline_info.stage.pName = entry_points[k].function;
        pipeline_info.layout = p.layout;
        auto size = make<VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT>(
            VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT);
        size.requiredSubgroupSize = ctx.subgroup_size;
        if (ctx.require_subgroup_size) {
            pipeline_info.stage.pNext = &size;
            // Full subgroups need a workgroup of whole subgroups: not a serial task's one thread.
            if (entry_points[k].block_dim % ctx.subgroup_size == 0) {
                pipeline_info.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
            }
        }
        VK_CHECK(vkCreateComputePipelines(ctx.device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &p.pipelines[k]));
        vkDestroyShaderModule(ctx.device, module, nullptr);
    }

    const auto descriptors = static_cast<uint32_t>(std::max<std::size_t>(B, 1));
    VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
    auto pool_info = make<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    pool_info.maxSets = 1;
    pool_info.poolSizeCount = 1;
    pool_info.pPoolSizes = &pool_size;
    VK_CHECK(vkCreateDescriptorPool(ctx.device, &pool_info, nullptr, &p.descriptor_pool));
    auto alloc = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    alloc.descriptorPool = p.descriptor_pool;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &p.set_layout;
    VK_CHECK(vkAllocateDescriptorSets(ctx.device, &alloc, &p.set));
    return p;
}

template <std::size_t N>
void bind(const Context& ctx, Program<N>& p, uint32_t binding, const Buffer& b) {
    VkDescriptorBufferInfo info{b.buffer, 0, VK_WHOLE_SIZE};
    auto write = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    write.dstSet = p.set;
    write.dstBinding = binding;
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = &info;
    vkUpdateDescriptorSets(ctx.device, 1, &write, 0, nullptr);
}

template <std::size_t N>
void destroy_program(const Context& ctx, Program<N>& p) {
    for (VkPipeline pipeline : p.pipelines) {
        vkDestroyPipeline(ctx.device, pipeline, nullptr);
    }
    vkDestroyDescriptorPool(ctx.device, p.descriptor_pool, nullptr);
    vkDestroyPipelineLayout(ctx.device, p.layout, nullptr);
    vkDestroyDescriptorSetLayout(ctx.device, p.set_layout, nullptr);
}

// Records `record(cmd)` into a fresh command buffer, runs it and waits; a final barrier
// makes the shaders' writes visible to the host's reads of the mapped memory.
template <class Record>
void submit_and_wait(const Context& ctx, Record&& record) {
    auto alloc = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    alloc.commandPool = ctx.pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer cmd;
    VK_CHECK(vkAllocateCommandBuffers(ctx.device, &alloc, &cmd));
    auto begin = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VK_CHECK(vkBeginCommandBuffer(cmd, &begin));
    record(cmd);
    auto to_host = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                         nullptr, 0, nullptr);
    VK_CHECK(vkEndCommandBuffer(cmd));

    auto fence_info = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    VkFence fence;
    VK_CHECK(vkCreateFence(ctx.device, &fence_info, nullptr, &fence));
    auto submit = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    VK_CHECK(vkQueueSubmit(ctx.queue, 1, &submit, fence));
    VK_CHECK(vkWaitForFences(ctx.device, 1, &fence, VK_TRUE, UINT64_MAX));
    vkDestroyFence(ctx.device, fence, nullptr);
    vkFreeCommandBuffers(ctx.device, ctx.pool, 1, &cmd);
}

int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok && failures++ < 10) {
        std::fprintf(stderr, "vulkan_host: FAIL %s\n", what.c_str());
    }
}

// ---------------------------------------------------------------- the kernels

namespace S = qd::standardize::glsl;
namespace R = qd::reduce_i32::glsl;

void run_standardize(const Context& ctx, const std::string& dir) {
    const int32_t n = 100003, first = 3, rows = 37, cols = 53;
    const double scale = 0.5;
    // Multiples of 1/8 in [-6, 6]: every partial sum is exact in f32, so the atomic sum
    // is the same in any order.
    std::vector<float> x(n);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>((i * 7919) % 97 - 48) / 8.0f;
        sum += x[i];
    }

    auto program = create_program(ctx, dir, S::spirv_files, S::entry_points, S::buffers, S::descriptor_set,
                                  S::push_constant_bytes);
    Buffer bx = create_buffer(ctx, sizeof(float) * n), bstats = create_buffer(ctx, sizeof(float) * 2);
    Buffer by = create_buffer(ctx, sizeof(float) * n), btile = create_buffer(ctx, sizeof(int32_t) * rows * cols);
    std::memcpy(bx.data, x.data(), sizeof(float) * n);
    std::fill(by.as<float>(), by.as<float>() + n, 42.0f);  // y[:first] must stay untouched
    bstats.as<float>()[0] = bstats.as<float>()[1] = -1.0f;   // the serial task resets them
    bind(ctx, program, S::binding::x, bx);
    bind(ctx, program, S::binding::stats, bstats);
    bind(ctx, program, S::binding::y, by);
    bind(ctx, program, S::binding::tile, btile);

    S::PushConstants pc{};
    pc.x_shape_0 = n;
    pc.stats_shape_0 = 2;
    pc.y_shape_0 = n;
    pc.tile_shape_0 = rows;
    pc.tile_shape_1 = cols;
    pc.scale = scale;
    pc.first = first;
    expect(S::grid_blocks(0, pc) == 1 && S::grid_blocks(1, pc) == (n + 63) / 64 &&
           S::grid_blocks(3, pc) == (n - first + 127) / 128 && S::grid_blocks(4, pc) == (rows * cols + 127) / 128,
           "standardize: grid sizes");

    submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
        S::record_dispatches(cmd, program.pipelines, program.layout, program.set, pc);
    });

    const float* stats = bstats.as<float>();
    const float mean = static_cast<float>(sum) / static_cast<float>(n);
    double squares = 0;
    for (int32_t i = 0; i < n; ++i) {
        squares += (double(x[i]) - mean) * (double(x[i]) - mean);
    }
    expect(stats[0] == static_cast<float>(sum), "standardize: sum " + std::to_string(stats[0]) + " != " +
           std::to_string(sum));
    expect(std::fabs(stats[1] - squares) <= 1e-3 * squares, "standardize: sum of squares " +
           std::to_string(stats[1]) + " != " + std::to_string(squares));
    const float* y = by.as<float>();
    for (int32_t i = 0; i < n; ++i) {
        const double want = i < first ? 42.0 : (double(x[i]) - stats[0] / n) * scale;
        expect(std::fabs(y[i] - want) <= 1e-5 * (1 + std::fabs(want)),
               "standardize: y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + ", want " +
                   std::to_string(want));
    }
    const int32_t* tile = btile.as<int32_t>();
    for (int32_t i = 0; i < rows; ++i) {
        for (int32_t j = 0; j < cols; ++j) {
            expect(tile[i * cols + j] == i * 1000 + j + first, "standardize: tile[" + std::to_string(i) + ", " +
                   std::to_string(j) + "]");
        }
    }
    for (Buffer* b : {&bx, &bstats, &by, &btile}) {
        destroy_buffer(ctx, *b);
    }
    destroy_program(ctx, program);
}

void run_reduce(const Context& ctx, const std::string& dir) {
    const int32_t n = 1000003;
    auto program = create_program(ctx, dir, R::spirv_files, R::entry_points, R::buffers, R::descriptor_set,
                                  R::push_constant_bytes);
    Buffer bvalues = create_buffer(ctx, sizeof(int32_t) * n), bout = create_buffer(ctx, sizeof(int32_t) * 3);
    int32_t* values = bvalues.as<int32_t>();
    int64_t sum = 0;
    int32_t max = INT32_MIN, negatives = 0;
    uint32_t state = 12345;
    for (int32_t i = 0; i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        values[i] = static_cast<int32_t>(state >> 8) % 2001 - 1000;
        sum += values[i];
        max = std::max(max, values[i]);
        negatives += values[i] < 0;
    }
    bind(ctx, program, R::binding::values, bvalues);
    bind(ctx, program, R::binding::out, bout);
    R::PushConstants pc{};
    pc.values_shape_0 = n;
    pc.out_shape_0 = 3;
    submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
        R::record_dispatches(cmd, program.pipelines, program.layout, program.set, pc);
    });
    const int32_t* out = bout.as<int32_t>();
    expect(out[0] == sum, "reduce_i32: sum " + std::to_string(out[0]) + " != " + std::to_string(sum));
    expect(out[1] == max, "reduce_i32: max " + std::to_string(out[1]) + " != " + std::to_string(max));
    expect(out[2] == negatives, "reduce_i32: negatives " + std::to_string(out[2]) + " != " + std::to_string(negatives));
    destroy_buffer(ctx, bvalues);
    destroy_buffer(ctx, bout);
    destroy_program(ctx, program);
}

namespace G = qd::seed_grid::glsl;
namespace E = qd::grid_energy::glsl;

// The module's fields: one buffer per field name, zero-filled, bound to every kernel that
// names it (the headers' `fields` tables say which buffer and how many bytes).
struct Fields {
    const Context& ctx;
    std::map<std::string, Buffer> buffers;

    Buffer& operator[](const qd::embed::Field& f) {
        auto it = buffers.find(f.name);
        if (it == buffers.end()) {
            it = buffers.emplace(f.name, create_buffer(ctx, f.bytes)).first;
            std::memset(it->second.as<unsigned char>(), 0, f.bytes);
        }
        return it->second;
    }

    template <std::size_t N, std::size_t F, std::size_t B>
    void bind_all(Program<N>& p, const std::array<qd::embed::Field, F>& fields,
                  const std::array<qd::embed::Buffer, B>& table) {
        for (const qd::embed::Field& f : fields) {
            bind(ctx, p, table[f.buffer].index, (*this)[f]);
        }
    }

    ~Fields() {
        for (auto& [name, b] : buffers) {
            destroy_buffer(ctx, b);
        }
    }
};

void run_fields(const Context& ctx, const std::string& dir) {
    Fields fields{ctx, {}};
    auto seed = create_program(ctx, dir, G::spirv_files, G::entry_points, G::buffers, G::descriptor_set,
                               G::push_constant_bytes);
    auto sum = create_program(ctx, dir, E::spirv_files, E::entry_points, E::buffers, E::descriptor_set,
                              E::push_constant_bytes);
    fields.bind_all(seed, G::fields, G::buffers);
    fields.bind_all(sum, E::fields, E::buffers);
    expect(fields.buffers.size() == 2, "fields: the two kernels share 2 fields, got " +
                                       std::to_string(fields.buffers.size()));
    G::PushConstants gp{};
    gp.value = 0.5f;
    E::PushConstants ep{};
    submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
        G::record_dispatches(cmd, seed.pipelines, seed.layout, seed.set, gp);
    });
    submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
        E::record_dispatches(cmd, sum.pipelines, sum.layout, sum.set, ep);
    });
    const int n = 64;
    const float* grid = fields.buffers.at("grid").as<float>();
    expect(grid[3 * n + 5] == 4.0f, "fields: grid[3, 5] = " + std::to_string(grid[3 * n + 5]));
    const float energy = *fields.buffers.at("energy").as<float>();
    const float want = 0.5f * 2.0f * n * (n * (n - 1) / 2);  // every i + j, halved: exact in f32
    expect(energy == want, "fields: energy " + std::to_string(energy) + " != " + std::to_string(want));
    destroy_program(ctx, seed);
    destroy_program(ctx, sum);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : QD_SPIRV_DIR;
    // What the two kernels need, together: one device serves both.
    Needs needs;
    needs.add(S::device_features, S::device_extensions, S::subgroup_operations, S::subgroup_size);
    needs.add(R::device_features, R::device_extensions, R::subgroup_operations, R::subgroup_size);
    needs.add(G::device_features, G::device_extensions, G::subgroup_operations, G::subgroup_size);
    needs.add(E::device_features, E::device_extensions, E::subgroup_operations, E::subgroup_size);
    Context ctx = create_context(needs);
    std::printf("device: %s%s\n", ctx.name.c_str(), ctx.require_subgroup_size ? " (subgroup size set)" : "");

    run_standardize(ctx, dir);
    run_reduce(ctx, dir);
    run_fields(ctx, dir);

    vkDestroyCommandPool(ctx.device, ctx.pool, nullptr);
    vkDestroyDevice(ctx.device, nullptr);
    vkDestroyInstance(ctx.instance, nullptr);
    if (failures != 0) {
        std::printf("FAILED (%d mismatches)\n", failures);
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
