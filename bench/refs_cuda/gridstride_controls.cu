// Controls for the SASS table: the hand-written reference collectives of
// reference/perf/ref/common.cuh inside the task loop every one of our entry points runs
// (a grid-stride loop over the range, parameters as we pass them: plain pointers and an
// int32 extent). A collective called in a loop needs a barrier before it publishes, or a
// fast warp's next iteration overwrites a slot a slow warp has not read yet; the
// references run once per thread and need none. The difference between a reference and
// its control is the price of the task shape; the difference between the control and our
// kernel is the price of our code.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
control_block_reduce_f32(float* x, int x_shape_0, float* out, int out_shape_0) {
  __shared__ float smem[WARPS];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < x_shape_0; i += blockDim.x * gridDim.x) {
    __syncthreads();
    float s = block_reduce_add(x[i], smem);
    if (threadIdx.x == 0) out[i / BLOCK] = s;
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
control_block_inclusive_i32(int* x, int x_shape_0, int* y, int y_shape_0) {
  __shared__ int smem[WARPS];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < x_shape_0; i += blockDim.x * gridDim.x) {
    __syncthreads();
    int total;
    y[i] = block_inclusive_add(x[i], smem, total);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
control_block_exclusive_i32(int* x, int x_shape_0, int* y, int y_shape_0) {
  __shared__ int smem[WARPS];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < x_shape_0; i += blockDim.x * gridDim.x) {
    __syncthreads();
    int total, v = x[i];
    y[i] = block_inclusive_add(v, smem, total) - v;
  }
}
