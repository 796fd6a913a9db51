// Prints the subgroup size of the device the host will pick. CMake runs it at configure
// time: shaders that use subgroup operations are specialized to one subgroup width.
#include "vulkan_device.h"

#include <cstdio>

int main() {
    VkInstance instance = create_instance();
    if (instance == VK_NULL_HANDLE) {
        return 1;
    }
    std::string name;
    VkPhysicalDevice device = pick_device(instance, name);
    if (device == VK_NULL_HANDLE) {
        return 1;
    }
    std::printf("%u\n", subgroup_properties(device).subgroupSize);
    vkDestroyInstance(instance, nullptr);
    return 0;
}
