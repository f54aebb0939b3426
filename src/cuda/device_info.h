// Host helper: the current device's SM count, asked once per device.
#pragma once

#include <atomic>

#include <cuda_runtime.h>

namespace samebits::cuda {

// SMs of the current device (0 where the query fails); the first call on
// each of the first 64 devices asks the runtime, later calls read an atomic.
inline int device_sm_count() {
  static std::atomic<int> known[64];  // the answer + 1; 0: not asked yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const bool cached = dev >= 0 && dev < 64;
  if (cached) {
    if (const int v = known[dev].load(std::memory_order_relaxed); v != 0) return v - 1;
  }
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError();
    n = 0;
  }
  if (cached) known[dev].store(n + 1, std::memory_order_relaxed);
  return n;
}

// Peak memory clock of the current device in kHz (0 where the query fails),
// asked once per device like device_sm_count. BITS-FREE: only schedule
// choices read it (an H100 SXM 2619 MHz, an H200 3201 MHz).
inline int device_memory_khz() {
  static std::atomic<int> known[64];  // the answer + 1; 0: not asked yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const bool cached = dev >= 0 && dev < 64;
  if (cached) {
    if (const int v = known[dev].load(std::memory_order_relaxed); v != 0) return v - 1;
  }
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess) {
    cudaGetLastError();
    khz = 0;
  }
  if (cached) known[dev].store(khz + 1, std::memory_order_relaxed);
  return khz;
}

}  // namespace samebits::cuda
