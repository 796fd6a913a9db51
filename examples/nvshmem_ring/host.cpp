// The C++ host of the NVSHMEM ring (kernels.py): every PE (one process, one GPU) fills a
// block, puts it into the next PE's `recv`, fences, raises the next PE's flag, waits for its
// own, and checks the block its left neighbour sent. It prints one OK line per PE.
//
// Build: make -C examples/nvshmem_ring   (the Makefile transpiles kernels.py, then builds with
//                                        nvcc -rdc=true against NVSHMEM's host and device libraries)
// Run:   build/nvshmem_ring/nvshmem_ring --pes 2          forks 2 PEs on this node (unique-id bootstrap)
//        nvshmrun -np 2 build/nvshmem_ring/nvshmem_ring   or mpirun -np 2 (NVSHMEM_BOOTSTRAP=MPI or PMI)
// Options: --n ELEMENTS (default 65536), --rounds R (default 3).
// One GPU per PE: PE k uses device k % (device count); two PEs on one GPU need NVSHMEM's
// multiple-PEs-per-GPU support (CUDA MPS). Exit codes: 0 every PE OK, 1 a check failed,
// 2 bad usage, 77 no CUDA device (the "skipped" code of Automake and CTest).
#include "ring.cuda.h"

#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace k = qd::ring::cuda;

// The entry points in ring.cu, in launch order. Every entry point takes every parameter
// (an ndarray as its pointer and extent); the static_asserts catch a kernels.py that no
// longer matches these declarations.
#define RING_PARAMS float*, std::int32_t, float*, std::int32_t, std::int32_t*, std::int32_t, std::int32_t*, std::int32_t
extern "C" __global__ void ring_0(RING_PARAMS);
extern "C" __global__ void ring_1(RING_PARAMS);
extern "C" __global__ void ring_2(RING_PARAMS);
static_assert(k::num_entry_points == 3, "kernels.py has a different number of tasks than host.cpp launches");
static_assert(k::num_args == 8, "kernels.py has different parameters than host.cpp declares");
static_assert(sizeof(k::Args::send) == sizeof(float*) && sizeof(k::Args::flag) == sizeof(std::int32_t*),
              "parameter types differ from RING_PARAMS");

namespace {

constexpr int EXIT_CHECK_FAILED = 1;
constexpr int EXIT_USAGE = 2;
constexpr int EXIT_NO_DEVICE = 77;

#define CUDA_OK(call)                                                                        \
    do {                                                                                     \
        cudaError_t rc_ = (call);                                                            \
        if (rc_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(rc_)); \
            std::exit(EXIT_CHECK_FAILED);                                                    \
        }                                                                                    \
    } while (0)

// What kernels.py's value_of(pe, i) computes, in the same float arithmetic.
float value_of(int pe, int i) { return float(pe * 1000 + i) + 0.5f; }

int run_pe(bool unique_id, const nvshmemx_uniqueid_t* id, int rank, int nranks, int n, int rounds) {
    int devices = 0;
    const cudaError_t probe = cudaGetDeviceCount(&devices);
    if (probe != cudaSuccess || devices == 0) {
        std::printf("no CUDA device (%s): NVSHMEM needs one GPU per PE; skipped\n",
                    probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
        return EXIT_NO_DEVICE;
    }
    if (unique_id) {
        CUDA_OK(cudaSetDevice(rank % devices));
        nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
        nvshmemx_set_attr_uniqueid_args(rank, nranks, id, &attr);
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    } else {
        // Launched by nvshmrun / mpirun: pick the device by the PE's rank on this node, after
        // init and before the first symmetric allocation (NVSHMEM's two-stage initialization).
        nvshmem_init();
        CUDA_OK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % devices));
    }
    const int me = nvshmem_my_pe();
    const int npes = nvshmem_n_pes();
    const int left = (me + npes - 1) % npes;

    // Symmetric parameters (the manifest's symmetric_params) on the symmetric heap: the same
    // calls, sizes and order on every PE. `errors` is this PE's own.
    auto* send = static_cast<float*>(nvshmem_malloc(sizeof(float) * n));
    auto* recv = static_cast<float*>(nvshmem_malloc(sizeof(float) * n));
    auto* flag = static_cast<std::int32_t*>(nvshmem_calloc(1, sizeof(std::int32_t)));
    std::int32_t* errors = nullptr;
    CUDA_OK(cudaMalloc(&errors, sizeof(std::int32_t)));
    if (send == nullptr || recv == nullptr || flag == nullptr) {
        std::fprintf(stderr, "PE %d: nvshmem_malloc failed (raise NVSHMEM_SYMMETRIC_SIZE?)\n", me);
        return EXIT_CHECK_FAILED;
    }
    const void* functions[k::num_entry_points] = {reinterpret_cast<const void*>(ring_0),
                                                  reinterpret_cast<const void*>(ring_1),
                                                  reinterpret_cast<const void*>(ring_2)};
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreate(&stream));

    int status = 0;
    std::vector<float> got(n);
    for (int round = 0; round < rounds && status == 0; ++round) {
        CUDA_OK(cudaMemset(flag, 0, sizeof(std::int32_t)));
        CUDA_OK(cudaMemset(recv, 0, sizeof(float) * n));
        CUDA_OK(cudaMemset(errors, 0, sizeof(std::int32_t)));
        CUDA_OK(cudaDeviceSynchronize());
        nvshmem_barrier_all();  // every PE has reset its flag and buffer before any PE puts into it

        k::Args a{send, n, recv, n, flag, 1, errors, 1};
        const int rc = k::launch_all([&](std::size_t e, std::uint32_t blocks, void** params) -> int {
            const dim3 grid(blocks), block(k::entry_points[e].block_dim);
            if (k::collective_launch) {
                return nvshmemx_collective_launch(functions[e], grid, block, params, 0, stream);
            }
            return int(cudaLaunchKernel(functions[e], grid, block, params, 0, stream));
        }, a);
        if (rc != 0) {
            std::fprintf(stderr, "PE %d: launch failed (%d)\n", me, rc);
            return EXIT_CHECK_FAILED;
        }
        CUDA_OK(cudaStreamSynchronize(stream));

        std::int32_t device_errors = 0;
        CUDA_OK(cudaMemcpy(&device_errors, errors, sizeof device_errors, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(got.data(), recv, sizeof(float) * n, cudaMemcpyDeviceToHost));
        int host_errors = 0;
        for (int i = 0; i < n; ++i) {
            host_errors += got[i] != value_of(left, i);
        }
        if (device_errors != 0 || host_errors != 0) {
            std::fprintf(stderr, "PE %d round %d: %d mismatches seen by the kernel, %d by the host\n", me, round,
                         device_errors, host_errors);
            status = EXIT_CHECK_FAILED;
        }
        nvshmem_barrier_all();  // no PE starts the next round while a peer still reads this one
    }
    if (status == 0) {
        std::printf("PE %d/%d: OK (%d rounds of %d floats from PE %d)\n", me, npes, rounds, n, left);
    }
    CUDA_OK(cudaStreamDestroy(stream));
    CUDA_OK(cudaFree(errors));
    nvshmem_free(flag);
    nvshmem_free(recv);
    nvshmem_free(send);
    nvshmem_finalize();
    return status;
}

int usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s [--pes N] [--n ELEMENTS] [--rounds R]\n", argv0);
    return EXIT_USAGE;
}

}  // namespace

int main(int argc, char** argv) {
    int pes = 0, n = 1 << 16, rounds = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) {
            return usage(argv[0]);
        }
        const int value = std::atoi(argv[++i]);
        if (arg == "--pes" && value >= 1) {
            pes = value;
        } else if (arg == "--n" && value >= 1) {
            n = value;
        } else if (arg == "--rounds" && value >= 1) {
            rounds = value;
        } else {
            return usage(argv[0]);
        }
    }
    if (pes == 0) {  // one PE of a job nvshmrun / mpirun started
        return run_pe(false, nullptr, 0, 0, n, rounds);
    }
    // Self-launched: PE 0 makes the job's unique id, then forks the others before anything
    // touches CUDA (a forked child cannot use a CUDA context its parent created).
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (nvshmemx_get_uniqueid(&id) != 0) {
        std::fprintf(stderr, "nvshmemx_get_uniqueid failed\n");
        return EXIT_CHECK_FAILED;
    }
    std::vector<pid_t> children;
    for (int rank = 1; rank < pes; ++rank) {
        const pid_t pid = fork();
        if (pid == 0) {
            return run_pe(true, &id, rank, pes, n, rounds);
        }
        if (pid < 0) {
            std::perror("fork");
            return EXIT_CHECK_FAILED;
        }
        children.push_back(pid);
    }
    int status = run_pe(true, &id, 0, pes, n, rounds);
    for (const pid_t pid : children) {
        int child = 0;
        waitpid(pid, &child, 0);
        const int code = WIFEXITED(child) ? WEXITSTATUS(child) : EXIT_CHECK_FAILED;
        if (status == 0 || (status == EXIT_NO_DEVICE && code != 0)) {
            status = code;
        }
    }
    return status;
}
