// sm90 attention backward, fused (head dim 128): dK, dV and dQ in one
// kernel. Each CTA owns 128 keys of one (sequence, KV head), as the three
// passes' dK/dV kernel does, and streams the (Q, dO, lse, D) tiles of the
// rows that see them; per 64-row tile it computes S^T, dP^T, P^T, dV, G^T,
// dK exactly as that kernel (the same tile functions: dk and dv keep their
// bits), and also the tile's dQ partial over its 128 keys,
//   dQ_part (64 x d) = round(G) K      (k16 chain over the block's keys,
//                                       from zero; A = round(G^T) read
//                                       MN-major, B = K read N-major),
// which a writer warp adds into the f32 accumulator of (query tile, head)
// with one bulk reduction (cp.reduce.async.bulk .add.f32). The additions
// to one accumulator are ordered: block n adds after every block above it
// that sees the tile has added (a counter per (query tile, head), waited
// for with an acquire load, raised with a release add once the reduction
// has completed, not only once it has read shared memory). So each dq
// element is
//   round(scale * ((((0 + part_hi) + part_hi-1) + ...) + part_lo))
// over the blocks that see its row, in descending block order, whatever
// the grid, the batch or the timing (docs/numerics.md "Backward", fused).
// A conversion kernel forms dq from the accumulators.
//
// Why descending: the walk takes a (sequence, KV head)'s blocks from the
// last, so a unit waits only for units earlier in the walk (no deadlock on
// a persistent grid: the earliest unfinished unit never waits), and under a
// causal mask a block's first tiles are those of its own diagonal, where it
// is the first to add.
//
// Status: correct and deterministic (the GPU test's 169 checks, the same
// 50-run hashes on every run and grid), but not yet faster than the three
// passes (docs/backward_design.md, "Fused dQ, rebuilt"): built only with
// SAMEBITS_BWD_FUSED.
//
//   warpgroups 0, 1   consumers: 64 keys each, dK and dV, with the
//                     operations of DkdvKernel's tiles (tile_raw_joint for
//                     the raw exponent form, DkdvKernel::tile with a hook
//                     otherwise); each stores its half of round(G^T), and
//                     warpgroup t % 2 computes tile t's dQ partial (m64n128,
//                     over all 128 keys), so they take turns
//   warpgroup 2       warp 8: DkdvTmaKernel's producer (Q, dO, lse, D; K, V)
//                     warp 9, one thread: the writer (bulk reductions and
//                     the ordering counters)
//
// Barriers, beside DkdvTmaKernel's (kv_full, kv_empty, q_full[s],
// q_empty[s]; see attention_bwd_sm90_dkdv_tma.h), for G buffer b = t % 2:
//   g_full(b)     named barrier, 256 threads: the warpgroup that is not b
//                 arrives after its half of G^T (and a proxy fence);
//                 warpgroup b syncs, then issues the dQ product
//   g_free(b)     named barrier, 256 threads: warpgroup b arrives once its
//                 dQ product (which reads the buffer) was waited for; the
//                 other warpgroup syncs before it writes buffer b again
//                 (two tiles later; not before the buffer's first use)
//   dq_full[i]    mbarrier, warpgroup b -> writer: the f32 partial is in dQ
//                 buffer i (128 arrivals, each after its own stores and a
//                 proxy fence toward the bulk copy's async proxy)
//   dq_empty[i]   mbarrier, writer -> consumers: the reduction has read
//                 buffer i (1 arrival); waited for before the buffer is
//                 written again
#pragma once

#include "cuda/attention_bwd_sm90_dkdv_tma.h"

namespace samebits::cuda::sm90::bwd {

// ---------------------------------------------------------------- PTX
// One bulk reduction: dst[i] += src[i] (f32, in the L2), `bytes` a
// multiple of 16, both 16-byte aligned; one bulk group per call site.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, uint32_t src_smem, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst),
               "r"(src_smem), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Every committed bulk group has read its shared memory.
__device__ __forceinline__ void bulk_wait_read_all() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
// All but the newest kPending committed bulk groups have completed (their
// writes performed).
template <int kPending>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(kPending) : "memory");
}
// Orders this thread's generic-proxy global accesses with its async-proxy ones.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}
__device__ __forceinline__ int ld_acquire_gpu(const int32_t* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(int32_t* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// D(64 x 128, f32) (+)= A(64 x 16, smem, MN-major) * B(16 x 128, smem,
// N-major): both operands transposed (trans-a = trans-b = 1).
template <bool kBf16>
__device__ __forceinline__ void wgmma_ss_tt_m64n128k16(float (&d)[64], uint64_t desc_a,
                                                       uint64_t desc_b, int scale_d) {
  if constexpr (kBf16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}

// The same with D = A * B (D is not read: its registers need no value).
template <bool kBf16>
__device__ __forceinline__ void wgmma_ss_tt_zero_m64n128k16(float (&d)[64], uint64_t desc_a,
                                                            uint64_t desc_b) {
  if constexpr (kBf16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 1, 1;\n}\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31]), "=f"(d[32]), "=f"(d[33]), "=f"(d[34]), "=f"(d[35]), "=f"(d[36]), "=f"(d[37]), "=f"(d[38]), "=f"(d[39]), "=f"(d[40]), "=f"(d[41]), "=f"(d[42]), "=f"(d[43]), "=f"(d[44]), "=f"(d[45]), "=f"(d[46]), "=f"(d[47]), "=f"(d[48]), "=f"(d[49]), "=f"(d[50]), "=f"(d[51]), "=f"(d[52]), "=f"(d[53]), "=f"(d[54]), "=f"(d[55]), "=f"(d[56]), "=f"(d[57]), "=f"(d[58]), "=f"(d[59]), "=f"(d[60]), "=f"(d[61]), "=f"(d[62]), "=f"(d[63])
        : "l"(desc_a), "l"(desc_b));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 1, 1;\n}\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]), "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15]), "=f"(d[16]), "=f"(d[17]), "=f"(d[18]), "=f"(d[19]), "=f"(d[20]), "=f"(d[21]), "=f"(d[22]), "=f"(d[23]), "=f"(d[24]), "=f"(d[25]), "=f"(d[26]), "=f"(d[27]), "=f"(d[28]), "=f"(d[29]), "=f"(d[30]), "=f"(d[31]), "=f"(d[32]), "=f"(d[33]), "=f"(d[34]), "=f"(d[35]), "=f"(d[36]), "=f"(d[37]), "=f"(d[38]), "=f"(d[39]), "=f"(d[40]), "=f"(d[41]), "=f"(d[42]), "=f"(d[43]), "=f"(d[44]), "=f"(d[45]), "=f"(d[46]), "=f"(d[47]), "=f"(d[48]), "=f"(d[49]), "=f"(d[50]), "=f"(d[51]), "=f"(d[52]), "=f"(d[53]), "=f"(d[54]), "=f"(d[55]), "=f"(d[56]), "=f"(d[57]), "=f"(d[58]), "=f"(d[59]), "=f"(d[60]), "=f"(d[61]), "=f"(d[62]), "=f"(d[63])
        : "l"(desc_a), "l"(desc_b));
  }
}

// ---------------------------------------------------------------- layout
// The accumulator slot of query tile m (64 rows) of sequence b: dense
// batches b * dq_tiles_per_seq + m; packed batches q_row0 / 64 + b + m,
// which never overlaps the next sequence's (floor((r0 + l) / 64) + 1 >=
// floor(r0 / 64) + ceil(l / 64)) and stays below total_q / 64 + batch + 1.
__device__ __forceinline__ long dq_tile_index(const AttentionBwdParams& p, int b, const SeqGeom& sg,
                                              int m) {
  return p.cu_seqlens_q ? long(sg.q_row0 / 64) + b + m : long(b) * p.dq_tiles_per_seq + m;
}

template <class Cfg>
struct FusedKernel {
  using Tma = DkdvTmaKernel<Cfg>;
  using V2 = DkdvKernel<Cfg>;
  using Smem = typename V2::Smem;
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBn = Cfg::kBlockN;
  static constexpr int kBm = Cfg::kBlockM;
  static constexpr int kS = Cfg::kStages;
  static constexpr int kAccRegs = kD / 2;
  static constexpr int kDqRegs = kD / 2;  // the dQ partial, 64 x d f32 over 128 threads
  static constexpr uint32_t kRow = Cfg::kRowBytes;
  // Named barriers of G buffer b (b = 0, 1): g_full(b) the other
  // warpgroup's half of G^T written (it arrives, warpgroup b syncs);
  // g_free(b) warpgroup b's dQ product has read the buffer (b arrives,
  // the other warpgroup syncs before it writes its half again).
  static constexpr uint32_t g_full(int b) { return 2 + b; }
  static constexpr uint32_t g_free(int b) { return 4 + b; }
  static_assert(kD == 128 && kBm == 64 && kBn == 128, "the dQ product is m64n128 over 128 keys");
  static_assert(Cfg::kDqTileFloats == kBm * kD, "the dQ tile is 64 x d f32");

  struct Bars {
    uint64_t* base;
    __device__ typename Tma::Bars tma() const { return typename Tma::Bars{base}; }
    __device__ uint64_t* dq_full(int i) const { return base + 3 + 2 * kS + i; }
    __device__ uint64_t* dq_empty(int i) const { return base + 5 + 2 * kS + i; }
  };
  __device__ static uint32_t g_buf(const Smem& sm, int i) {
    return smem_addr(sm.base + Cfg::kFusedOffG + i * Cfg::kGBytes);
  }
  __device__ static float* dq_buf(const Smem& sm, int i) {
    return reinterpret_cast<float*>(sm.base + Cfg::kFusedOffDq + i * Cfg::kDqTileBytes);
  }

  // gemm round(G) * K -> dQ_part (64 x d, one group): A = round(G^T) as
  // keys x 64 rows, one 128-byte row a key (MN-major: a k16 step is two
  // 8-key atoms, sbo 1024; lbo not read for a 64-wide operand); B = K,
  // keys x d in d / 64 column chunks of kBn rows (N-major, lbo the chunk
  // stride), the same k16 steps.
  __device__ static void issue_dq(float (&acc)[kDqRegs], uint32_t g_addr, uint32_t k_addr) {
    const uint64_t da = make_smem_desc_sw128(g_addr, Cfg::kGBytes, 1024);
    const uint64_t db = make_smem_desc_sw128(k_addr, kBn * kRow, 1024);
    wgmma_fence();
    wgmma_ss_tt_zero_m64n128k16<Cfg::kBf16>(acc, da, db);
#pragma unroll
    for (int kk = 1; kk < kBn / 16; ++kk)
      wgmma_ss_tt_m64n128k16<Cfg::kBf16>(acc, da + ((kk * 16 * kRow) >> 4),
                                         db + ((kk * 16 * kRow) >> 4), 1);
    wgmma_commit();
  }

  // The tile functions' hook. Tile t's G^T goes to G buffer b = t % 2 and
  // warpgroup b computes its dQ partial (the warpgroups take turns, so
  // neither waits for the other every tile). on_g: round(G^T) (the dK
  // product's A fragments) to this warpgroup's half of the buffer, after
  // warpgroup b's product of two tiles ago has read it (g_free; only the
  // other warpgroup waits: b's own product was waited for). The dQ product
  // is issued after the tile function returns (dq_after_tile), when dK's
  // and dV's operand registers are free.
  struct Hook {
    uint32_t g_addr;
    int b;           // G buffer, and the warpgroup that computes the tile's dQ
    bool wait_free;  // not warpgroup b, and the buffer was used before
    int key_local;   // key (in the block) of this thread's fragment row 0
    int q4;          // lane % 4
    int diag;        // AttentionBwdParams::fused_diag
    __device__ __forceinline__ void before_g() const {
      if (wait_free && !(diag & 16)) named_barrier_sync(g_free(b), 256);
    }
    template <class Af>
    __device__ __forceinline__ void on_g(const Af& af) const {
      before_g();
      if (diag & 32) return;
      // Fragment kk covers rows 16kk .. 16kk + 15 of the tile: register
      // 2 half + hh holds rows 16kk + 8 half + 2 q4 + {0, 1} of key
      // key_local + 8 hh; 16-byte unit (2kk + half) ^ (key % 8) of the
      // key's swizzled row (key % 8 == key_local % 8).
      const uint32_t row8 = key_local % 8;
#pragma unroll
      for (int kk = 0; kk < kBm / 16; ++kk)
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const uint32_t unit = (2 * kk + half) ^ row8;
            const uint32_t addr = g_addr + (key_local + 8 * hh) * kRow + unit * 16 + 4 * q4;
            asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(af[kk][2 * half + hh]) : "memory");
          }
    }
  };

  // ---------------------------------------------------------------- consumers
  // kRawOnly: the raw score form only (the launcher checked BwdScore::raw),
  // as the three passes' kRaw forms: without the softcap path ptxas sizes
  // the raw tile bodies' registers alone (same operations, same bits).
  template <bool kRawOnly = false>
  __device__ static void consumer(const AttentionBwdParams& p, const Smem& sm, const Bars& bars) {
    const int tid = threadIdx.x;
    // warp-uniform to the compiler (shuffled from lane 0), as in the dK/dV
    // kernel: the wgmma descriptors derived from them stay in uniform
    // registers
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0),
              warp = __shfl_sync(0xffffffffu, (tid % 128) / 32, 0), lane = tid % 32, t128 = tid % 128;
    const typename Tma::Bars tb = bars.tma();
    const BwdScore score(p);
    Walker walker;
    int b, g, n;
    uint32_t unit_iter = 0, tile_iter = 0;
    const bool walk_packed = p.cu_seqlens_k != nullptr;
    for (long unit = zigzag_unit(0, walk_packed);
         walker.get<true>(p, unit, p.num_heads_k, kBn, b, g, n);
         unit = zigzag_unit(++unit_iter, walk_packed)) {
      Tma::unit_of(p, b, g, n);
      const typename Tma::UnitTiles u(p, b, n);
      const int key0 = u.k0 + 64 * wg;  // this warpgroup's first key

      float acc_dv[kAccRegs];
      float acc_dk[kAccRegs];
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc_dv[i] = acc_dk[i] = 0.f;

      mbar_wait(tb.kv_full(), unit_iter & 1);  // K_n, V_n landed
      for (int t = 0; t < u.n_tiles; ++t, ++tile_iter) {
        const int s = tile_iter % kS, gb = tile_iter % 2;
        mbar_wait(tb.q_full(s), (tile_iter / kS) & 1);  // Q, dO, lse, D of tile t landed
        const int m0 = (u.m_lo + t % u.n_m) * kBm;
        const bool mine = wg == gb;
        const Hook hook{g_buf(sm, gb), gb, !mine && tile_iter >= 2, 64 * wg + 16 * warp + lane / 4,
                        lane % 4, p.fused_diag};
        if (V2::skips(u.vis, m0, key0)) {
          // No row of the tile sees my 64 keys: my half of G^T is zero
          // (the dQ product still takes the other half's keys).
          hook.before_g();
          const uint32_t zero = g_buf(sm, gb) + 64 * wg * kRow;
#pragma unroll
          for (int i = 0; i < 64 * kRow / 16 / 128; ++i)
            asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" ::"r"(zero + (i * 128 + t128) * 16),
                         "r"(0)
                         : "memory");
        } else if (kRawOnly || score.raw) {
          if (u.vis.all_visible(m0, kBm, key0, 64))
            V2::template tile_raw_joint<false>(sm, s, score, u.vis, m0, key0, lane, warp, acc_dv, acc_dk, hook);
          else
            V2::template tile_raw_joint<true>(sm, s, score, u.vis, m0, key0, lane, warp, acc_dv, acc_dk, hook);
        } else if constexpr (!kRawOnly) {
          V2::template tile<true, true>(sm, s, score, u.vis, m0, key0, lane, warp, acc_dv, acc_dk,
                                        hook);
        }
        mbar_arrive(tb.q_empty(s));  // release stage s (this thread's reads)
        // Both halves of G^T in buffer gb: the other warpgroup signals,
        // warpgroup gb waits and computes the tile's dQ partial.
        if (!(p.fused_diag & 64)) fence_proxy_async_smem();  // this thread's G^T stores -> wgmma's async proxy
        if (!mine) {
          if (!(p.fused_diag & 16)) named_barrier_arrive(g_full(gb), 256);
        } else {
          if (!(p.fused_diag & 16)) named_barrier_sync(g_full(gb), 256);
          float acc_dq[kDqRegs];
          if (!(p.fused_diag & 8)) {
            issue_dq(acc_dq, g_buf(sm, gb), smem_addr(sm.k()));
            wgmma_wait<0>();
          } else {
#pragma unroll
            for (int i = 0; i < kDqRegs; ++i) acc_dq[i] = 0.f;
          }
          fence_regs(acc_dq);
          if (!(p.fused_diag & 16)) named_barrier_arrive(g_free(gb), 256);  // G buffer gb read (waited for above)
          // dQ_part -> dQ buffer gb, [register / 4][thread] of float4, once
          // the reduction of two tiles ago has read it.
          const int qb = tile_iter % Cfg::kDqBufs;
          if (!(p.fused_diag & 64)) mbar_wait(bars.dq_empty(qb), ((tile_iter / Cfg::kDqBufs) & 1) ^ 1);
          float4* dst = reinterpret_cast<float4*>(dq_buf(sm, qb));
          if (!(p.fused_diag & 4)) {
#pragma unroll
            for (int j = 0; j < kDqRegs / 4; ++j)
              dst[j * 128 + t128] =
                  make_float4(acc_dq[4 * j], acc_dq[4 * j + 1], acc_dq[4 * j + 2], acc_dq[4 * j + 3]);
          }
          if (!(p.fused_diag & 64)) {
            fence_proxy_async_smem();  // generic stores -> the bulk copy's async proxy
            mbar_arrive(bars.dq_full(qb));
          }
        }
      }
      mbar_arrive(tb.kv_empty());  // release K_n, V_n

      const int key_r = key0 + warp * 16 + lane / 4;
      V2::store(p.dv, p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride, b, g, u.sg, key_r,
                lane % 4, acc_dv, false, 1.f);
      V2::store(p.dk, p.dk_batch_stride, p.dk_row_stride, p.dk_head_stride, b, g, u.sg, key_r,
                lane % 4, acc_dk, true, p.softmax_scale);
    }
  }

  // ---------------------------------------------------------------- writer
  // One thread. For each tile of each unit, in the consumers' order: wait
  // for the partial; wait until the blocks above this one that see the
  // query tile have added theirs (counter == their number); add it with one
  // bulk reduction; release the buffer once it has been read. A counter is
  // raised only once its reduction has completed: with up to `inflight`
  // reductions outstanding, the oldest completed ones are released after
  // each issue, and all of them at the end of a unit (a later unit may
  // wait, through others, for this one's counters: none may stay held
  // while this CTA starts work that waits).
  __device__ static void writer(const AttentionBwdParams& p, const Smem& sm, const Bars& bars) {
    if (p.fused_diag & 64) return;
    Walker walker;
    int b, g, n;
    uint32_t unit_iter = 0, tile_iter = 0;
    const bool walk_packed = p.cu_seqlens_k != nullptr;
    const int inflight = p.fused_inflight < 1 ? 1 : (p.fused_inflight > 4 ? 4 : p.fused_inflight);
    int32_t* pending[4];  // counters of reductions issued, not yet released (oldest first)
    int npending = 0;
    auto release_all_but = [&](int keep) {  // wait until at most `keep` are outstanding
      if (npending <= keep) return;
      if (keep == 0) bulk_wait<0>();
      else if (keep == 1) bulk_wait<1>();
      else if (keep == 2) bulk_wait<2>();
      else bulk_wait<3>();
      fence_proxy_async_global();  // the completed reductions before the releases
      const int done = npending - keep;
      for (int i = 0; i < done; ++i) red_release_gpu_add(pending[i], 1);
      for (int i = done; i < npending; ++i) pending[i - done] = pending[i];
      npending = keep;
    };
    for (long unit = zigzag_unit(0, walk_packed);
         walker.get<true>(p, unit, p.num_heads_k, kBn, b, g, n);
         unit = zigzag_unit(++unit_iter, walk_packed)) {
      Tma::unit_of(p, b, g, n);
      const typename Tma::UnitTiles u(p, b, n);
      for (int t = 0; t < u.n_tiles; ++t, ++tile_iter) {
        const int h = g * p.head_group + t / u.n_m;
        const int m = u.m_lo + t % u.n_m;
        int klo, khi;
        u.vis.keys_of_rows(m * kBm, m * kBm + kBm - 1, klo, khi);
        const int before = khi / kBn - n;  // blocks above n that see tile m
        const long slot = dq_tile_index(p, b, u.sg, m) * p.num_heads + h;
        int32_t* sem = p.dq_sem + slot;
        const int qb = tile_iter % Cfg::kDqBufs;
        mbar_wait(bars.dq_full(qb), (tile_iter / Cfg::kDqBufs) & 1);
        if (!(p.fused_diag & 1))
          while (ld_acquire_gpu(sem) != before) {
          }
        fence_proxy_async_global();  // the acquire before the reduction's accesses
        if (!(p.fused_diag & 2))
          bulk_reduce_add_f32(p.dq_accum + slot * Cfg::kDqTileFloats, smem_addr(dq_buf(sm, qb)),
                              Cfg::kDqTileBytes);
        bulk_commit();
        bulk_wait_read_all();
        mbar_arrive(bars.dq_empty(qb));
        pending[npending++] = sem;
        release_all_but(inflight - 1);
      }
      release_all_but(0);
    }
  }
};

// kRawOnly: FusedKernel::consumer's (the launcher picks it; same bits).
template <class Cfg, bool kRawOnly = false>
__global__ void __launch_bounds__(Cfg::kDkdvTmaThreads, 1)
    attention_bwd_fused_sm90_kernel(const __grid_constant__ AttentionBwdParams p,
                                    const __grid_constant__ BwdMaps maps) {
  extern __shared__ uint8_t smem_raw[];
  using K = FusedKernel<Cfg>;
  using Tma = typename K::Tma;
  // 1024-byte aligned by pointer arithmetic on the shared array (not an
  // integer round trip), so the compiler keeps the shared address space:
  // lse, D and the other generic accesses become ld/st.shared. FREE (same
  // bits). H100, 2026-11-27: this kernel 3-4 % faster at 16k; the same
  // change made the three passes' kernels up to 4-7 % slower, so they keep
  // the integer form (docs/backward_design.md, "The producer's lse, D
  // loads").
  uint8_t* base = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  const typename K::Smem sm{base};
  const typename K::Bars bars{reinterpret_cast<uint64_t*>(base + Cfg::kDkdvTmaOffBars)};
  const typename Tma::Bars tb = bars.tma();
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  if (threadIdx.x == 0) {
    Tma::init_barriers(tb);  // (pt_empty unused: no split roles)
    for (int i = 0; i < 2; ++i) {
      mbar_init(bars.dq_full(i), 128);  // the warpgroup that computed the partial
      mbar_init(bars.dq_empty(i), 1);
    }
    fence_barrier_init();
  }
  __syncthreads();  // the only CTA-wide barrier: barriers initialised
  if (wg == 2) {
    setmaxnreg_dec<Cfg::kDkdvProducerRegs>();
    const int warp = threadIdx.x / 32;
    if (warp == 8) Tma::producer(p, maps, sm, tb);
    if (warp == 9 && threadIdx.x % 32 == 0) K::writer(p, sm, bars);
  } else {
    setmaxnreg_inc<Cfg::kDkdvConsumerRegs>();
    K::template consumer<kRawOnly>(p, sm, bars);
  }
}

// dq = round(scale * accumulator) for every row of every (query tile, head)
// (rows past the sequence are not written). 128 threads: thread t holds
// the registers of thread t of the warpgroup that computed the partials,
// so it reads the float4s that thread stored ([register / 4][thread]) and
// writes its fragment's pairs: register 4j + 2hh + jj is row 16 warp +
// lane / 4 + 8hh, column 8j + 2 (lane % 4) + jj.
template <int kD, bool kBf16>
__global__ void __launch_bounds__(128)
    attention_bwd_dq_convert_sm90_kernel(const __grid_constant__ AttentionBwdParams p) {
  constexpr int kRegs = kD / 2;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  Walker walker;
  int b, h, m;
  for (long unit = blockIdx.x; walker.get<false>(p, unit, p.num_heads, 64, b, h, m);
       unit += gridDim.x) {
    const SeqGeom sg = seq_geom(p, b);
    const long slot = dq_tile_index(p, b, sg, m) * p.num_heads + h;
    const float4* src = reinterpret_cast<const float4*>(p.dq_accum + slot * 64 * kD);
#pragma unroll
    for (int j = 0; j < kRegs / 4; ++j) {
      const float4 v = src[j * 128 + t];
      const int col = 8 * j + 2 * (lane % 4);
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int i = m * 64 + warp * 16 + lane / 4 + 8 * hh;
        if (i >= sg.lq) continue;
        const float x0 = __fmul_rn(p.softmax_scale, hh ? v.z : v.x);
        const float x1 = __fmul_rn(p.softmax_scale, hh ? v.w : v.y);
        uint16_t* row = static_cast<uint16_t*>(p.dq) + b * p.dq_batch_stride +
                        int64_t(sg.q_row0 + i) * p.dq_row_stride + h * p.dq_head_stride;
        *reinterpret_cast<uint32_t*>(row + col) = pack2<kBf16>(x0, x1);
      }
    }
  }
}

}  // namespace samebits::cuda::sm90::bwd
