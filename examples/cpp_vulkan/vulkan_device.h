// Instance creation and device choice, shared by the host and the configure-time probe
// (subgroup_probe.cpp) so that both see the same device.
#ifndef QD_EXAMPLE_VULKAN_DEVICE_H
#define QD_EXAMPLE_VULKAN_DEVICE_H

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

// A Vulkan struct with every member zero but its type.
template <class T>
T make(VkStructureType type) {
    T t{};
    t.sType = type;
    return t;
}

inline VkInstance create_instance() {
    auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "qd_cpp_vulkan";
    app.apiVersion = VK_API_VERSION_1_2;
    auto info = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.pApplicationInfo = &app;
    VkInstance instance = VK_NULL_HANDLE;
    return vkCreateInstance(&info, nullptr, &instance) == VK_SUCCESS ? instance : VK_NULL_HANDLE;
}

// The most capable device with Vulkan 1.2: discrete, integrated, virtual, then CPU
// (lavapipe); VK_NULL_HANDLE when there is none.
inline VkPhysicalDevice pick_device(VkInstance instance, std::string& name) {
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    const VkPhysicalDeviceType rank[] = {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
                                         VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU,
                                         VK_PHYSICAL_DEVICE_TYPE_OTHER};
    for (VkPhysicalDeviceType type : rank) {
        for (VkPhysicalDevice d : devices) {
            VkPhysicalDeviceProperties props;
            vkGetPhysicalDeviceProperties(d, &props);
            if (props.deviceType == type && props.apiVersion >= VK_API_VERSION_1_2) {
                name = props.deviceName;
                return d;
            }
        }
    }
    return VK_NULL_HANDLE;
}

// The subgroup size compute shaders get by default, and the operations they may use.
inline VkPhysicalDeviceSubgroupProperties subgroup_properties(VkPhysicalDevice device) {
    auto subgroup = make<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto props = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    props.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(device, &props);
    return subgroup;
}

#endif  // QD_EXAMPLE_VULKAN_DEVICE_H
