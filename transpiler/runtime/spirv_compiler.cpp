// GLSL compute shaders to SPIR-V in the calling process, through glslang's C++ interface:
// what `glslangValidator -V --target-env vulkan1.2` does (the same steps, options and
// resource limits), without starting a process.
#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
bool initialized = false;

char* copy(const std::string& s) {
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
}
}  // namespace

// Returns the SPIR-V (malloc'ed, *words 32-bit words), or null with *log the compiler's
// messages (malloc'ed). Not thread-safe: the caller holds a lock.
extern "C" unsigned* qd_glsl_to_spirv(const char* source, size_t* words, char** log) {
    if (!initialized) {
        glslang::InitializeProcess();
        initialized = true;
    }
    *words = 0;
    *log = nullptr;
    const EShMessages messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
    glslang::TShader shader(EShLangCompute);
    shader.setStrings(&source, 1);
    shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
    shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
    shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
    if (!shader.parse(GetDefaultResources(), 100, false, messages)) {
        *log = copy(std::string(shader.getInfoLog()) + shader.getInfoDebugLog());
        return nullptr;
    }
    glslang::TProgram program;
    program.addShader(&shader);
    if (!program.link(messages)) {
        *log = copy(std::string(program.getInfoLog()) + program.getInfoDebugLog());
        return nullptr;
    }
    std::vector<unsigned> spirv;
    spv::SpvBuildLogger logger;
    glslang::SpvOptions options;
    glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
    const std::string messages_text = logger.getAllMessages();
    if (!messages_text.empty()) *log = copy(messages_text);
    *words = spirv.size();
    unsigned* out = static_cast<unsigned*>(std::malloc(spirv.size() * sizeof(unsigned)));
    std::memcpy(out, spirv.data(), spirv.size() * sizeof(unsigned));
    return out;
}

extern "C" void qd_glsl_free(void* p) { std::free(p); }
