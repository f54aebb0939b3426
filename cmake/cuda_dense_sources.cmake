# CUDA translation units of the dense ops (src/cuda/dense/), one .cu per
# kernel family. Included from CMakeLists.txt next to cuda_sources.cmake.
target_sources(samebits PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/dense/rowops.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/dense/gemm_sm90_mma.cu
)
