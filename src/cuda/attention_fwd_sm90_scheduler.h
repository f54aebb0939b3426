// Persistent tile scheduler of the sm90 attention forward. A work item is
// (sequence b, head h, query tile). Items are numbered sequence by sequence;
// inside a sequence the order depends on whether tiles cost the same:
//  - no window (every tile sees every key): head by head, tiles in order.
//    CTAs running side by side work on the same head (and the heads of one
//    GQA group next to each other), so its K/V stream through L2 once
//    instead of once per head in flight.
//  - causal / sliding window: tile rank by tile rank (longest first, the
//    diagonal tiles last), heads innermost. Items next to each other cost
//    the same, so the static round-robin over CTAs stays balanced (with the
//    head-major order a CTA would keep drawing the same tile rank). Every CTA walks
// items blockIdx.x, blockIdx.x + gridDim.x, ... Each role of the CTA runs its
// own copy of the scheduler and gets the same items in the same order.
//
// The order and the grid are FREE: a row's bits never depend on which CTA
// computes it or when. Sequence lengths come from cu_seqlens on the device,
// so the host never needs them (no sync, graph-capturable).
#pragma once

#include "cuda/attention_fwd_sm90_params.h"

namespace samebits::cuda::sm90 {

struct WorkItem {
  int b, h, m_block;
  int q_row0, q_batch;  // tensor-map coordinates of the sequence's row 0
  int k_row0, k_batch;
  int lq, lk;
};

template <int kBlockM>
struct TileScheduler {
  const AttentionFwdParams& p;
  int b = 0;             // cursor: first sequence not yet fully passed
  long items_before = 0; // items of sequences < b

  __device__ explicit TileScheduler(const AttentionFwdParams& params) : p(params) {}

  __device__ __forceinline__ int seqlen_q(int bb) const {
    return p.cu_seqlens_q ? p.cu_seqlens_q[bb + 1] - p.cu_seqlens_q[bb] : p.seqlen_q;
  }

  // Fills `w` with item number `index`; false once past the last item.
  // Indices must be asked for in increasing order.
  __device__ bool get(long index, WorkItem& w) {
    long items = 0;
    int tiles = 0;
    while (b < p.batch) {
      w.lq = seqlen_q(b);
      tiles = (w.lq + kBlockM - 1) / kBlockM;
      items = static_cast<long>(tiles) * p.num_heads;
      if (index < items_before + items) break;
      items_before += items;
      ++b;
    }
    if (b >= p.batch) return false;
    const long r = index - items_before;  // item inside sequence b
    w.b = b;
    if (p.window_left < 0 && p.window_right < 0) {
      w.h = static_cast<int>(r / tiles);
      w.m_block = static_cast<int>(r % tiles);
    } else {
      w.h = static_cast<int>(r % p.num_heads);
      w.m_block = tiles - 1 - static_cast<int>(r / p.num_heads);
    }
    if (p.cu_seqlens_q) {
      w.q_row0 = p.cu_seqlens_q[b];
      w.q_batch = 0;
    } else {
      w.q_row0 = 0;
      w.q_batch = b;
    }
    if (p.cu_seqlens_k) {
      w.k_row0 = p.cu_seqlens_k[b];
      w.k_batch = 0;
      w.lk = p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b];
    } else {
      w.k_row0 = 0;
      w.k_batch = b;
      w.lk = p.seqlen_k;
    }
    if (p.seqused_k) w.lk = p.seqused_k[b];
    return true;
  }
};

}  // namespace samebits::cuda::sm90
