# CUDA translation units of the dense ops (src/cuda/dense/). The bf16/fp16
# GEMM is one .cu per (dtype, tile configuration) of gemm_tile_configs.h, so
# they compile in parallel. Included from CMakeLists.txt next to
# cuda_sources.cmake.
#
# The rule's entries (pick_gemm_tile) are always built. The measurement
# entries, which only SAMEBITS_GEMM_TILE reaches (cluster, ping-pong and
# superseded layouts kept to compare against), are built with
# -DSAMEBITS_GEMM_RESEARCH_TILES=ON: they are a third of the library's
# compile time (gemm_tile_configs.h, kGemmResearchCfg).
option(SAMEBITS_GEMM_RESEARCH_TILES "sm90 GEMM: also the measurement-only tile entries (SAMEBITS_GEMM_TILE)" OFF)
set(samebits_gemm_tiles 64x32 64x64 64x128 128x128 128x256 64x128c2 16x32s 16x64s 128x224 128x192 128x160
    256x160 128x96 192x192w3 192x128w3 128x168 64x96 16x112s)
set(samebits_gemm_research_tiles 64x256 128x256m2 128x128m2 128x128pp 128x128ppm2 32x64s 192x128 192x192)
if(SAMEBITS_GEMM_RESEARCH_TILES)
  list(APPEND samebits_gemm_tiles ${samebits_gemm_research_tiles})
  target_compile_definitions(samebits PRIVATE SAMEBITS_GEMM_RESEARCH_TILES=1)
endif()
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
