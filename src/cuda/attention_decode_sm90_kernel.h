// sm90 attention over a KV cache, pass 1: the split kernel. One CTA per
// (split, packed query tile, sequence x KV head) computes the split's
// online-softmax state (m, l, acc) of docs/numerics.md for the 64 packed
// rows of its tile and stores it, f32, in the workspace; pass 2
// (attention_decode_sm90_combine.h) folds the splits of every row.
//
// Roles (160 threads):
//   warps 0..3 (one warpgroup)  consumer: the forward's Consumer<Cfg> steps
//                                (S = Q K^T, softmax step, P V), 64 rows
//   warp 4                      producer: Q by hand; K, V blocks by TMA
//                                (one box per page piece) or by hand with
//                                zero fill for the sequence's last block
//
// Packed rows. Row r of tile t is packed row R = 64 t + r of the wave;
// R = (i - q_begin) * head_group + g holds query row i of query head
// hk * head_group + g. Decode (one query) packs the head_group query heads
// of a KV group into one tile, so K and V are read once per group.
//
// Barriers (shared memory, DecodeConfig::kNumBarriers):
//   q_full       producer -> consumer: Q tile written.       32 arrivals
//   k_full[s]    producer -> consumer: K block in stage s.   32 arrivals (+tx)
//   v_full[s]    producer -> consumer: V block in stage s.   32 arrivals (+tx)
//                (every producer lane arrives after its own stores, so a
//                hand-loaded tile is ordered before the consumer's reads
//                thread by thread; a TMA block: lane 0 with the bytes, then
//                the other 31)
//   k_empty[s]   consumer -> producer: every consumer warp finished
//                S = Q K^T on stage s; K may be overwritten. 4 arrivals
//                (kMma: 128, every thread after its own ldmatrix reads)
//   v_empty[s]   consumer -> producer: every consumer warp finished
//                O += P V on stage s; V may be overwritten.  4 arrivals
//                (kMma: 128)
// Both roles walk the same blocks n_first..n_last; block it (0-based) uses
// stage it % kStages with phase parity (it / kStages) & 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <type_traits>

#include "cuda/attention_decode_sm90_params.h"
#include "cuda/attention_fwd_sm90_mainloop.h"
#include "cuda/attention_fwd_sm90_mask.h"
#include "cuda/sm90_primitives.h"
#include "cuda/wgmma_ops_sm90.h"

namespace samebits::cuda::sm90 {

// Keys of sequence b: seqused_k[b] (clamped to the capacity), else seqlen_k.
__device__ __forceinline__ int decode_keys(const AttentionDecodeParams& p, int b) {
  int lk = p.seqused_k ? p.seqused_k[b] : p.seqlen_k;
  return max(0, min(lk, p.seqlen_k));
}

// Programmatic dependent launch (PTX griddepcontrol). Pass 1 lets the
// combine, launched behind it with programmatic stream serialization, be
// scheduled early; the combine waits for pass 1's completion (and its
// memory flush) before it reads a partial. Both are no-ops when the grids
// were not launched that way.
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void grid_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// Visibility of sequence b: bottom-right aligned over all seqlen_q query
// rows (a wave only selects rows; positions are absolute).
__device__ __forceinline__ Visibility decode_visibility(const AttentionDecodeParams& p, int lk) {
  return Visibility{p.seqlen_q, lk, p.window_left, p.window_right};
}

// The forward's ScoreMod, built from the same constants (ScoreMod reads
// only scale_log2, softcap_in, softcap_out and has_softcap).
__device__ __forceinline__ ScoreMod decode_score_mod(const AttentionDecodeParams& p) {
  AttentionFwdParams f;
  f.scale_log2 = p.scale_log2;
  f.softcap_in = p.softcap_in;
  f.softcap_out = p.softcap_out;
  f.has_softcap = p.has_softcap;
  return ScoreMod(f);
}

// The combine's output step of one row from its folded state (M, L): the
// forward's write_output. out = round(ACC * inv), inv = 1 / L rounded once;
// lse = (M + log2 L) * ln2; L = 0 (no key seen): out = 0, lse = +inf. Used
// by the combine and, for rows that see one split (direct_out), by pass 1
// on the split state, which the combine would copy unchanged.
__device__ __forceinline__ void decode_finish_row(float M, float L, float& inv, float& lse) {
  constexpr float kLn2 = 0.6931471805599453f;
  inv = L == 0.f ? 0.f : __frcp_rn(L);
  lse = L == 0.f ? CUDART_INF_F : __fmul_rn(__fadd_rn(M, log2_approx(L)), kLn2);
}

// FoldState::combine for one row: updates (M, L), returns the weights a
// (old state) and b (split). The combine and the cluster fold (DecodeClusterFold)
// apply it to the splits a row sees, ascending.
__device__ __forceinline__ void fold_weights(float& M, float& L, float m, float l, float& a,
                                             float& b) {
  const float m_new = fmaxf(M, m);
  const float ms = m_new == -CUDART_INF_F ? 0.f : m_new;
  a = exp2_approx(__fsub_rn(M, ms));
  b = exp2_approx(__fsub_rn(m, ms));
  L = __fadd_rn(__fmul_rn(L, a), __fmul_rn(l, b));
  M = m_new;
}

// Timing trace (an experiment, compiled only with SAMEBITS_DECODE_TRACE):
// clock64 at events of CTA (0, 0, 0), printed by consumer thread 0 at its end.
#ifdef SAMEBITS_DECODE_TRACE
__device__ long long g_decode_trace[128];
__device__ __forceinline__ bool decode_trace_cta() { return blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0; }
#define SB_DECODE_TRACE(i)                                         \
  do {                                                             \
    if (decode_trace_cta()) g_decode_trace[(i)] = clock64();       \
  } while (0)
#else
#define SB_DECODE_TRACE(i) \
  do {                     \
  } while (0)
#endif

// Rows [r0, Bn) of a K/V stage (every 64-column chunk, the swizzled chunk
// layout of zero_tile_rows) set to zero by kThreads threads. V's rows past
// lk of a block that came by TMA hold what the cache holds there (NaN, say)
// or the stage's previous block, and P V multiplies them by P = 0; zero
// keeps the products the hand load's zero fill gave. The caller orders the
// stores before the readers (a barrier; for wgmma, a proxy fence first).
template <class Cfg, int kThreads>
__device__ __forceinline__ void zero_stage_rows_from(uint8_t* stage, int r0, int tid) {
  static_assert(Cfg::kRowBytes == 128, "zero_tile_rows' chunk rows");
  zero_tile_rows<Cfg::kBlockN, Cfg::kHeadDim, kThreads>(stage, r0, tid);
}

// What one CTA of the split kernel computes; all threads derive the same.
struct DecodeWork {
  int b, hk, tile, split;
  int lk;
  int r_begin, r_end;    // packed rows [r_begin, r_end) of the wave
  int i_first, i_last;   // their query rows (absolute)
  int n_first, n_last;   // KV blocks of the split that any row sees (empty: n_last < n_first)
};

// The work of split `split` of packed tile `tile` of sequence b, KV head hk.
template <class Cfg>
__device__ __forceinline__ DecodeWork decode_work_at(const AttentionDecodeParams& p, int split, int tile, int b,
                                                     int hk) {
  DecodeWork w;
  w.split = split;
  w.tile = tile;
  w.b = b;
  w.hk = hk;
  w.lk = decode_keys(p, w.b);
  w.r_begin = w.tile * Cfg::kBlockM;
  w.r_end = min(w.r_begin + Cfg::kBlockM, p.q_count * p.head_group);
  w.i_first = p.q_begin + w.r_begin / p.head_group;
  w.i_last = p.q_begin + (w.r_end - 1) / p.head_group;
  int lo, hi;
  decode_visibility(p, w.lk).key_range(w.i_first, w.i_last, lo, hi);
  lo = max(lo, w.split * Cfg::kSplit);
  hi = min(hi, w.split * Cfg::kSplit + Cfg::kSplit - 1);
  if (w.lk <= 0 || hi < lo || w.r_begin >= w.r_end) {
    w.n_first = 0;
    w.n_last = -1;
  } else {
    w.n_first = lo / Cfg::kBlockN;
    w.n_last = hi / Cfg::kBlockN;
  }
  return w;
}

template <class Cfg>
__device__ __forceinline__ DecodeWork decode_work(const AttentionDecodeParams& p) {
  if constexpr (Cfg::kWalk)  // grid (Hk, tiles, batch); the walk takes each split's work itself
    return decode_work_at<Cfg>(p, 0, blockIdx.y, blockIdx.z, blockIdx.x);
  else if constexpr (Cfg::kHeadMajor)  // grid (max_splits * Hk, tiles, batch)
    return decode_work_at<Cfg>(p, blockIdx.x / p.num_heads_k, blockIdx.y, blockIdx.z, blockIdx.x % p.num_heads_k);
  else  // grid (max_splits, tiles, batch * Hk)
    return decode_work_at<Cfg>(p, blockIdx.x, blockIdx.y, blockIdx.z / p.num_heads_k, blockIdx.z % p.num_heads_k);
}

template <class Cfg>
struct DecodeSmem {
  uint8_t* base;  // 1024-byte aligned
  __device__ uint8_t* q() const { return base + Cfg::kOffQ; }
  __device__ uint8_t* k(int s) const { return base + Cfg::kOffK + s * Cfg::kKVBytes; }
  __device__ uint8_t* v(int s) const { return base + Cfg::kOffV + s * Cfg::kKVBytes; }
  __device__ uint8_t* x() const { return base + Cfg::kOffX; }
  __device__ uint64_t* bars() const { return reinterpret_cast<uint64_t*>(base + Cfg::kOffBarriers); }
  __device__ uint64_t* q_full() const { return bars(); }
  __device__ uint64_t* k_full(int s) const { return bars() + 1 + s; }
  __device__ uint64_t* v_full(int s) const { return bars() + 1 + Cfg::kStages + s; }
  __device__ uint64_t* k_empty(int s) const { return bars() + 1 + 2 * Cfg::kStages + s; }
  __device__ uint64_t* v_empty(int s) const { return bars() + 1 + 3 * Cfg::kStages + s; }
};

// ------------------------------------------------------------------ producer
template <class Cfg>
struct DecodeProducer {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;

  // Cache slot of logical key `key` of sequence b: (page, slot).
  __device__ static void locate(const AttentionDecodeParams& p, int b, int key, int& page,
                                int& slot) {
    if (p.block_table) {
      page = p.block_table[b * p.block_table_batch_stride + key / p.page_size];
      slot = key % p.page_size;
    } else {
      page = b;
      slot = key;
    }
  }

  // Hand load of kRows x d into the 128B-swizzled chunk layout TMA writes
  // (load_tile's layout, sm90_primitives.h): element (r, c) in
  // chunk c / 64, row r, 16-byte unit ((c % 64) / 8) ^ (r % 8). row_ptr(r)
  // is the row's first element, or null for a zero row. The 32 lanes of
  // the producer warp take part, and nothing waits on a load here: lane j
  // computes the pointers of rows j, j + 32, .. (their block-table loads in
  // flight together), then every 16-byte unit goes by cp.async (zero fill
  // for a null row), each row's pointer shuffled from its lane. `any` is a
  // valid global address (a zero unit reads nothing but needs one). The
  // caller commits, waits, fences and signals. A load per unit that waited
  // for its row's table entry made the sequence's last block cost ~70 us
  // at batch 16 x 1k (H100, 2026-11-22), more than the other seven blocks.
  template <int kRows, class RowPtr>
  __device__ static void load_rows_async(uint8_t* dst, RowPtr row_ptr, const void* any, int lane) {
    constexpr int kUnitsPerRow = Cfg::kHeadDim / 8;  // 16-byte units
    static_assert(kRows % 32 == 0, "whole rounds of 32 rows");
    constexpr int kRowRegs = kRows / 32;
    unsigned long long rows[kRowRegs];
#pragma unroll
    for (int j = 0; j < kRowRegs; ++j)
      rows[j] = reinterpret_cast<unsigned long long>(row_ptr(lane + 32 * j));
#pragma unroll
    for (int j = 0; j < kRowRegs; ++j) {
      // A trip count the compiler sees as warp-uniform, so the shuffle is
      // a plain one (a lane-dependent start compiled into collective loops).
#pragma unroll 4
      for (int i = 0; i < kUnitsPerRow; ++i) {
        const int u = lane + 32 * i;
        const int r = 32 * j + u / kUnitsPerRow, unit = u % kUnitsPerRow;
        const Elem* row = reinterpret_cast<const Elem*>(__shfl_sync(0xffffffffu, rows[j], u / kUnitsPerRow));
        uint8_t* chunk = dst + (unit / 8) * (kRows * Cfg::kRowBytes);
        cp_async_16(chunk + r * Cfg::kRowBytes + (((unit % 8) ^ (r % 8)) << 4),
                    row != nullptr ? static_cast<const void*>(row + unit * 8) : any, row != nullptr);
      }
    }
  }

  // kMma: Q's 16 rows through registers, so its loads can be issued before
  // the first TMA requests and stored after them (load_rows_async's layout).
  static constexpr int kQUnits = Cfg::kQRows * (Cfg::kHeadDim / 8) / 32;  // 16-byte units a lane
  template <class RowPtr>
  __device__ static void load_q_regs(uint4 (&v)[kQUnits], RowPtr row_ptr, int lane) {
    constexpr int kUnitsPerRow = Cfg::kHeadDim / 8;
#pragma unroll
    for (int i = 0; i < kQUnits; ++i) {
      const int idx = lane + 32 * i;
      const Elem* src = row_ptr(idx / kUnitsPerRow);
      v[i] = src != nullptr ? __ldg(reinterpret_cast<const uint4*>(src + (idx % kUnitsPerRow) * 8))
                            : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ static void store_q_regs(uint8_t* dst, const uint4 (&v)[kQUnits], int lane) {
    constexpr int kUnitsPerRow = Cfg::kHeadDim / 8;
#pragma unroll
    for (int i = 0; i < kQUnits; ++i) {
      const int idx = lane + 32 * i, r = idx / kUnitsPerRow, unit = idx % kUnitsPerRow;
      uint8_t* chunk = dst + (unit / 8) * (Cfg::kQRows * Cfg::kRowBytes);
      *reinterpret_cast<uint4*>(chunk + r * Cfg::kRowBytes + (((unit % 8) ^ (r % 8)) << 4)) = v[i];
    }
  }

  // After a hand load: every writer fences its generic-proxy stores toward
  // the async proxy (wgmma reads them) and arrives (release: its stores
  // before the consumer's reads, ldmatrix included).
  __device__ static void signal(uint64_t* bar) {
    fence_proxy_async_smem();
    mbar_arrive(bar);
  }

  // The pages of the walk's TMA boxes, read from the block table once,
  // before Q (their latencies overlap) and before the first block: box q of
  // the walk (keys n_first * Bn + q * box_rows ..) is held by lane q % 32
  // in page[q / 32]. One dependent table load in front of every block's K
  // and V issue set the producer's pace (~1,000 cycles each; clock64
  // trace, docs/decode_design.md). Only boxes that start below lk are read
  // (those of whole blocks, and of the block ending past lk): no entry
  // past the sequence is touched.
  static constexpr int kBlockBoxesMax = Cfg::kBlockN / 8;  // box_rows >= 8
  static constexpr int kWalkRegs = (Cfg::kSplit / 8 + 31) / 32;
  static_assert(kBlockBoxesMax <= 32, "a block's boxes fit one warp");
  struct WalkPages {
    int page[kWalkRegs];
  };

  __device__ static WalkPages read_walk_pages(const AttentionDecodeParams& p, const DecodeWork& w, int lane) {
    WalkPages wp;
    const int k_first = w.n_first * Cfg::kBlockN;
    const int tma_blocks = max(0, min(w.n_last + 1, w.lk / Cfg::kBlockN) - w.n_first);
    int boxes = p.block_table && p.use_tma ? tma_blocks * (Cfg::kBlockN / p.box_rows) : 0;
    if (p.block_table && p.use_tma && w.n_last >= w.n_first && (w.n_last + 1) * Cfg::kBlockN > w.lk)
      boxes += partial_boxes(p, w.lk - w.n_last * Cfg::kBlockN);  // the walk's last block ends past lk
#pragma unroll
    for (int r = 0; r < kWalkRegs; ++r) {
      const int q = lane + 32 * r;
      wp.page[r] = q < boxes ? __ldg(p.block_table + w.b * p.block_table_batch_stride +
                                     (k_first + q * p.box_rows) / p.page_size)
                             : 0;
    }
    return wp;
  }

  // Boxes of a block that hold a key below lk (`keys` of them, 0 < keys <=
  // Bn; a whole block's Bn / box_rows).
  __device__ static int partial_boxes(const AttentionDecodeParams& p, int keys) {
    return (keys + p.box_rows - 1) / p.box_rows;
  }

  // Block `it` of the walk by TMA: a whole block (keys = Bn, every key < lk)
  // is Bn / box_rows boxes of box_rows slots (one page, or a piece of one),
  // each box_rows * 128 bytes per 64-column chunk, at its row offset inside
  // the chunk. box_rows is a multiple of 8, so every box starts on a
  // swizzle atom. Lane j issues box j; lane 0 announces the bytes first.
  // A block ending past lk (keys = lk - k0 < Bn) gets the boxes that start
  // below lk; the rest of the stage keeps what it held. Its rows past lk
  // are never used as read: K's meet scores that the mask sets to -inf,
  // V's are zeroed by the consumer before P V (zero_stage_rows_from).
  __device__ static void load_block_tma(const AttentionDecodeParams& p, const CUtensorMap* map,
                                        uint8_t* dst, uint64_t* bar, int b, int hk, int k0, int it,
                                        const WalkPages& wp, int lane, int keys = Cfg::kBlockN) {
    const int boxes = partial_boxes(p, keys);  // Bn / box_rows for a whole block (box_rows divides Bn)
    if (lane == 0) mbar_arrive_expect_tx(bar, uint32_t(boxes * p.box_rows * Cfg::kRowBytes * Cfg::kChunks));
    __syncwarp();
    int page = b, slot = k0 + lane * p.box_rows;  // a contiguous cache: one page per sequence
    if (p.block_table) {
      const int q = it * (Cfg::kBlockN / p.box_rows) + lane;  // this lane's box of the walk
#pragma unroll
      for (int r = 0; r < kWalkRegs; ++r) {  // every lane shuffles: the warp stays converged
        const int v = __shfl_sync(0xffffffffu, wp.page[r], q % 32);
        if (q / 32 == r) page = v;
      }
      // TMA over pages (use_tma): a block is whole pages (box = page, so
      // every box starts a page) or lies inside one page (one box): no
      // division on the request path unless pages are larger than a block.
      slot = p.page_size <= Cfg::kBlockN ? 0 : k0 % p.page_size;
    }
    if (lane < boxes) {
#pragma unroll
      for (int c = 0; c < Cfg::kChunks; ++c)
        tma_load_4d(dst + c * Cfg::kBlockN * Cfg::kRowBytes + lane * p.box_rows * Cfg::kRowBytes, map,
                    bar, c * Cfg::kChunk, slot, hk, page);
    }
    if (lane != 0) mbar_arrive(bar);  // the barrier counts the 32 producer lanes
  }

  // A block by hand: keys >= lk are zero (never read, never multiplied).
  // Issues the copies (load_rows_async); the caller commits and waits.
  __device__ static void load_block_by_hand(const AttentionDecodeParams& p, const void* base,
                                            int64_t page_stride, int64_t row_stride,
                                            int64_t head_stride, uint8_t* dst, int b, int hk,
                                            int k0, int lk, int lane) {
    const Elem* cache = static_cast<const Elem*>(base);
    load_rows_async<Cfg::kBlockN>(
        dst,
        [&](int r) -> const Elem* {
          const int key = k0 + r;
          if (key >= lk) return nullptr;
          int page, slot;
          locate(p, b, key, page, slot);
          return cache + page * page_stride + static_cast<int64_t>(slot) * row_stride + hk * head_stride;
        },
        base, lane);
  }

  // Block `it` (0-based) of the walk, n = n_first + it, into stage
  // ring % kStages once every consumer warp released the stage. `ring`
  // (default it): the ring position, which a walk over several splits
  // (Cfg::kWalk) counts on across them.
  __device__ static void load_kv(const AttentionDecodeParams& p, const DecodeWork& w,
                                 const DecodeSmem<Cfg>& smem, int it, const WalkPages& wp, int lane,
                                 int ring = -1) {
    if (ring < 0) ring = it;
    const int s = ring % Cfg::kStages;
    const uint32_t parity = (ring / Cfg::kStages) & 1;
    const int k0 = (w.n_first + it) * Cfg::kBlockN;
    // The block ending past lk by TMA too (keys < Bn): its consumer zeroes
    // V's rows past lk before P V.
    const int keys = min(Cfg::kBlockN, w.lk - k0);
    if (Cfg::kLean || p.use_tma) {
      mbar_wait(smem.k_empty(s), parity ^ 1);
      load_block_tma(p, &p.tma_k, smem.k(s), smem.k_full(s), w.b, w.hk, k0, it, wp, lane, keys);
      if (lane == 0 && it < 16) SB_DECODE_TRACE(64 + it);
      mbar_wait(smem.v_empty(s), parity ^ 1);
      load_block_tma(p, &p.tma_v, smem.v(s), smem.v_full(s), w.b, w.hk, k0, it, wp, lane, keys);
      if (lane == 0 && it < 16) SB_DECODE_TRACE(80 + it);
    } else if constexpr (!Cfg::kLean) {
      // K's and V's copies in flight together; each is signalled once its
      // own group has landed.
      mbar_wait(smem.k_empty(s), parity ^ 1);
      load_block_by_hand(p, p.k, p.k_page_stride, p.k_row_stride, p.k_head_stride, smem.k(s), w.b,
                         w.hk, k0, w.lk, lane);
      cp_async_commit();
      mbar_wait(smem.v_empty(s), parity ^ 1);
      load_block_by_hand(p, p.v, p.v_page_stride, p.v_row_stride, p.v_head_stride, smem.v(s), w.b,
                         w.hk, k0, w.lk, lane);
      cp_async_commit();
      cp_async_wait<1>();
      signal(smem.k_full(s));
      cp_async_wait<0>();
      signal(smem.v_full(s));
    }
  }

  __device__ static void run(const AttentionDecodeParams& p, const DecodeWork& w,
                             const DecodeSmem<Cfg>& smem) {
    const int lane = threadIdx.x % 32;
    if (lane == 0) SB_DECODE_TRACE(96);
    if (lane == 0 && p.use_tma) {
      prefetch_tensor_map(&p.tma_k);
      prefetch_tensor_map(&p.tma_v);
    }
    const int blocks = w.n_last - w.n_first + 1;
    const WalkPages wp = Cfg::kWalk ? WalkPages{} : read_walk_pages(p, w, lane);
    // Q: kQRows (64, kMma 16) packed rows; rows past the wave are zero.
    const Elem* q = static_cast<const Elem*>(p.q) + w.b * p.q_batch_stride;
    const int G = p.head_group;
    const auto q_row = [&](int r) -> const Elem* {
      const int R = w.r_begin + r;
      if (R >= w.r_end) return nullptr;
      const int i = p.q_begin + R / G, h = w.hk * G + R % G;
      return q + static_cast<int64_t>(i) * p.q_row_stride + h * p.q_head_stride;
    };
    if constexpr (Cfg::kWalk) {
      // Q first, then every split's blocks ascending through one ring (the
      // consumer walks the same sequence: the splits some row of the tile
      // sees, each split's blocks n_first .. n_last).
      uint4 qv[kQUnits];
      load_q_regs(qv, q_row, lane);
      store_q_regs(smem.q(), qv, lane);
      signal(smem.q_full());
      int ring = 0;
      for (int split = 0; split < p.max_splits; ++split) {
        const DecodeWork ws = decode_work_at<Cfg>(p, split, w.tile, w.b, w.hk);
        if (ws.n_last < ws.n_first) continue;
        const WalkPages wps = read_walk_pages(p, ws, lane);
        for (int it = 0; it <= ws.n_last - ws.n_first; ++it, ++ring) load_kv(p, ws, smem, it, wps, lane, ring);
      }
    } else if constexpr (Cfg::kMma) {
      // Q's loads (16 rows: a few per lane) and the table's are in flight
      // together; the first stages' K/V are requested as soon as the table
      // arrives, and Q goes to shared memory after them. Three dependent
      // round trips at the start (table, Q, first K) become two. Before Q,
      // only p.early_stages of them (decode_early_stages: one, so that the
      // first block lands alone).
      uint4 qv[kQUnits];
      load_q_regs(qv, q_row, lane);
      const int early = min(min(Cfg::kStages, p.early_stages), blocks);
      for (int it = 0; it < early; ++it) load_kv(p, w, smem, it, wp, lane);
      store_q_regs(smem.q(), qv, lane);
      signal(smem.q_full());
      if (lane == 0) SB_DECODE_TRACE(97);
      for (int it = early; it < blocks; ++it) load_kv(p, w, smem, it, wp, lane);
    } else {
      // kEarlyKv: the blocks of the first stages (whose empty barriers are
      // still in their initial phase: no wait) are requested before Q, so
      // the Q loads' latency overlaps theirs instead of preceding it.
      const int early = Cfg::kEarlyKv ? min(Cfg::kStages, blocks) : 0;
      for (int it = 0; it < early; ++it) load_kv(p, w, smem, it, wp, lane);
      load_rows_async<Cfg::kQRows>(smem.q(), q_row, p.q, lane);
      cp_async_commit();
      cp_async_wait<0>();
      signal(smem.q_full());
      if (lane == 0) SB_DECODE_TRACE(97);

      // K, V blocks ascending; a stage is refilled once every consumer warp
      // released it (k_empty, v_empty).
      for (int it = early; it < blocks; ++it) load_kv(p, w, smem, it, wp, lane);
    }
  }
};

// ------------------------------------------------------------------ consumer
// The forward's per-block steps, in the forward's order for one split:
//   first block of the split:  S = Q K^T; softmax step; P V onto acc = 0
//   later blocks:              S = Q K^T; softmax step; acc *= alpha; P V
// (attention_fwd_sm90_kernel.h: prologue / new_split for the first block,
// rescale + issue_pv for the others). Only the mask is applied here instead
// of inside Consumer::softmax_update, because a packed tile's rows are not
// the consecutive query rows that softmax_update's Visibility walk assumes;
// see apply_logits_and_mask.
template <class Cfg>
struct DecodeConsumer {
  using C = Consumer<Cfg>;
  static constexpr int kBn = Cfg::kBlockN;

  // The transform softmax_update would apply (ScoreMod: tanh softcap, or
  // t = s * c when the exponent form cannot keep raw scores), then -inf for
  // keys outside [lo[h], hi[h]] of row h, exactly the forward's element
  // order (transform, then mask). Afterwards softmax_update runs with
  // `plain`, a ScoreMod that applies no transform and keeps the exponent
  // multiplier: its max / exp2 / row-sum steps are then the forward's.
  __device__ static void apply_logits_and_mask(float (&s)[C::kSRegs], const ScoreMod& score,
                                               bool masked, const int (&lo)[2], const int (&hi)[2],
                                               int k0, int q4) {
    if (score.softcap) {
#pragma unroll
      for (int i = 0; i < C::kSRegs; ++i) s[i] = score.capped(s[i]);
    } else if (!score.raw) {
#pragma unroll
      for (int i = 0; i < C::kSRegs; ++i) s[i] = score.scaled(s[i]);
    }
    if (!masked) return;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int l = lo[h] - (k0 + 2 * q4), r = hi[h] - (k0 + 2 * q4);  // relative to this thread's first column
#pragma unroll
      for (int c = 0; c < kBn / 8; ++c)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int col = 8 * c + j;
          if (col < l || col > r) s[4 * c + 2 * h + j] = -CUDART_INF_F;
        }
    }
  }

  __device__ static void run(const AttentionDecodeParams& p, const DecodeWork& w,
                             const DecodeSmem<Cfg>& smem) {
    const int tid = threadIdx.x;  // 0..127: the consumer warpgroup
    const int warp = tid / 32, lane = tid % 32, q4 = lane % 4;
    const Visibility vis = decode_visibility(p, w.lk);
    const ScoreMod score = decode_score_mod(p);
    ScoreMod plain = score;
    plain.softcap = false;
    plain.raw = true;  // no transform in softmax_update; exp_scale stays the forward's

    // This thread's two packed rows (h = 0, 1: tile rows g and g + 8 of its
    // warp's 16) and the keys [lo, hi] each sees.
    int lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int R = w.r_begin + warp * 16 + lane / 4 + 8 * h;
      if (R < w.r_end) {
        vis.row_bounds(p.q_begin + R / p.head_group, lo[h], hi[h]);
      } else {
        lo[h] = 0;  // a zero row past the wave sees nothing
        hi[h] = -1;
      }
    }

    SplitState<Cfg> st;
    st.reset();
    const uint32_t q_addr = smem_addr(smem.q());
    mbar_wait(smem.q_full(), 0);
    walk_serial(w, smem, vis, score, plain, lo, hi, q_addr, lane, q4, p.use_tma != 0, st);

    // The rows' identities, derived again here rather than held in
    // registers across the walk.
    int row_i[2], row_h[2];
    bool valid[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int R = w.r_begin + warp * 16 + lane / 4 + 8 * h;
      valid[h] = R < w.r_end;
      row_i[h] = p.q_begin + R / p.head_group;
      row_h[h] = w.hk * p.head_group + R % p.head_group;
    }
    if (Cfg::kDirectOut && p.direct_out) {
      // One split per row: the combine's copy and output step, here.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!valid[h]) continue;
        const bool sees = w.lk > 0 && hi[h] >= lo[h];  // the combine's condition
        write_row_direct(p, w.b, row_h[h], row_i[h], sees ? st.m[h] : -CUDART_INF_F,
                         sees ? st.l[h] : 0.f, st.acc, h, sees, q4);
      }
      return;
    }
    // The split's (m, l, acc) of each valid row, f32, to the workspace.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!valid[h]) continue;
      const int64_t row = (static_cast<int64_t>(w.b) * p.num_heads + row_h[h]) * p.q_count +
                          (row_i[h] - p.q_begin);
      const int64_t slot = row * p.max_splits + w.split;
      float* acc = p.ws_acc + slot * Cfg::kHeadDim;
#pragma unroll
      for (int c = 0; c < Cfg::kHeadDim / 8; ++c)
        *reinterpret_cast<float2*>(acc + 8 * c + 2 * q4) =
            make_float2(st.acc[4 * c + 2 * h], st.acc[4 * c + 2 * h + 1]);
      if (q4 == 0) *reinterpret_cast<float2*>(p.ws_ml + slot * 2) = make_float2(st.m[h], st.l[h]);
    }
  }

  // direct_out: out and lse of one row (row h of this thread: columns
  // 8c + 2 q4 + {0, 1}) from the state the combine would copy: (M, L, acc)
  // of the row's only split, or (-inf, 0, 0) when the row sees no key.
  __device__ static void write_row_direct(const AttentionDecodeParams& p, int b, int head, int i,
                                          float M, float L, const float (&acc)[Cfg::kHeadDim / 2],
                                          int h, bool sees, int q4) {
    using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
    float inv, lse;
    decode_finish_row(M, L, inv, lse);
    Elem* o = static_cast<Elem*>(p.out) + b * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
              head * p.o_head_stride + 2 * q4;
#pragma unroll
    for (int c = 0; c < Cfg::kHeadDim / 8; ++c) {
      const float a0 = sees ? acc[4 * c + 2 * h] : 0.f, a1 = sees ? acc[4 * c + 2 * h + 1] : 0.f;
      *reinterpret_cast<uint32_t*>(o + 8 * c) =
          pack2<Cfg::kBf16>(__fmul_rn(a0, inv), __fmul_rn(a1, inv));
    }
    if (q4 == 0)
      p.lse[b * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(i) * p.lse_row_stride] = lse;
  }

  // direct_out, a CTA whose rows see no key of the (only) split: every
  // valid row gets the combine's output of an unseen row.
  __device__ static void write_empty_rows(const AttentionDecodeParams& p, const DecodeWork& w) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, q4 = lane % 4;
    float zero[Cfg::kHeadDim / 2];
#pragma unroll
    for (int j = 0; j < Cfg::kHeadDim / 2; ++j) zero[j] = 0.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int R = w.r_begin + warp * 16 + lane / 4 + 8 * h;
      if (R >= w.r_end) continue;
      write_row_direct(p, w.b, w.hk * p.head_group + R % p.head_group, p.q_begin + R / p.head_group,
                       -CUDART_INF_F, 0.f, zero, h, false, q4);
    }
  }

  // Named barrier of the consumer warpgroup (the zeroed V rows of the
  // block ending past lk before its P V).
  static constexpr uint32_t kZeroBarrier = 1;

  // Main's walk: per block, S = Q K^T, softmax step, P V, each waited for
  // before the next starts. tma: blocks come by TMA (p.use_tma), also the
  // one ending past lk.
  __device__ static void walk_serial(const DecodeWork& w, const DecodeSmem<Cfg>& smem,
                                     const Visibility& vis, const ScoreMod& score,
                                     const ScoreMod& plain, const int (&lo)[2], const int (&hi)[2],
                                     uint32_t q_addr, int lane, int q4, bool tma, SplitState<Cfg>& st) {
    float sacc[C::kSRegs];
    uint32_t pf[kBn / 16][4];
    float alpha[2];
    for (int n = w.n_first, it = 0; n <= w.n_last; ++n, ++it) {
      const int s = it % Cfg::kStages;
      const uint32_t parity = (it / Cfg::kStages) & 1;
      const int k0 = n * kBn;

      // gemm Q * K_n -> S
      mbar_wait(smem.k_full(s), parity);
      C::issue_qk(sacc, q_addr, smem_addr(smem.k(s)));
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < C::kSRegs; ++i) reg_fence(sacc[i]);
      if (lane == 0) mbar_arrive(smem.k_empty(s));  // release K_n

      // softmax step -> P_n (f32 in sacc), alpha_n
      const bool masked = !vis.block_fully_visible(w.i_first, w.i_last, k0, kBn);
      apply_logits_and_mask(sacc, score, masked, lo, hi, k0, q4);
      C::softmax_update(sacc, st.m, st.l, alpha, plain, vis, /*masked=*/false, 0, k0, q4);
      if (it > 0) C::rescale(st.acc, alpha);  // the first block adds onto acc = 0
      C::pack_p(sacc, pf);

      // gemm P_n * V_n -> O (accumulating)
      mbar_wait(smem.v_full(s), parity);
      if (tma && k0 + kBn > w.lk) {  // CTA-uniform: the block ending past lk came by TMA
        zero_stage_rows_from<Cfg, Cfg::kConsumerThreads>(smem.v(s), w.lk - k0, threadIdx.x);
        fence_proxy_async_smem();  // the zeros, toward wgmma's async-proxy reads
        named_barrier_sync(kZeroBarrier, Cfg::kConsumerThreads);
      }
      C::issue_pv(st.acc, pf, smem_addr(smem.v(s)));
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < Cfg::kHeadDim / 2; ++i) reg_fence(st.acc[i]);
#pragma unroll
      for (int kk = 0; kk < kBn / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) reg_fence(pf[kk][r]);
      if (lane == 0) mbar_arrive(smem.v_empty(s));  // release V_n
    }
  }
};

template <class Cfg>
struct DecodeMmaConsumer;  // attention_decode_sm90_mma.h
template <class Cfg>
struct DecodeClusterFold;  // attention_decode_sm90_mma.h

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kCtasPerSm)
    attention_decode_split_sm90_kernel(const __grid_constant__ AttentionDecodeParams p) {
  // The combine may be scheduled once every CTA of this grid has started:
  // it reads nothing this grid writes before its griddepcontrol.wait, which
  // returns only after this whole grid has completed and its writes are
  // visible, so the trigger's place moves no byte (it only lets the
  // combine's CTAs take free SM slots during this grid's last wave).
  grid_launch_dependents();
  if (threadIdx.x == 0) SB_DECODE_TRACE(0);
  const DecodeWork w = decode_work<Cfg>(p);
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const DecodeSmem<Cfg> smem{smem_raw + ((1024 - (raw % 1024)) % 1024)};
  if (Cfg::kWalk || w.n_last >= w.n_first) {  // the walk: its rows are written whatever they see
    if (threadIdx.x == 0) {
      mbar_init(smem.q_full(), 32);
      for (int s = 0; s < Cfg::kStages; ++s) {
        mbar_init(smem.k_full(s), 32);
        mbar_init(smem.v_full(s), 32);
        mbar_init(smem.k_empty(s), Cfg::kEmptyArrivals);
        mbar_init(smem.v_empty(s), Cfg::kEmptyArrivals);
      }
      fence_barrier_init();
    }
    __syncthreads();

    // Warp index, made warp-uniform for the compiler.
    const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
    if (warp < 4) {
      if constexpr (Cfg::kMma)
        DecodeMmaConsumer<Cfg>::run(p, w, smem);
      else
        DecodeConsumer<Cfg>::run(p, w, smem);
    } else
      DecodeProducer<Cfg>::run(p, w, smem);
  } else if constexpr (!Cfg::kFold) {  // no row of the tile sees a key of this split
    if (Cfg::kDirectOut && p.direct_out && threadIdx.x < Cfg::kConsumerThreads)
      DecodeConsumer<Cfg>::write_empty_rows(p, w);
    return;
  }
  // Every CTA of the cluster, also one whose split no row sees, takes part
  // in the fold (its partial is never read: a row's splits are those it sees).
  if constexpr (Cfg::kFold) DecodeClusterFold<Cfg>::run(p, w, smem);
}

}  // namespace samebits::cuda::sm90

#include "cuda/attention_decode_sm90_mma.h"
