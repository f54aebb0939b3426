# The explicit list of CUDA translation units: one .cu per supported kernel
# configuration (STYLE.md rule 6). Adding a configuration adds a line here.
set(SAMEBITS_CUDA_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cuda/launch.cu
)
