// A C++17 CUDA host for transpiled kernels: it compiles the CUDA source embedded in the
// generated headers with NVRTC, loads it through the driver API, and launches every entry
// point with the headers' argument order and grid rule, then checks the results itself
// and prints OK.
//
// libcuda and libnvrtc are opened with dlopen, so this builds and links on a machine
// without the CUDA toolkit or a driver. There, it prints why and exits with 77 (the
// "skipped" code of Automake and CTest's SKIP_RETURN_CODE convention).
//
// Usage: cuda_host                 run both kernels on GPU 0
//        cuda_host --compile-only  only compile the embedded sources with NVRTC (no driver needed)
#include "reduce_i32.cuda.h"
#include "standardize.cuda.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef QD_NVRTC_LIBRARY
#define QD_NVRTC_LIBRARY ""
#endif

namespace {

constexpr int EXIT_NO_DRIVER = 77;

// The few driver API and NVRTC declarations this host uses, spelled as in cuda.h and
// nvrtc.h (their ABI is stable), so that no CUDA header is needed to build.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

struct Driver {
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuDeviceGetCount)(int*);
    CUresult (*cuDeviceGet)(CUdevice*, int);
    CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)();
    CUresult (*cuModuleLoadData)(CUmodule*, const void*);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
    CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t);
    CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void**, void**);
    CUresult (*cuGetErrorString)(CUresult, const char**);
};

struct Nvrtc {
    nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                      const char* const*);
    nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
    nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
    nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
    nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);
    nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
    nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, std::size_t*);
    nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
    nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
    nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
    nvrtcResult (*nvrtcGetSupportedArchs)(int*);
    const char* (*nvrtcGetErrorString)(nvrtcResult);

    // The architectures this NVRTC compiles for (CUDA 13 starts at sm_75).
    std::vector<int> archs() const {
        int n = 0;
        nvrtcGetNumSupportedArchs(&n);
        std::vector<int> out(static_cast<std::size_t>(n));
        nvrtcGetSupportedArchs(out.data());
        return out;
    }
};

[[noreturn]] void fail(const std::string& what, int code = 1) {
    std::fprintf(stderr, "cuda_host: %s\n", what.c_str());
    std::exit(code);
}

void* open_first(const std::vector<std::string>& names, std::string& tried) {
    for (const std::string& name : names) {
        if (name.empty()) {
            continue;
        }
        if (void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            return lib;
        }
        tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    return nullptr;
}

template <class F>
void load(void* lib, F& fn, const char* symbol) {
    fn = reinterpret_cast<F>(dlsym(lib, symbol));
    if (fn == nullptr) {
        fail(std::string("missing symbol ") + symbol);
    }
}

Driver open_driver() {
    std::string tried;
    void* lib = open_first({"libcuda.so.1", "libcuda.so"}, tried);
    if (lib == nullptr) {
        fail("no CUDA driver (libcuda.so.1 cannot be loaded: " + tried + ")", EXIT_NO_DRIVER);
    }
    Driver d{};
    load(lib, d.cuInit, "cuInit");
    load(lib, d.cuDeviceGetCount, "cuDeviceGetCount");
    load(lib, d.cuDeviceGet, "cuDeviceGet");
    load(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    load(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    load(lib, d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    load(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent");
    load(lib, d.cuCtxSynchronize, "cuCtxSynchronize");
    load(lib, d.cuModuleLoadData, "cuModuleLoadData");
    load(lib, d.cuModuleUnload, "cuModuleUnload");
    load(lib, d.cuModuleGetFunction, "cuModuleGetFunction");
    load(lib, d.cuMemAlloc, "cuMemAlloc_v2");
    load(lib, d.cuMemFree, "cuMemFree_v2");
    load(lib, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    load(lib, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    load(lib, d.cuLaunchKernel, "cuLaunchKernel");
    load(lib, d.cuGetErrorString, "cuGetErrorString");
    return d;
}

Nvrtc open_nvrtc() {
    std::string tried;
    const char* env = std::getenv("QD_NVRTC_LIBRARY");
    void* lib = open_first({env ? env : "", QD_NVRTC_LIBRARY, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"},
                           tried);
    if (lib == nullptr) {
        fail("no NVRTC (pip install nvidia-cuda-nvrtc, or set QD_NVRTC_LIBRARY): " + tried, EXIT_NO_DRIVER);
    }
    Nvrtc n{};
    load(lib, n.nvrtcCreateProgram, "nvrtcCreateProgram");
    load(lib, n.nvrtcCompileProgram, "nvrtcCompileProgram");
    load(lib, n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
    load(lib, n.nvrtcGetProgramLog, "nvrtcGetProgramLog");
    load(lib, n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
    load(lib, n.nvrtcGetCUBIN, "nvrtcGetCUBIN");
    load(lib, n.nvrtcGetPTXSize, "nvrtcGetPTXSize");
    load(lib, n.nvrtcGetPTX, "nvrtcGetPTX");
    load(lib, n.nvrtcDestroyProgram, "nvrtcDestroyProgram");
    load(lib, n.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
    load(lib, n.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
    load(lib, n.nvrtcGetErrorString, "nvrtcGetErrorString");
    return n;
}

Driver* driver = nullptr;

void check(CUresult rc, const char* call) {
    if (rc != 0) {
        const char* text = "unknown error";
        driver->cuGetErrorString(rc, &text);
        fail(std::string(call) + " failed: " + text + " (" + std::to_string(rc) + ")");
    }
}
#define CU_CHECK(call) check((call), #call)

// The embedded source, compiled with the options its header lists: a cubin for sm_<arch>,
// or with `ptx`, PTX for compute_<arch> that the driver finishes (a GPU newer than NVRTC).
template <std::size_t K>
std::vector<char> compile(const Nvrtc& nvrtc, const char* source, const char* file,
                          const std::array<const char*, K>& header_options, int arch, bool ptx) {
    nvrtcProgram prog;
    if (nvrtcResult rc = nvrtc.nvrtcCreateProgram(&prog, source, file, 0, nullptr, nullptr); rc != 0) {
        fail(std::string("nvrtcCreateProgram: ") + nvrtc.nvrtcGetErrorString(rc));
    }
    const std::string arch_option = (ptx ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") +
                                    std::to_string(arch);
    std::vector<const char*> options(header_options.begin(), header_options.end());
    options.push_back(arch_option.c_str());
    const nvrtcResult rc = nvrtc.nvrtcCompileProgram(prog, static_cast<int>(options.size()), options.data());
    std::size_t log_size = 0;
    nvrtc.nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    nvrtc.nvrtcGetProgramLog(prog, log.data());
    if (rc != 0) {
        fail(std::string(file) + ": NVRTC rejected it (" + nvrtc.nvrtcGetErrorString(rc) + "):\n" + log);
    }
    std::size_t size = 0;
    (ptx ? nvrtc.nvrtcGetPTXSize : nvrtc.nvrtcGetCUBINSize)(prog, &size);
    std::vector<char> image(size);
    (ptx ? nvrtc.nvrtcGetPTX : nvrtc.nvrtcGetCUBIN)(prog, image.data());
    nvrtc.nvrtcDestroyProgram(&prog);
    return image;
}

// A device allocation holding `n` values of T.
template <class T>
struct DeviceArray {
    CUdeviceptr ptr = 0;
    std::size_t n = 0;
    explicit DeviceArray(std::size_t count) : n(count) {
        CU_CHECK(driver->cuMemAlloc(&ptr, sizeof(T) * std::max<std::size_t>(n, 1)));
    }
    ~DeviceArray() { driver->cuMemFree(ptr); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    T* get() const { return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr)); }  // as Args wants it
    void upload(const std::vector<T>& v) { CU_CHECK(driver->cuMemcpyHtoD(ptr, v.data(), sizeof(T) * n)); }
    std::vector<T> download() const {
        std::vector<T> v(n);
        CU_CHECK(driver->cuMemcpyDtoH(v.data(), ptr, sizeof(T) * n));
        return v;
    }
};

int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok && failures++ < 10) {
        std::fprintf(stderr, "cuda_host: FAIL %s\n", what.c_str());
    }
}

namespace S = qd::standardize::cuda;
namespace R = qd::reduce_i32::cuda;

// Every entry point of one kernel, in order, through the header's launch_all.
template <std::size_t N, class Args, class LaunchAll>
void run(const std::vector<char>& cubin, const std::array<qd::embed::EntryPoint, N>& entries, Args& args,
         LaunchAll&& launch_all) {
    CUmodule module;
    CU_CHECK(driver->cuModuleLoadData(&module, cubin.data()));
    std::array<CUfunction, N> functions{};
    for (std::size_t k = 0; k < N; ++k) {
        CU_CHECK(driver->cuModuleGetFunction(&functions[k], module, entries[k].function));
    }
    CU_CHECK(launch_all([&](std::size_t k, std::uint32_t blocks, void** params) {
        return driver->cuLaunchKernel(functions[k], blocks, 1, 1, entries[k].block_dim, 1, 1, 0, nullptr, params,
                                      nullptr);
    }, args));
    CU_CHECK(driver->cuCtxSynchronize());
    CU_CHECK(driver->cuModuleUnload(module));
}

void run_standardize(const std::vector<char>& cubin) {
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
    DeviceArray<float> dx(n), dstats(2), dy(n);
    DeviceArray<int32_t> dtile(std::size_t(rows) * cols);
    dx.upload(x);
    dy.upload(std::vector<float>(n, 42.0f));  // y[:first] must stay untouched
    dstats.upload({-1.0f, -1.0f});           // the serial task resets them

    S::Args args{};
    args.x = dx.get();
    args.x_shape_0 = n;
    args.stats = dstats.get();
    args.stats_shape_0 = 2;
    args.y = dy.get();
    args.y_shape_0 = n;
    args.tile = dtile.get();
    args.tile_shape_0 = rows;
    args.tile_shape_1 = cols;
    args.scale = scale;
    args.first = first;
    run(cubin, S::entry_points, args, [](auto&& fn, S::Args& a) { return S::launch_all(fn, a); });

    const std::vector<float> stats = dstats.download(), y = dy.download();
    const std::vector<int32_t> tile = dtile.download();
    const float mean = static_cast<float>(sum) / static_cast<float>(n);
    double squares = 0;
    for (int32_t i = 0; i < n; ++i) {
        squares += (double(x[i]) - mean) * (double(x[i]) - mean);
    }
    expect(stats[0] == static_cast<float>(sum), "standardize: sum " + std::to_string(stats[0]));
    expect(std::fabs(stats[1] - squares) <= 1e-3 * squares, "standardize: sum of squares " + std::to_string(stats[1]));
    for (int32_t i = 0; i < n; ++i) {
        const double want = i < first ? 42.0 : (double(x[i]) - stats[0] / n) * scale;
        expect(std::fabs(y[i] - want) <= 1e-5 * (1 + std::fabs(want)), "standardize: y[" + std::to_string(i) + "]");
    }
    for (int32_t i = 0; i < rows * cols; ++i) {
        expect(tile[i] == (i / cols) * 1000 + i % cols + first, "standardize: tile[" + std::to_string(i) + "]");
    }
}

void run_reduce(const std::vector<char>& cubin) {
    const int32_t n = 1000003;
    std::vector<int32_t> values(n);
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
    DeviceArray<int32_t> dvalues(n), dout(3);
    dvalues.upload(values);
    R::Args args{dvalues.get(), n, dout.get(), 3};
    run(cubin, R::entry_points, args, [](auto&& fn, R::Args& a) { return R::launch_all(fn, a); });
    const std::vector<int32_t> out = dout.download();
    expect(out[0] == sum, "reduce_i32: sum " + std::to_string(out[0]) + " != " + std::to_string(sum));
    expect(out[1] == max, "reduce_i32: max " + std::to_string(out[1]) + " != " + std::to_string(max));
    expect(out[2] == negatives, "reduce_i32: negatives " + std::to_string(out[2]));
}

}  // namespace

int main(int argc, char** argv) {
    const bool compile_only = argc > 1 && std::strcmp(argv[1], "--compile-only") == 0;
    const int min_sm = std::max(S::min_sm, R::min_sm);
    int device_sm = 0;
    Driver d{};
    CUdevice device = 0;
    CUcontext context = nullptr;
    if (!compile_only) {
        d = open_driver();
        driver = &d;
        if (CUresult rc = d.cuInit(0); rc != 0) {
            fail("no usable CUDA driver: cuInit returned " + std::to_string(rc), EXIT_NO_DRIVER);
        }
        int count = 0;
        if (d.cuDeviceGetCount(&count) != 0 || count == 0) {
            fail("no CUDA device", EXIT_NO_DRIVER);
        }
        CU_CHECK(d.cuDeviceGet(&device, 0));
        int major = 0, minor = 0;
        CU_CHECK(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
        CU_CHECK(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
        device_sm = major * 10 + minor;
        if (device_sm < min_sm) {
            fail("the kernels need sm_" + std::to_string(min_sm) + "; GPU 0 is sm_" + std::to_string(device_sm));
        }
        CU_CHECK(d.cuDevicePrimaryCtxRetain(&context, device));
        CU_CHECK(d.cuCtxSetCurrent(context));
    }

    const Nvrtc nvrtc = open_nvrtc();
    // The GPU's own architecture when NVRTC knows it; else the newest it knows below (as
    // PTX); with no GPU, the oldest it knows from min_sm up.
    const std::vector<int> archs = nvrtc.archs();
    int arch = 0;
    bool ptx = false;
    for (int a : archs) {
        if (a >= min_sm && (compile_only ? arch == 0 : a <= device_sm)) {
            arch = a;
        }
    }
    if (arch == 0) {
        fail("this NVRTC compiles for none of sm_" + std::to_string(min_sm) + " and up");
    }
    ptx = !compile_only && arch != device_sm;
    const std::vector<char> standardize =
        compile(nvrtc, S::sources[0], S::source_files[0], S::nvrtc_options, arch, ptx);
    const std::vector<char> reduce = compile(nvrtc, R::sources[0], R::source_files[0], R::nvrtc_options, arch, ptx);
    if (compile_only) {
        std::printf("compiled for sm_%d: %s (%zu bytes), %s (%zu bytes)\nOK\n", arch, S::source_files[0],
                    standardize.size(), R::source_files[0], reduce.size());
        return 0;
    }

    run_standardize(standardize);
    run_reduce(reduce);
    d.cuDevicePrimaryCtxRelease(device);
    if (failures != 0) {
        std::printf("FAILED (%d mismatches)\n", failures);
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
