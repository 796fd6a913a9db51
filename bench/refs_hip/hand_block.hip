// AMD baseline for the code-quality table: the hand-written block reduce and scans of
// reference/perf/ref/common.cuh and a_block_reduce.cu / b_block_scan.cu, ported to HIP
// and 64-wide wavefronts (hipCUB / rocPRIM are not installed here). Same shapes: 256
// threads, one item per thread, results as in the CUDA references.
#include <hip/hip_runtime.h>

constexpr int BLOCK = 256;
constexpr int WAVE = 64;
constexpr int WAVES = BLOCK / WAVE;

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & (WAVE - 1); }
__device__ __forceinline__ unsigned wave_id() { return threadIdx.x / WAVE; }

template <typename T> __device__ __forceinline__ T wave_reduce_add(T v) {
#pragma unroll
  for (int o = WAVE / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
  return v;
}

template <typename T> __device__ __forceinline__ T wave_inclusive_add(T v) {
  const unsigned lane = lane_id();
#pragma unroll
  for (int o = 1; o < WAVE; o <<= 1) {
    T n = __shfl_up(v, o);
    if (lane >= (unsigned)o) v += n;
  }
  return v;
}

template <typename T> __device__ __forceinline__ T block_reduce_add(T v, T* smem) {
  v = wave_reduce_add(v);
  if (lane_id() == 0) smem[wave_id()] = v;
  __syncthreads();
  T t = (lane_id() < WAVES) ? smem[lane_id()] : T(0);
  return wave_reduce_add(t);
}

template <typename T> __device__ __forceinline__ T block_inclusive_add(T v, T* smem, T& total) {
  T inc = wave_inclusive_add(v);
  if (lane_id() == WAVE - 1) smem[wave_id()] = inc;
  __syncthreads();
  T w = (lane_id() < WAVES) ? smem[lane_id()] : T(0);
  T winc = wave_inclusive_add(w);
  T wexc = __shfl(winc - w, wave_id());
  total = __shfl(winc, WAVES - 1);
  return inc + wexc;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
hand_block_reduce_f32(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float smem[WAVES];
  float s = block_reduce_add(in[blockIdx.x * BLOCK + threadIdx.x], smem);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
hand_block_inclusive_i32(const int* __restrict__ in, int* __restrict__ out) {
  __shared__ int smem[WAVES];
  int i = blockIdx.x * BLOCK + threadIdx.x, total;
  out[i] = block_inclusive_add(in[i], smem, total);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
hand_block_exclusive_i32(const int* __restrict__ in, int* __restrict__ out) {
  __shared__ int smem[WAVES];
  int i = blockIdx.x * BLOCK + threadIdx.x, total;
  int v = in[i];
  out[i] = block_inclusive_add(v, smem, total) - v;
}

// Controls: the same collectives in our entry points' task loop (a grid-stride loop, a
// barrier before each collective publishes; see bench/refs_cuda/gridstride_controls.cu).
extern "C" __global__ void __launch_bounds__(BLOCK)
control_block_reduce_f32(float* x, int x_shape_0, float* out, int out_shape_0) {
  __shared__ float smem[WAVES];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < x_shape_0; i += blockDim.x * gridDim.x) {
    __syncthreads();
    float s = block_reduce_add(x[i], smem);
    if (threadIdx.x == 0) out[i / BLOCK] = s;
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
control_block_inclusive_i32(int* x, int x_shape_0, int* y, int y_shape_0) {
  __shared__ int smem[WAVES];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < x_shape_0; i += blockDim.x * gridDim.x) {
    __syncthreads();
    int total;
    y[i] = block_inclusive_add(x[i], smem, total);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
control_block_exclusive_i32(int* x, int x_shape_0, int* y, int y_shape_0) {
  __shared__ int smem[WAVES];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < x_shape_0; i += blockDim.x * gridDim.x) {
    __syncthreads();
    int total, v = x[i];
    y[i] = block_inclusive_add(v, smem, total) - v;
  }
}
