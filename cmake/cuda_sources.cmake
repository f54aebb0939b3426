# The explicit list of CUDA translation units: one .cu per supported kernel
# configuration (STYLE.md rule 6). Adding a configuration adds a line here.
set(SAMEBITS_CUDA_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/launch.cu
  # attention forward, sm90: host side, then one file per (head dim, dtype)
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90_hdim64_bf16.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90_hdim64_fp16.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90_hdim128_bf16.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90_hdim128_fp16.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90_hdim256_bf16.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/attention_fwd_sm90_hdim256_fp16.cu
)
