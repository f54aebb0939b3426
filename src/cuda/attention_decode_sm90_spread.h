// sm90 attention over a KV cache, pass 1 spread over a cluster: one split
// of a tile of at most 16 packed rows computed by 8 (or 4) CTAs of a
// thread-block cluster instead of one, with the forward's bits.
//
// Why. Below about one wave of pass-1 CTAs (batch 1 x 1k has 8: one per KV
// head) a split's 8 KV blocks stream through one SM, ~64 KiB a block, and
// one SM's load path, not DRAM, sets the time (docs/decode_design.md,
// "Where a small decode's time goes": ~60 GB/s a CTA at 1 x 1k). Here CTA
// j of the cluster loads only the split's block(s) j, so a split's bytes
// come in through 8 SMs.
//
// Why the bits are the mma consumer's (attention_decode_sm90_mma.h), which
// are the forward's. The online softmax's dependent chain is over the
// blocks of the split, but most of each block's work depends on the chain
// only through the running maximum:
//   S_n = Q K_n^T             per element, no chain: CTA owning block n
//   mx_n (row max of S_n)     no chain: CTA owning block n
//   m_n, ms_n, alpha_n        the chain of fmaxf over mx_0 .. mx_n (a few
//                             flops a block): every CTA, from all mx
//   P_n = exp2(S_n k - ms_n)  the CTA owning block n, from ms_n
//   sum_n (row sum of P_n)    the CTA owning block n, the mma consumer's
//                             per-thread order and shuffle tree
//   l_n = l_{n-1} alpha_n + sum_n       every CTA, from all alpha and sum
//   acc_n = acc_{n-1} alpha_n + P_n V_n  CTA j for head-dim columns
//                             [j d / 8, (j + 1) d / 8): an output element
//                             depends only on its own column of V, so the
//                             columns split across CTAs; the chain over
//                             blocks and keys stays in one warp, in the
//                             same mma.sync steps in the same order
// Every value is computed by the same operations in the same order as the
// mma consumer computes it; only where (which CTA, which warp) differs.
// Blocks of the split that no row sees (outside [n_first, n_last]) are
// left out of every chain, as the one-CTA walk leaves them out.
//
// Barriers (mbarriers in each CTA's shared memory, count 1, armed with the
// bytes they wait for when initialised):
//   k_bar    this CTA's TMA loads of K
//   v_bar    this CTA's TMA loads of its columns of V
//   max_bar  the other CTAs' blocks' row maxima (st.async into distributed
//            shared memory)
//   pv_bar   the other CTAs' blocks' P (bf16, as mma A fragments) and row
//            sums (st.async)
// A CTA stores its own values itself, ordered for its threads by
// __syncthreads. Each CTA waits on max_bar and pv_bar before its P V, so
// every write into a CTA has landed before it exits; a last cluster
// barrier (arrive after that wait) keeps every CTA alive until the writes
// it issued into the others have landed. The barriers are initialised
// before any TMA is issued (__syncthreads) and before any CTA writes into
// another (cluster barrier: arrive relaxed after the init fence, wait just
// before the first such write).
//
// Loads: K of the CTA's own walked blocks by TMA into the swizzled layout,
// V as above, Q (16 rows) by cp.async; caches TMA cannot box come by hand
// (cp.async, zero past lk). Of the block that ends past the sequence, TMA
// reads the boxes holding a key below lk; its K rows past lk only meet
// masked scores and its V rows past lk are zeroed before P V. Q and the
// block table are requested before the sequence's length arrives.
#pragma once

#include "cuda/attention_decode_sm90_kernel.h"

namespace samebits::cuda::sm90 {

// Timing trace (an experiment, compiled only with SAMEBITS_SPREAD_TRACE):
// clock64 of thread 0 at the phases of the first two CTAs of the first
// cluster, printed by each at its end.
#ifdef SAMEBITS_SPREAD_TRACE
__device__ long long g_spread_trace[2][16];
#define SB_SPREAD_TRACE(i)                                                                      \
  do {                                                                                          \
    if (threadIdx.x == 0 && blockIdx.x < 2 && blockIdx.y == 0 && blockIdx.z == 0)              \
      g_spread_trace[blockIdx.x][(i)] = clock64();                                              \
  } while (0)
// A wait that gives up after ~2^31 cycles and says which barrier it was.
__device__ __forceinline__ void spread_wait(uint64_t* bar, uint32_t parity, int id) {
  const long long t0 = clock64();
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    if (!done && clock64() - t0 > (1ll << 31)) {
      if (threadIdx.x % 32 == 0)
        printf("spread wait %d stuck: block (%d %d %d) thread %d\n", id, blockIdx.x, blockIdx.y, blockIdx.z,
               threadIdx.x);
      return;
    }
  }
}
__device__ __forceinline__ void spread_trace_print() {
  if (threadIdx.x != 0 || blockIdx.x >= 2 || blockIdx.y != 0 || blockIdx.z != 0) return;
  const long long* t = g_spread_trace[blockIdx.x];
  printf("spread trace cta %d: lk %lld issued %lld landed %lld s %lld maxsent %lld maxwait %lld psent %lld pvwait %lld pv %lld\n",
         blockIdx.x, t[1] - t[0], t[2] - t[0], t[3] - t[0], t[4] - t[0], t[5] - t[0], t[6] - t[0], t[7] - t[0],
         t[8] - t[0], t[9] - t[0]);
}
#else
#define SB_SPREAD_TRACE(i) \
  do {                     \
  } while (0)
__device__ __forceinline__ void spread_trace_print() {}
__device__ __forceinline__ void spread_wait(uint64_t* bar, uint32_t parity, int) { mbar_wait(bar, parity); }
#endif

// 4 or 16 bytes into CTA `rank`'s shared memory at `a` (this CTA's
// address of the same object), completing as bytes on its mbarrier `bar`.
__device__ __forceinline__ void st_async_f32(uint32_t a, uint32_t bar, uint32_t rank, float v) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   map_to_rank(a, rank)),
               "r"(__float_as_uint(v)), "r"(map_to_rank(bar, rank))
               : "memory");
}
__device__ __forceinline__ void st_async_v4(uint32_t a, uint32_t bar, uint32_t rank, uint4 v) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   map_to_rank(a, rank)),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(map_to_rank(bar, rank))
               : "memory");
}

// Cfg: the mma consumer's configuration (kMma, 16 packed rows); kCluster
// CTAs (8, or 4 at d <= 128) share one split.
template <class Cfg, int kCluster_>
struct DecodeSpread {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBn = Cfg::kBlockN;
  static constexpr int kBps = Cfg::kBlocksPerSplit;  // blocks per split (8; d 256: 16)
  static constexpr int kCluster = kCluster_;
  static constexpr int kBpc = kBps / kCluster;  // blocks of one CTA (1; d 256: 2)
  static constexpr int kCols = kD / kCluster;   // V / O columns of one CTA (8, 16, 32)
  static constexpr int kPlanes = kCols / 8;     // 8-column planes of one CTA's V slice (1, 2, 4)
  static constexpr int kPvWarps = kPlanes >= 2 ? kPlanes / 2 : 1;  // a warp: 2 planes (d 64: 1)
  static constexpr int kPvChunks = kPlanes >= 2 ? 2 : 1;           // n8 chunks of a P V warp
  static constexpr int kSC = kBn / 32;  // S n8 chunks of a warp per block
  static constexpr int kQK = kD / 16;
  static constexpr int kThreads = 128;
  static constexpr int kKeysPerCta = kBpc * kBn;            // 128 at 8 CTAs, 256 at 4
  static constexpr int kKeyGroups = kKeysPerCta / kThreads;  // 32-key groups of a warp
  static_assert(Cfg::kMma && Cfg::kQRows == 16, "a 16-row Q tile");
  static_assert(kBps % kCluster == 0 && kKeysPerCta % kThreads == 0 && kBn % 32 == 0,
                "whole 32-key groups, every warp the same number");
  static_assert(kCluster % 2 == 0 && kCluster <= 8, "a portable cluster; the row sums go out from two lanes");
  static_assert(kSC % 2 == 0, "S fragments are loaded two n8 chunks at a time");

  // Shared memory (offsets from a 1024-byte aligned base).
  static constexpr int kQBytes = 16 * kD * 2;
  static constexpr int kKBlockBytes = kBn * kD * 2;
  static constexpr int kSliceBytes = kBn * kCols * 2;  // this CTA's columns of a V block
  static constexpr int kPBlockBytes = kBn / 16 * 32 * 16;  // P fragments of one block
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  // V: this CTA's columns of every block of the split, [kBps][Bn][kCols]
  // (the layout of a TMA box kCols wide, unswizzled).
  static constexpr int kOffVS = kOffK + kBpc * kKBlockBytes;
  static constexpr int kOffP = kOffVS + kBps * kSliceBytes;      // [kBps][Bn / 16][32] uint4 (received)
  static constexpr int kOffPf32 = kOffP + kBps * kPBlockBytes;     // [kBpc][Bn / 8][4][32] f32 (own)
  static constexpr int kOffWMax = kOffPf32 + kBpc * kBn / 8 * 4 * 32 * 4;  // [kBpc][4 warps][16]
  static constexpr int kOffMax = kOffWMax + kBpc * 4 * 16 * 4;     // [kBps][16] (received)
  static constexpr int kOffSum = kOffMax + kBps * 16 * 4;          // [kBps][16] (received)
  static constexpr int kOffAlpha = kOffSum + kBps * 16 * 4;        // [kBps][16]
  static constexpr int kOffBars = kOffAlpha + kBps * 16 * 4;       // max_bar, pv_bar, k_bar, v_bar
  static constexpr int kSmemBytes = kOffBars + 32 + 1024;          // + base alignment
  static constexpr int kSplitBoxRegs = Cfg::kSplit / 8 / 32;        // TMA boxes of a split (>= 8 keys each) per lane
  static_assert(kQBytes % 1024 == 0 && kKBlockBytes % 1024 == 0, "swizzled tiles keep 1024B alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm90 limit");
  static constexpr int kCtasPerSm = 2 * (kSmemBytes + 1024) <= 228 * 1024 ? 2 : 1;
  // Bytes each CTA receives from the kCluster - 1 others (its own values
  // it writes itself):
  // their blocks' maxima, and their blocks' P and sums.
  static constexpr uint32_t kMaxTx = (kCluster - 1) * kBpc * 16 * 4;
  static constexpr uint32_t kPTx = (kCluster - 1) * kBpc * (kPBlockBytes + 16 * 4);

  __device__ static uint32_t swz(int rows, int row, int col) { return DecodeMmaConsumer<Cfg>::swz(rows, row, col); }

  __device__ static void run(const AttentionDecodeParams& p, int split, int tile, int b, int hk, uint8_t* base) {
    const int tid = threadIdx.x;
    SB_SPREAD_TRACE(0);
    const int warp = __shfl_sync(0xffffffffu, tid / 32, 0), lane = tid % 32, g = lane / 4, q4 = lane % 4;
    const int rank = static_cast<int>(cluster_rank());
    uint64_t* max_bar = reinterpret_cast<uint64_t*>(base + kOffBars);
    uint64_t* pv_bar = max_bar + 1;
    float* wmax = reinterpret_cast<float*>(base + kOffWMax);
    float* ex_max = reinterpret_cast<float*>(base + kOffMax);
    float* ex_sum = reinterpret_cast<float*>(base + kOffSum);
    float* alpha_s = reinterpret_cast<float*>(base + kOffAlpha);
    uint4* ex_p = reinterpret_cast<uint4*>(base + kOffP);
    float* pf32 = reinterpret_cast<float*>(base + kOffPf32);
    const int split_k0 = split * Cfg::kSplit;
    const int bi0 = rank * kBpc;  // this CTA's first block, as an index into the split

    // ---- before the sequence's length is known (one round trip): Q's
    // copies, and the block-table entries of this CTA's keys below the
    // cache capacity (every such entry exists). Key group gi of this warp:
    // keys (warp + 4 gi) * 32 + lane of the CTA's kBpc * Bn.
    {
      const int r_begin = tile * Cfg::kBlockM, r_end = min(r_begin + Cfg::kBlockM, p.q_count * p.head_group);
      const Elem* q = static_cast<const Elem*>(p.q) + b * p.q_batch_stride;
      constexpr int kUnitsPerRow = kD / 8;
#pragma unroll
      for (int i = 0; i < 16 * kUnitsPerRow / kThreads; ++i) {
        const int u = tid + kThreads * i, r = u / kUnitsPerRow, unit = u % kUnitsPerRow;
        const int R = r_begin + r;
        const bool ok = R < r_end;
        const Elem* src = ok ? q + static_cast<int64_t>(p.q_begin + R / p.head_group) * p.q_row_stride +
                                   (hk * p.head_group + R % p.head_group) * p.q_head_stride + unit * 8
                             : q;
        cp_async_16(base + kOffQ + swz(16, r, unit * 8), src, ok);
      }
    }
    cp_async_commit();  // Q's group (waited for with K's, or before an early exit)
    int page[kKeyGroups];  // the hand path's (caches TMA cannot box)
#pragma unroll
    for (int gi = 0; gi < kKeyGroups; ++gi) {
      const int key = split_k0 + bi0 * kBn + (warp + 4 * gi) * 32 + lane;
      page[gi] = p.block_table == nullptr || p.use_tma ? b
                 : key < p.seqlen_k                    ? __ldg(p.block_table + b * p.block_table_batch_stride + key / p.page_size)
                                                       : 0;
    }
    // The page of TMA box j of the split (box_rows keys each) in lane
    // j % 32 of every warp, register j / 32.
    int box_page[kSplitBoxRegs];
#pragma unroll
    for (int r = 0; r < kSplitBoxRegs; ++r) {
      const int j = lane + 32 * r, key = split_k0 + j * p.box_rows;
      box_page[r] = b;
      if (p.use_tma && p.block_table != nullptr)
        box_page[r] = j * p.box_rows < Cfg::kSplit && key < p.seqlen_k
                          ? __ldg(p.block_table + b * p.block_table_batch_stride + key / p.page_size)
                          : 0;
    }
    auto page_of_box = [&](int j) {  // every lane of the warp calls it (shuffles)
      int pg = 0;
#pragma unroll
      for (int r = 0; r < kSplitBoxRegs; ++r) {
        const int v = __shfl_sync(0xffffffffu, box_page[r], j % 32);
        if (j / 32 == r) pg = v;
      }
      return pg;
    };
    const DecodeWork w = decode_work_at<Cfg>(p, split, tile, b, hk);
    SB_SPREAD_TRACE(1);
    if (w.n_last < w.n_first) {  // the whole cluster: no row of the tile sees this split
      cp_async_wait<0>();
      if (Cfg::kDirectOut && p.direct_out && rank == 0) DecodeConsumer<Cfg>::write_empty_rows(p, w);
      return;
    }

    const int n_base = split_k0 / kBn;
    auto walked = [&](int bi) { return n_base + bi >= w.n_first && n_base + bi <= w.n_last; };
    // Walked blocks come by TMA where the cache allows boxes, else by hand
    // with zero fill. By TMA, a box whose first key is at or past lk is not
    // requested (its page may not exist); the rest of the block ending past
    // lk is read as the cache holds it: K there only meets masked scores,
    // and V's rows there are zeroed before P V.
    const int boxes = kBn / p.box_rows;  // TMA boxes of a block
    const bool tma = p.use_tma != 0;
    auto box_valid = [&](int bi, int q) { return (n_base + bi) * kBn + q * p.box_rows < w.lk; };
    uint64_t* k_bar = pv_bar + 1;
    uint64_t* v_bar = pv_bar + 2;
    if (tid == 0) {
      uint32_t k_tx = 0, v_tx = 0;
      for (int bi = 0; bi < kBps; ++bi) {
        if (!walked(bi) || !tma) continue;
        for (int q = 0; q < boxes; ++q) {
          if (!box_valid(bi, q)) continue;
          if (bi / kBpc == rank) k_tx += p.box_rows * kD * 2;
          v_tx += p.box_rows * kCols * 2;
        }
      }
      mbar_init(max_bar, 1);
      mbar_init(pv_bar, 1);
      mbar_init(k_bar, 1);
      mbar_init(v_bar, 1);
      mbar_arrive_expect_tx(max_bar, kMaxTx);
      mbar_arrive_expect_tx(pv_bar, kPTx);
      mbar_arrive_expect_tx(k_bar, k_tx);
      mbar_arrive_expect_tx(v_bar, v_tx);
      fence_barrier_init();
    }
    __syncthreads();  // the barriers before any TMA of this CTA completes on them (warps 0 and 1 issue)
    cluster_arrive_relaxed();  // waited for before the first write into another CTA
    const uint32_t pv_bar_a = smem_addr(pv_bar);
    auto box_slot = [&](int k0, int q) {  // slot of box q of the block at key k0
      return p.block_table == nullptr ? k0 + q * p.box_rows : p.page_size <= kBn ? 0 : k0 % p.page_size;
    };

    // ---- K of this CTA's walked blocks: by TMA (warp 0, box q by lane q,
    // 64-column chunks: the swizzled layout S = Q K^T reads; a box past lk
    // is not requested and its rows hold stale values, which only meet
    // masked scores), else by hand
    // (cp.async, lane l of a 32-key group has key l's page; each instruction
    // copies whole 16-byte runs of a few rows, the row pointers shuffled
    // from their lane; keys >= lk are zero).
    if (warp == 0 && tma) {
      prefetch_tensor_map(&p.tma_k);
      prefetch_tensor_map(&p.tma_v_cols);
    }
#pragma unroll
    for (int bl = 0; bl < kBpc; ++bl) {
      const int bi = bi0 + bl, k0 = (n_base + bi) * kBn;
      if (!walked(bi) || !tma || warp != 0) continue;
      const int pg = page_of_box((bi * boxes + lane) % (Cfg::kSplit / 8));
      if (lane < boxes && box_valid(bi, lane)) {
#pragma unroll
        for (int c = 0; c < Cfg::kChunks; ++c)
          tma_load_4d(base + kOffK + bl * kKBlockBytes + c * kBn * Cfg::kRowBytes + lane * p.box_rows * Cfg::kRowBytes,
                      &p.tma_k, k_bar, c * Cfg::kChunk, box_slot(k0, lane), hk, pg);
      }
    }
    const Elem* kc = static_cast<const Elem*>(p.k);
    const Elem* vc = static_cast<const Elem*>(p.v);
    auto row_of = [&](const Elem* cache, int64_t page_stride, int64_t row_stride, int64_t head_stride, int pg,
                      int key) -> unsigned long long {
      if (key >= w.lk) return 0ull;
      const int64_t slot = p.block_table == nullptr ? key : key % p.page_size;
      return reinterpret_cast<unsigned long long>(cache + pg * page_stride + slot * row_stride + hk * head_stride);
    };
#pragma unroll
    for (int gi = 0; gi < kKeyGroups; ++gi) {
      const int kl = (warp + 4 * gi) * 32;  // first key of the group, among the CTA's kBpc * Bn
      const int bl = kl / kBn;
      if (!walked(bi0 + bl) || tma) continue;  // warp-uniform
      const unsigned long long krow =
          row_of(kc, p.k_page_stride, p.k_row_stride, p.k_head_stride, page[gi], split_k0 + bi0 * kBn + kl + lane);
      constexpr int kUnitsPerRow = kD / 8;
#pragma unroll 4
      for (int i = 0; i < kUnitsPerRow; ++i) {
        const int u = lane + 32 * i, r = u / kUnitsPerRow, unit = u % kUnitsPerRow;
        const Elem* ks = reinterpret_cast<const Elem*>(__shfl_sync(0xffffffffu, krow, r));
        cp_async_16(base + kOffK + bl * kKBlockBytes + swz(kBn, kl % kBn + r, unit * 8),
                    ks != nullptr ? ks + unit * 8 : p.k, ks != nullptr);
      }
    }
    cp_async_commit();  // K's hand copies (waited for with Q's before S)
    SB_SPREAD_TRACE(2);

    // ---- this CTA's columns of V over the split's walked blocks: by TMA
    // (warp 1, box j of the split by lane j % 32: kCols columns x box_rows
    // keys), or by hand where the cache allows no boxes (cp.async, zero past
    // lk).
    if (warp == 1) {
      const int j_lo = (w.n_first - n_base) * boxes, j_hi = (w.n_last - n_base + 1) * boxes;
      for (int j0 = j_lo; j0 < j_hi; j0 += 32) {  // warp-uniform trip count
        const int j = j0 + lane, bi = j / boxes;
        const int pg = page_of_box(j % (Cfg::kSplit / 8));
        if (j < j_hi && tma && box_valid(bi, j % boxes))
          tma_load_4d(base + kOffVS + j * p.box_rows * kCols * 2, &p.tma_v_cols, v_bar, rank * kCols,
                      box_slot((n_base + bi) * kBn, j % boxes), hk, pg);
      }
    }
    for (int n = w.n_first; n <= w.n_last; ++n) {  // caches TMA cannot box
      const int bi = n - n_base, k0 = n * kBn;
      if (tma) continue;  // CTA-uniform
      for (int u = tid; u < kBn * kPlanes; u += kThreads) {
        const int kb = u / kPlanes, c = u % kPlanes, key = k0 + kb;
        int pg = b;
        if (p.block_table != nullptr && key < w.lk) pg = __ldg(p.block_table + b * p.block_table_batch_stride + key / p.page_size);
        const Elem* src = reinterpret_cast<const Elem*>(row_of(vc, p.v_page_stride, p.v_row_stride, p.v_head_stride, pg, key));
        cp_async_16(base + kOffVS + ((bi * kBn + kb) * kCols + c * 8) * 2,
                    src != nullptr ? src + rank * kCols + c * 8 : p.v, src != nullptr);
      }
    }
    cp_async_commit();  // V's hand copies (waited for before P V)
    cluster_wait();  // every CTA's barriers are initialised: from here on, writes into the others

    // ---- this thread's rows (h = 0, 1: tile rows g and g + 8) and the keys each sees
    using Mma = DecodeMmaConsumer<Cfg>;
    const Visibility vis = decode_visibility(p, w.lk);
    const ScoreMod score = decode_score_mod(p);
    int lo[2], hi[2];
    bool valid[2];
    Mma::rows_seen(p, w, vis, g, lo, hi, valid);

    // ---- S = Q K^T of this CTA's blocks, the logit transform, the mask,
    // this warp's row maxima: the mma consumer's steps
    cp_async_wait<1>();  // Q's and K's groups (V's hand copies may still be in flight)
    spread_wait(k_bar, 0, 1);
    SB_SPREAD_TRACE(3);
    __syncthreads();  // K's hand copies of the other threads
    float sc[kBpc][kSC][4];
    {
      uint32_t qa[kQK][4];
      Mma::load_q(qa, smem_addr(base + kOffQ), lane);
#pragma unroll
      for (int bl = 0; bl < kBpc; ++bl) {
        if (!walked(bi0 + bl)) {  // CTA-uniform; its P goes out but is never read
#pragma unroll
          for (int c = 0; c < kSC; ++c)
#pragma unroll
            for (int r = 0; r < 4; ++r) sc[bl][c][r] = 0.f;
          continue;
        }
        Mma::scores(sc[bl], qa, smem_addr(base + kOffK + bl * kKBlockBytes), warp, lane);
        float mx[2];
        Mma::logits_mask_max(sc[bl], mx, score, vis, w, lo, hi, split_k0 + (bi0 + bl) * kBn, warp, q4);
        if (q4 == 0) {
          wmax[(bl * 4 + warp) * 16 + g] = mx[0];
          wmax[(bl * 4 + warp) * 16 + 8 + g] = mx[1];
        }
      }
    }
    SB_SPREAD_TRACE(4);
    __syncthreads();

    // ---- the blocks' row maxima to every CTA (the four warps' values met
    // as the mma consumer meets them)
    const uint32_t max_bar_a = smem_addr(max_bar);
    for (int idx = tid; idx < kBpc * 16 * kCluster; idx += kThreads) {
      const int dst = idx / (kBpc * 16), bl = (idx / 16) % kBpc, r = idx % 16;
      const float mx = walked(bi0 + bl) ? Mma::block_max(wmax + bl * 64, r) : -CUDART_INF_F;  // else never read
      float* to = ex_max + (bi0 + bl) * 16 + r;
      if (dst == rank)
        *to = mx;
      else
        st_async_f32(smem_addr(to), max_bar_a, dst, mx);
    }
    __syncthreads();  // this CTA's own maxima, written by other threads
    SB_SPREAD_TRACE(5);

    // ---- the chain of the row state over the walked blocks: m, ms and
    // alpha of each (Consumer::softmax_update's operations, per row)
    spread_wait(max_bar, 0, 2);
    SB_SPREAD_TRACE(6);
    const float k_exp = score.exp_scale;
    float m[2] = {-CUDART_INF_F, -CUDART_INF_F};
    float ms_own[kBpc][2];
#pragma unroll
    for (int bl = 0; bl < kBpc; ++bl) ms_own[bl][0] = ms_own[bl][1] = 0.f;
    for (int n = w.n_first; n <= w.n_last; ++n) {
      const int bi = n - n_base;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float ms;
        const float a = Mma::running_max(m[h], ex_max[bi * 16 + 8 * h + g], k_exp, ms);
        if (warp == 0 && q4 == 0) alpha_s[bi * 16 + 8 * h + g] = a;
#pragma unroll
        for (int bl = 0; bl < kBpc; ++bl)
          if (bi == bi0 + bl) ms_own[bl][h] = ms;
      }
    }

    // ---- P of this CTA's walked blocks: f32 for the row sums, rounded as
    // the mma A fragments to every CTA
    const uint32_t ex_p_a = smem_addr(ex_p);
#pragma unroll
    for (int bl = 0; bl < kBpc; ++bl) {
      if (walked(bi0 + bl)) {  // CTA-uniform
#pragma unroll
        for (int h = 0; h < 2; ++h) Mma::exponentiate(sc[bl], h, k_exp, ms_own[bl][h]);
      }
      Mma::store_p(sc[bl], pf32 + bl * (kBn / 8) * 4 * 32, warp, lane, [&](int kk, uint4 v) {
        const int at = ((bi0 + bl) * (kBn / 16) + kk) * 32 + lane;
        ex_p[at] = v;
#pragma unroll
        for (int dst = 0; dst < kCluster; ++dst)
          if (dst != rank) st_async_v4(ex_p_a + at * 16, pv_bar_a, dst, v);
      });
    }
    __syncthreads();  // pf32 of every warp written
    SB_SPREAD_TRACE(7);
    // Row sums of this CTA's blocks: rows g by warp 2, g + 8 by warp 3, as
    // the mma consumer forms them.
    if (warp >= 2) {
      const int h = warp - 2;
#pragma unroll
      for (int bl = 0; bl < kBpc; ++bl) {
        // a block no row sees: a value never read
        const float sum = Mma::row_sum(pf32 + bl * (kBn / 8) * 4 * 32, h, lane);
        if (q4 < 2) {
          float* to = ex_sum + (bi0 + bl) * 16 + 8 * h + g;
#pragma unroll
          for (int k = 0; k < kCluster / 2; ++k) {
            const int dst = 2 * k + q4;
            if (dst == rank)
              *to = sum;
            else
              st_async_f32(smem_addr(to), pv_bar_a, dst, sum);
          }
        }
      }
    }

    // ---- l over the walked blocks, then acc = acc alpha + P V for this
    // CTA's columns, blocks ascending, keys ascending
    spread_wait(pv_bar, 0, 3);
    spread_wait(v_bar, 0, 4);
    if (tma && (w.n_last + 1) * kBn > w.lk) {  // CTA-uniform: V's rows past lk of the last block, zero
      const int bi = w.n_last - n_base, r0 = w.lk - w.n_last * kBn;
      for (int u = tid; u < (kBn - r0) * kPlanes; u += kThreads)
        *reinterpret_cast<uint4*>(base + kOffVS + ((bi * kBn + r0 + u / kPlanes) * kCols + (u % kPlanes) * 8) * 2) =
            make_uint4(0, 0, 0, 0);
    }
    SB_SPREAD_TRACE(8);
    // Every write this CTA issued into the others has landed once every
    // CTA passed its wait: this CTA may exit after the cluster barrier below.
    cluster_arrive_relaxed();
    cp_async_wait<0>();  // V's hand copies
    __syncthreads();     // alpha_s, and the other threads' V copies
    float l[2] = {0.f, 0.f};
    for (int n = w.n_first; n <= w.n_last; ++n) {
      const int bi = n - n_base;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        l[h] = __fadd_rn(__fmul_rn(l[h], alpha_s[bi * 16 + 8 * h + g]), ex_sum[bi * 16 + 8 * h + g]);
    }
    if (warp < kPvWarps) pv_and_store(p, w, base, rank, warp, lane, g, q4, m, l, valid, lo, hi);
    SB_SPREAD_TRACE(9);
    spread_trace_print();
    cluster_wait();
  }

  // acc = acc alpha + P V for this warp's columns (planes 2 warp, +1 of the
  // CTA's slice; d 64: the one plane), blocks ascending, keys ascending;
  // then the columns of every valid row: out (one split) or the split's
  // partial.
  __device__ static void pv_and_store(const AttentionDecodeParams& p, const DecodeWork& w, uint8_t* base, int rank,
                                      int warp, int lane, int g, int q4, const float (&m)[2], const float (&l)[2],
                                      const bool (&valid)[2], const int (&lo)[2], const int (&hi)[2]) {
    const float* alpha_s = reinterpret_cast<const float*>(base + kOffAlpha);
    const uint4* ex_p = reinterpret_cast<const uint4*>(base + kOffP);
    const int n_base = w.split * Cfg::kSplit / kBn;
    float acc[kPvChunks][4];
#pragma unroll
    for (int oc = 0; oc < kPvChunks; ++oc)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[oc][r] = 0.f;
    // this lane's plane (ldmatrix x4: lanes 16..31 read the pair's second)
    const int c = warp * kPvChunks + (kPvChunks == 2 ? lane / 16 : 0);
    const uint32_t v_base = smem_addr(base + kOffVS) + c * 16;
    for (int n = w.n_first; n <= w.n_last; ++n) {
      const int bi = n - n_base;
      const uint32_t plane = v_base + bi * kSliceBytes;
      if (n > w.n_first) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float a = alpha_s[bi * 16 + 8 * h + g];
#pragma unroll
          for (int oc = 0; oc < kPvChunks; ++oc) {
            acc[oc][2 * h] = __fmul_rn(acc[oc][2 * h], a);
            acc[oc][2 * h + 1] = __fmul_rn(acc[oc][2 * h + 1], a);
          }
        }
      }
#pragma unroll
      for (int kk = 0; kk < kBn / 16; ++kk) {
        const uint4 pv = ex_p[(bi * (kBn / 16) + kk) * 32 + lane];
        const uint32_t pa[4] = {pv.x, pv.y, pv.z, pv.w};
        const int key = 16 * kk + ((lane / 8) % 2) * 8 + lane % 8;
        const uint32_t at = plane + key * kCols * 2;
        if constexpr (kPvChunks == 2) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, at);
          mma_m16n8k16<Cfg::kBf16>(acc[0], pa, b[0], b[1]);
          mma_m16n8k16<Cfg::kBf16>(acc[1], pa, b[2], b[3]);
        } else {
          uint32_t b[2];
          ldmatrix_x2_trans(b, at);
          mma_m16n8k16<Cfg::kBf16>(acc[0], pa, b[0], b[1]);
        }
      }
    }

    // ---- this warp's columns of every valid row: out (one split) or the
    // split's partial
    const int col0 = rank * kCols + warp * kPvChunks * 8 + 2 * q4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!valid[h]) continue;
      const int R = w.r_begin + g + 8 * h;
      const int i = p.q_begin + R / p.head_group, head = w.hk * p.head_group + R % p.head_group;
      if (Cfg::kDirectOut && p.direct_out) {
        const bool sees = w.lk > 0 && hi[h] >= lo[h];  // the combine's condition
        float inv, lse;
        decode_finish_row(sees ? m[h] : -CUDART_INF_F, sees ? l[h] : 0.f, inv, lse);
        Elem* o = static_cast<Elem*>(p.out) + w.b * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
                  head * p.o_head_stride + col0;
#pragma unroll
        for (int oc = 0; oc < kPvChunks; ++oc) {
          const float a0 = sees ? acc[oc][2 * h] : 0.f, a1 = sees ? acc[oc][2 * h + 1] : 0.f;
          *reinterpret_cast<uint32_t*>(o + 8 * oc) = pack2<Cfg::kBf16>(__fmul_rn(a0, inv), __fmul_rn(a1, inv));
        }
        if (rank == 0 && warp == 0 && q4 == 0)
          p.lse[w.b * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(i) * p.lse_row_stride] =
              lse;
      } else {
        const int64_t row = (static_cast<int64_t>(w.b) * p.num_heads + head) * p.q_count + (i - p.q_begin);
        const int64_t slot = row * p.max_splits + w.split;
        float* out = p.ws_acc + slot * kD + col0;
#pragma unroll
        for (int oc = 0; oc < kPvChunks; ++oc)
          *reinterpret_cast<float2*>(out + 8 * oc) = make_float2(acc[oc][2 * h], acc[oc][2 * h + 1]);
        if (rank == 0 && warp == 0 && q4 == 0)
          *reinterpret_cast<float2*>(p.ws_ml + slot * 2) = make_float2(m[h], l[h]);
      }
    }
  }
};

// Grid (max_splits * kCluster, tiles, batch * Hk), clusters of kCluster
// along x: cluster x / kCluster computes split x / kCluster.
template <class Cfg, int kCluster>
__global__ void __launch_bounds__(DecodeSpread<Cfg, kCluster>::kThreads, DecodeSpread<Cfg, kCluster>::kCtasPerSm)
    attention_decode_spread_sm90_kernel(const __grid_constant__ AttentionDecodeParams p) {
  grid_launch_dependents();  // as the split kernel: the combine waits for this grid's completion
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  DecodeSpread<Cfg, kCluster>::run(p, blockIdx.x / kCluster, blockIdx.y, blockIdx.z / p.num_heads_k,
                                   blockIdx.z % p.num_heads_k, smem_raw + ((1024 - (raw % 1024)) % 1024));
}

}  // namespace samebits::cuda::sm90
