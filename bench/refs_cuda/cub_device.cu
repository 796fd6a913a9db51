// The production CUB kernels our device-wide reduce and scan are measured against
// (bench/quality.py, device_algorithms): the host wrappers instantiate cub::DeviceReduce::Sum
// (DeviceReduceKernel: the tiles; DeviceReduceSingleTileKernel: the partials) and
// cub::DeviceScan::InclusiveSum (DeviceScanKernel, decoupled look-back) for f32 and i32.
// Compiled with nvcc -arch=sm_90 -cubin, like ours; nothing here runs.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

cudaError_t reduce_f32(void* tmp, size_t& bytes, const float* in, float* out, int n) {
    return cub::DeviceReduce::Sum(tmp, bytes, in, out, n);
}
cudaError_t reduce_i32(void* tmp, size_t& bytes, const int* in, int* out, int n) {
    return cub::DeviceReduce::Sum(tmp, bytes, in, out, n);
}
cudaError_t inclusive_scan_i32(void* tmp, size_t& bytes, const int* in, int* out, int n) {
    return cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, n);
}
