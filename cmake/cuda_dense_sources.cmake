# CUDA translation units of the dense ops (src/cuda/dense/). The bf16/fp16
# GEMM is one .cu per (dtype, tile configuration) of gemm_tile_configs.h, so
# they compile in parallel. Included from CMakeLists.txt next to
# cuda_sources.cmake.
set(samebits_gemm_tiles 64x32 64x64 64x128 64x256 128x128 128x256 64x128c2 128x256m2 128x128m2 128x128pp 128x128ppm2
    16x32s 16x64s 32x64s 192x128 128x224 128x192 128x160
    192x192 256x160 128x96 192x192w3 192x128w3)
set(samebits_gemm_sources)
foreach(dt bf16 fp16)
  foreach(tile ${samebits_gemm_tiles})
    list(APPEND samebits_gemm_sources ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/dense/gemm_sm90_${dt}_${tile}.cu)
  endforeach()
endforeach()
target_sources(samebits PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/dense/rowops.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/dense/gemm_launch_sm90.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/dense/gemm_sm90_ffma_f32.cu
  ${samebits_gemm_sources}
)
