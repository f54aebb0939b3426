// Driver entry points the CUDA backend needs, looked up through the runtime
// so that libsamebits never links libcuda (the static runtime loads the
// driver lazily; a machine without a GPU still loads the library).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace samebits::cuda {

// cuTensorMapEncodeTiled, or nullptr when the driver does not provide it.
// Looked up once per process (an inline function's static is shared by
// every translation unit that calls it).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encode_fn() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

}  // namespace samebits::cuda
