# CUDA translation units of the KV-cache attention path (decode, speculative
# verify, chunked prefill) and the KV-cache append kernel. On by default
# since they passed their GPU tests (H200, 2026-11-21: decode == forward row
# bit for bit, chunked prefill == one shot, pages, graphs; docs/benchmarks.md).
# With SAMEBITS_CUDA_DECODE=OFF nothing here is built and KV-cache attention
# on CUDA answers SB_UNSUPPORTED. See docs/decode_design.md.
option(SAMEBITS_CUDA_DECODE "Build the sm90 KV-cache attention (decode) and append kernels" ON)
if(SAMEBITS_CUDA_DECODE)
  set(samebits_decode_sources
    ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_decode_sm90.cu
    ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/kvcache_append_sm90.cu)
  foreach(d 64 128 256)
    foreach(dt bf16 fp16)
      list(APPEND samebits_decode_sources
        ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_decode_sm90_hdim${d}_${dt}.cu)
    endforeach()
  endforeach()
  target_sources(samebits PRIVATE ${samebits_decode_sources})
  target_compile_definitions(samebits PRIVATE SAMEBITS_CUDA_DECODE=1)
endif()
