// Host helpers: attributes of the current device, asked once per device.
#pragma once

#include <atomic>

#include <cuda_runtime.h>

namespace samebits::cuda {

// Attribute `A` of the current device (0 where the query fails); the first
// call on each of the first 64 devices asks the runtime, later calls read
// an atomic (one cache per attribute).
template <cudaDeviceAttr A>
inline int device_attribute() {
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
  int value = 0;
  if (cudaDeviceGetAttribute(&value, A, dev) != cudaSuccess) {
    cudaGetLastError();
    value = 0;
  }
  if (cached) known[dev].store(value + 1, std::memory_order_relaxed);
  return value;
}

// SMs of the current device (0 where the query fails).
inline int device_sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }

// Peak memory clock of the current device in kHz (0 where the query fails).
// BITS-FREE: only schedule choices read it (an H100 SXM 2619 MHz, an H200
// 3201 MHz).
inline int device_memory_khz() { return device_attribute<cudaDevAttrMemoryClockRate>(); }

}  // namespace samebits::cuda
