// Persistent tile scheduler of the sm90 attention forward. A work item is
// (sequence b, head h, query tile). Every CTA walks the units
// blockIdx.x, blockIdx.x + gridDim.x, ... (static round-robin); units are
// numbered sequence by sequence, head by head inside a sequence (CTAs
// running side by side work on the same head, and the heads of one GQA group
// next to each other, so K/V stream through L2 once instead of once per head
// in flight).
//  - no window (every tile sees every key): a unit is one query tile, tiles
//    in order; every unit costs the same.
//  - causal / sliding window: a unit is a PAIR of tiles of one head, ranks
//    T-1-u and u (the longer first; the middle tile of an odd T alone).
//    Under a causal mask tile r costs r + 1 (+ const) KV blocks, so every
//    pair costs T + 1: the round-robin stays balanced whatever the batch
//    and length. (One tile per unit, rank-major, left a CTA drawing the same
//    rank round after round when B*H*T is near a multiple of the grid:
//    simulated makespan 1.06x-1.40x of ideal for L = 16k..1k; pairs: 1.03x,
//    the rounding of the last round.)
// Each role of the CTA runs its own copy of the scheduler and gets the same
// items in the same order.
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
  // How a tile that crosses the sequence end is loaded (the producer,
  // attention_fwd_sm90_mainloop.h; FREE: every way gives the same bits).
  // q/k_tail_tma: the tensor map's rows end where the sequence ends (a
  // dense batch; for keys also no seqused_k below the stored length), so
  // TMA zero-fills the rows past the end. q/k_end: a packed batch's rows
  // in use (cu_seqlens[batch]); a tile that ends there or before may be
  // read by TMA with its neighbour's rows (then made harmless), else it is
  // loaded by hand.
  bool q_tail_tma, k_tail_tma;
  int q_end, k_end;
};

template <int kBlockM>
struct TileScheduler {
  const AttentionFwdParams& p;
  int b = 0;             // cursor: first sequence not yet fully passed
  long items_before = 0; // units of sequences < b
  long index;            // this CTA's next unit
  int second = -1;       // >= 0: the second tile of the current pair, not yet handed out
  bool paired;

  __device__ explicit TileScheduler(const AttentionFwdParams& params)
      : p(params), index(blockIdx.x), paired(params.window_left >= 0 || params.window_right >= 0) {}

  __device__ __forceinline__ int seqlen_q(int bb) const {
    return p.cu_seqlens_q ? p.cu_seqlens_q[bb + 1] - p.cu_seqlens_q[bb] : p.seqlen_q;
  }

  // Fills `w` with this CTA's next work item; false once past the last one.
  // The second tile of a pair only changes w.m_block.
  __device__ bool next(WorkItem& w) {
    if (second >= 0) {
      w.m_block = second;
      second = -1;
      return true;
    }
    const bool ok = get(index, w);
    index += gridDim.x;
    return ok;
  }

 private:
  // Fills `w` with the first tile of unit number `unit`; false once past the
  // last unit. Units must be asked for in increasing order.
  __device__ bool get(long unit, WorkItem& w) {
    long units = 0;
    int tiles = 0, per_head = 0;
    while (b < p.batch) {
      w.lq = seqlen_q(b);
      tiles = (w.lq + kBlockM - 1) / kBlockM;
      per_head = paired ? (tiles + 1) / 2 : tiles;
      units = static_cast<long>(per_head) * p.num_heads;
      if (unit < items_before + units) break;
      items_before += units;
      ++b;
    }
    if (b >= p.batch) return false;
    const long r = unit - items_before;  // unit inside sequence b
    w.b = b;
    w.h = static_cast<int>(r / per_head);
    const int u = static_cast<int>(r % per_head);
    if (paired) {
      w.m_block = tiles - 1 - u;
      second = (w.m_block != u) ? u : -1;
    } else {
      w.m_block = u;
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
    w.q_tail_tma = p.tail_tma != 0 && p.cu_seqlens_q == nullptr;
    w.k_tail_tma = p.tail_tma != 0 && p.cu_seqlens_k == nullptr && w.lk == p.seqlen_k;
    w.q_end = p.tail_tma != 0 && p.cu_seqlens_q ? p.cu_seqlens_q[p.batch] : 0;
    w.k_end = p.tail_tma != 0 && p.cu_seqlens_k ? p.cu_seqlens_k[p.batch] : 0;
    return true;
  }
};

}  // namespace samebits::cuda::sm90
