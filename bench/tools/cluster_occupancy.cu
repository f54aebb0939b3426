// Prints how many clusters of n CTAs (n = 1..16) can be resident at once on
// device 0 for a kernel of T threads and S bytes of dynamic shared memory
// (cudaOccupancyMaxActiveClusters), the figure launch_fold in
// src/cuda/attention_decode_sm90_launch_impl.h asks for.
// usage: cluster_occupancy [threads] [smem_bytes]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void probe_kernel(int* p) {
  extern __shared__ int s[];
  if (p) p[0] = s[0];
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 160;
  const int smem = argc > 2 ? std::atoi(argv[2]) : 213 * 1024;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 1;
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  std::printf("%s, %d SMs; %d threads, %d bytes of shared memory a CTA\n", prop.name, prop.multiProcessorCount,
              threads, smem);
  for (int n = 1; n <= 16; ++n) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(n, 1, 1);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = n;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, probe_kernel, &cfg);
    std::printf("cluster %2d: %3d resident clusters (%3d CTAs)%s%s\n", n, clusters, clusters * n,
                err == cudaSuccess ? "" : " error: ", err == cudaSuccess ? "" : cudaGetErrorString(err));
    cudaGetLastError();
  }
  return 0;
}
