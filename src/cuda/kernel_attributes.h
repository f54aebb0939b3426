// Host helper: a kernel's shared-memory opt-in, set once per (kernel, device).
//
// cudaFuncSetAttribute is a per-device property of the function, so setting
// it inside every call only costs host time (several us a call, paid in full
// by a GPU waiting for the launch) and puts non-launch calls inside a CUDA
// graph capture. The first call on each device sets it; later calls read one
// atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include <cuda_runtime.h>

namespace samebits::cuda {

// Sets cudaFuncAttributeMaxDynamicSharedMemorySize of Kernel to `bytes` (and,
// with max_shared_carveout, the carveout preference to all shared memory) on
// the current device, once per device. Devices past 63 set it every call.
template <auto Kernel>
cudaError_t opt_in_shared_memory(int bytes, bool max_shared_carveout = false) {
  static std::atomic<uint64_t> done{0};
  static std::mutex mu;
  int dev = 0;
  if (cudaError_t err = cudaGetDevice(&dev); err != cudaSuccess) return err;
  const uint64_t bit = dev >= 0 && dev < 64 ? uint64_t(1) << dev : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit) != 0) return cudaSuccess;
  std::lock_guard<std::mutex> lock(mu);
  cudaError_t err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess && max_shared_carveout)
    err = cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared);
  if (err == cudaSuccess) done.fetch_or(bit, std::memory_order_release);
  return err;
}

}  // namespace samebits::cuda
