// Kernel parameters of the sm90 TMA + wgmma GEMM (gemm_kernel_sm90_tma_wgmma.cuh),
// filled on the host by gemm_launch_sm90.cu and passed by value as a
// __grid_constant__ (the TMA descriptors must live in parameter space).
#pragma once

#include <cuda.h>  // CUtensorMap (type only)

#include <cstdint>

#include "samebits/dense.h"

namespace samebits::cuda::dense::sm90 {

constexpr int kGroupM = 8;  // default GemmTmaParams::group_m

struct GemmTmaParams {
  CUtensorMap tma_a;  // A as (k, m, batch), 16-bit, 64 x BM boxes, 128-byte swizzle
  CUtensorMap tma_b;  // B as (k, n, batch) (the (n, k) layout), 64 x (BN / kClusterM) boxes
  CUtensorMap tma_c;  // out as (n, m, batch), 16-bit, kEpiBlock x kEpiBlock boxes, 128-byte swizzle; valid when out_tma
  // out again, boxes of kEpiBlock rows x (WN % kEpiBlock) columns (64-byte
  // swizzle for 32 columns, none otherwise): the staged epilogue's last
  // columns of a fragment whose width is not a multiple of 64; valid when out_tma_rem
  CUtensorMap tma_c_rem;
  int64_t m, n, k;
  int32_t batch;
  int32_t a_batched, b_batched;  // 1: z coordinate = batch index; 0: broadcast (z = 0)
  int32_t m_tiles, n_tiles, k_tiles;  // m_tiles: of kClusterM * BM rows (scheduling units)
  int64_t tiles;  // batch * m_tiles * n_tiles
  int32_t group_m;  // the scheduler's group of m tiles (gemm_scheduler_sm90.cuh), >= 1
  // the last m (n) tile moves back inside the operand where it would reach
  // past it by at least tail_m8 (tail_n8) eighths of a tile (tile_row0 /
  // tile_col0; 0: by any row, 9: never)
  int32_t tail_m8, tail_n8;
  // epilogue: out = round(alpha * acc + beta * bias)
  void* out;
  sb_dtype out_dtype;
  int32_t out_pairs;  // 1: two adjacent columns may be stored as one vector
  int32_t out_tma;    // 1: the staged epilogue (entries with kTmaStore) stores through tma_c
  int32_t out_tma_rem;  // 1: ... and the last WN % 64 columns through tma_c_rem
  int32_t lean;         // 1: the host launches the entry's lean kernel (gemm_kernel_sm90_tma_wgmma.cuh)
  int64_t out_batch_stride, out_row_stride;
  const void* bias;  // nullptr: none
  sb_dtype bias_dtype;
  int64_t bias_batch_stride, bias_row_stride;
  float alpha, beta;
};

}  // namespace samebits::cuda::dense::sm90
