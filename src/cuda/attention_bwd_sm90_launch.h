// sm90 attention backward: the host side. attention_bwd_sm90() checks what
// the kernels support, fills AttentionBwdParams and calls the launcher of the
// one configuration that matches (head dim, dtype); each launcher is
// instantiated in its own .cu file (attention_bwd_sm90_hdim<D>_<dtype>.cu),
// listed in cmake/cuda_bwd_sources.cmake. Built only with
// -DSAMEBITS_CUDA_BACKWARD=ON (docs/backward_design.md).
#pragma once

#include <cuda_runtime.h>

#include "cuda/attention_bwd_sm90_params.h"
#include "samebits/samebits.h"

namespace samebits::cuda::sm90 {

// Launch geometry chosen on the host (FREE: never moves a bit).
struct BwdLaunchShape {
  // CTAs of each pass: its unit count, or fewer (the CTAs then walk the
  // units round-robin); < 0: unknown on the host (varlen), a persistent grid
  // of num_sms x CTAs per SM.
  long dkdv_units;
  long dq_units;
  long pre_units;
  int num_sms;
  int max_ctas;  // > 0: cap on every grid (tests use it to vary the grid)
  cudaStream_t stream;
  size_t fused_workspace_bytes;  // the fused backward: workspace bytes (zeroed per call)
};

template <class Cfg>
sb_status launch_attention_bwd(const AttentionBwdParams& params, const BwdLaunchShape& shape);

#if SAMEBITS_BWD_TMA
// A v3 kernel's tensor maps (BwdMaps) from the params' raw views:
// q, dout with boxes of q_box_rows rows, k, v with kv_box_rows rows.
// False when the driver cannot encode them (a stride TMA does not take):
// the launcher then runs the v2 dQ kernel.
bool make_bwd_maps(const AttentionBwdParams& p, int head_dim, bool bf16, int q_box_rows,
                      int kv_box_rows, BwdMaps* maps);
#endif

// Entry points from launch.cu.
// Bytes of device workspace the backward of p needs (0: none): the fused
// backward's f32 dQ accumulators and counters. total_q: rows of the packed
// q when cu_seqlens_q is set; ignored for dense batches.
size_t attention_bwd_sm90_workspace_size(const sb_attention_params& p, int64_t total_q);
// workspace == nullptr (bytes == 0): the backward allocates and frees its
// own, stream-ordered (a packed batch with total_q < 0 then reads the row
// count from cu_seqlens_q, a synchronizing copy). The results never depend
// on the workspace.
sb_status attention_bwd_sm90(const sb_attention_params& p, void* workspace, size_t bytes,
                             int64_t total_q);
sb_status attention_bwd_sm90(const sb_attention_params& p);

}  // namespace samebits::cuda::sm90
