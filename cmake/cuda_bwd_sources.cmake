# The sm90 attention backward (docs/backward_design.md): host side, then one
# .cu per (head dim, dtype). On by default since it passed its GPU tests
# (H200, 2026-11-21: accuracy, 50-run hashes, batch/varlen invariance, GQA
# sums; docs/benchmarks.md). With SAMEBITS_CUDA_BACKWARD=OFF nothing here is
# built and launch.cu answers SB_UNSUPPORTED. Included from CMakeLists.txt
# next to the other cuda_*_sources.cmake files.
option(SAMEBITS_CUDA_BACKWARD "Build the sm90 attention backward" ON)
if(SAMEBITS_CUDA_BACKWARD)
  set(samebits_bwd_sources ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_bwd_sm90.cu)
  foreach(d 64 128 256)
    foreach(dt bf16 fp16)
      list(APPEND samebits_bwd_sources ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_bwd_sm90_hdim${d}_${dt}.cu)
    endforeach()
  endforeach()
  target_sources(samebits PRIVATE ${samebits_bwd_sources})
  target_compile_definitions(samebits PRIVATE SAMEBITS_CUDA_BACKWARD=1)
  # v3 dQ pass (TMA producer warp + mbarrier ring), same bits as v2; off
  # until it has passed the GPU tests (docs/backward_design.md, "v3").
  option(SAMEBITS_BWD_TMA "sm90 backward: the v3 dQ kernel with a TMA producer" ON)
  # v3 dK/dV pass (producer warpgroup + setmaxnreg), same bits as v2; only
  # with SAMEBITS_BWD_TMA.
  option(SAMEBITS_BWD_TMA_DKDV "sm90 backward: also the v3 dK/dV kernel (needs SAMEBITS_BWD_TMA)" ON)
  # Experimental fused backward at head dim 128 (dK, dV and dQ in one
  # kernel, dq added through ordered bulk reductions; other dq bits than
  # the default): docs/backward_design.md, "Fused dQ, rebuilt".
  option(SAMEBITS_BWD_FUSED "sm90 backward: the fused kernel at head dim 128 (experimental, other dq bits)" OFF)
  # Set on the backward's sources only: the other kernels never see them.
  if(SAMEBITS_BWD_TMA)
    set_property(SOURCE ${samebits_bwd_sources} APPEND PROPERTY COMPILE_DEFINITIONS SAMEBITS_BWD_TMA=1)
    if(SAMEBITS_BWD_TMA_DKDV)
      set_property(SOURCE ${samebits_bwd_sources} APPEND PROPERTY COMPILE_DEFINITIONS SAMEBITS_BWD_TMA_DKDV=1)
      if(SAMEBITS_BWD_FUSED)
        set_property(SOURCE ${samebits_bwd_sources} APPEND PROPERTY COMPILE_DEFINITIONS SAMEBITS_BWD_FUSED=1)
      endif()
    elseif(SAMEBITS_BWD_FUSED)
      message(FATAL_ERROR "SAMEBITS_BWD_FUSED=ON needs SAMEBITS_BWD_TMA_DKDV=ON")
    endif()
  elseif(SAMEBITS_BWD_TMA_DKDV)
    message(FATAL_ERROR "SAMEBITS_BWD_TMA_DKDV=ON needs SAMEBITS_BWD_TMA=ON")
  endif()
endif()
