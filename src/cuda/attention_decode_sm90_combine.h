// sm90 attention over a KV cache, pass 2: the combine kernel. One row group
// of threads per output row (sequence b, query head h, query row i) folds
// the splits the row sees, in ascending order, from the f32 partials of
// pass 1, and writes out and lse. Thread t of a row holds the columns
// [t * kCols, (t + 1) * kCols). With p.combine_parts = P > 1 (d >= 128:
// one row a CTA), a row's columns are cut into P parts of d / P, each
// folded by a CTA of kRowThreads / P threads of its own (every one of
// them computes the row's (M, L, a, b) from the same (m, l) values, in the
// same order): a few rows of many splits then load through P times as
// many SMs. A column's fold is the same either way (FREE).
//
// Loads. A row's partials of splits [s_lo, s_hi] are contiguous in the
// workspace (acc [row][split][d], (m, l) [row][split][2]). They are copied
// to shared memory by cp.async in chunks of up to kChunk splits, every
// 16-byte piece of a chunk requested at once by the row's threads (no
// register holds a load in flight), two chunk buffers: chunk c + 1 is in
// flight while chunk c is folded. A row of <= kChunk splits (1 x 32k: 32)
// costs one load latency. The kernel is launched with programmatic
// dependent launch (attention_decode_sm90_launch_impl.h): its CTAs may start
// while pass 1 drains, and wait (griddepcontrol.wait) for pass 1's
// completion before the first load of a partial.
//
// Arithmetic: the forward's fold (attention_fwd_sm90_epilogue.h,
// FoldState::fold / combine / finish) and output (write_output), operation
// for operation: the first split the row sees is copied (the forward's
// `started == false` branch), every later one folded with
//   M' = max(M, m); Ms = (M' == -inf) ? 0 : M'; a = ex2(M - Ms); b = ex2(m - Ms)
//   L = L*a + l*b;  ACC = ACC*a + acc*b          (each product and sum rounded)
// then out = round(ACC * rcp_rn(L)), lse = (M + lg2(L)) * ln2. Every
// thread of a row computes (M, L, a, b) itself from the same (m, l) values,
// in the same order, so all agree; a column's ACC is folded by one thread,
// splits strictly ascending. Where the bytes wait before the fold (shared
// memory, how many splits ahead) is FREE. The forward keeps these as
// members of FoldState and write_output, whose register layout (the wgmma
// accumulator's) the combine does not share, so the operations are
// restated here with the same intrinsics; fold_weights and
// decode_finish_row are the two helpers that docs/decode_design.md proposes
// to move into the forward's epilogue header so both call one definition.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <type_traits>

#include "cuda/attention_decode_sm90_kernel.h"
#include "cuda/sm90_primitives.h"

namespace samebits::cuda::sm90 {

template <class Cfg>
struct DecodeCombine {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
  static constexpr int kD = Cfg::kHeadDim;
  // FREE. Columns per thread: pairs (stored as one bf16x2 / half2, as the
  // forward's output), 4 at d 256 so a row keeps 64 threads.
  static constexpr int kCols = kD >= 256 ? 4 : 2;
  static constexpr int kRowThreads = kD / kCols;  // d 64: 32, d 128: 64, d 256: 64
  static constexpr int kThreads = 64;
  static constexpr int kRowsPerCta = kThreads / kRowThreads;  // d 64: 2 rows (one warp each), else 1
  static_assert(kRowThreads * kRowsPerCta == kThreads, "rows tile the CTA");
  static_assert(kRowsPerCta == 1 || kRowThreads == 32, "several rows per CTA: one warp each");
  static_assert(kCols % 2 == 0, "threads hold column pairs");
  // FREE. Splits whose partials are requested at once (one chunk buffer).
  // Two buffers of the largest chunk stay under the 48 KiB of shared memory
  // a CTA gets without an opt-in.
  static constexpr int kChunk = kD >= 256 ? 16 : 32;
  static_assert(kRowsPerCta * 2 * kChunk * (kD + 2) * 4 <= 48 * 1024, "combine buffers over 48 KiB");

  // Shared-memory layout of one row, a pure function of max_splits (host
  // and device derive the same): `stages` buffers of `chunk` splits, acc
  // [stage][chunk][d] then (m, l) [stage][chunk][2], f32; the row's block
  // rounded up to 16 bytes (cp.async 16-byte pieces stay aligned).
  __host__ __device__ static int chunk_splits(int max_splits) {
    return max_splits < kChunk ? max_splits : kChunk;
  }
  __host__ __device__ static int stages(int max_splits) { return max_splits > kChunk ? 2 : 1; }
  __host__ __device__ static int row_floats(int max_splits) {
    return (stages(max_splits) * chunk_splits(max_splits) * (kD + 2) + 3) / 4 * 4;
  }
  static size_t smem_bytes(int max_splits) {
    return static_cast<size_t>(kRowsPerCta) * row_floats(max_splits) * sizeof(float);
  }

  // `dry`: a zero-size source, so nothing is read from global memory and
  // the destination is zero-filled (the dry pass).
  __device__ static void cp_async_16(float* dst, const float* src, bool dry) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(dry ? 0 : 16)
                 : "memory");
  }
  __device__ static void cp_async_8(float* dst, const float* src, bool dry) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(dry ? 0 : 8)
                 : "memory");
  }
  // The threads of one row meet: every thread's completed cp.async bytes
  // (cp_async_wait) become visible to the others, or every thread is done
  // reading a buffer before it is refilled.
  __device__ static void row_sync() {
    if constexpr (kRowsPerCta == 1)
      __syncthreads();
    else
      __syncwarp();
  }

  __device__ static void run(const AttentionDecodeParams& p, float* smem) {
    // column parts (one row a CTA only); the row's threads of this part
    const int parts = kRowsPerCta == 1 ? p.combine_parts : 1;
    const int row_threads = kRowThreads / parts, part_cols = kD / parts;
    const int t = threadIdx.x % row_threads;
    const int64_t row = kRowsPerCta == 1 ? static_cast<int64_t>(blockIdx.x) / parts
                                         : static_cast<int64_t>(blockIdx.x) * kRowsPerCta + threadIdx.x / kRowThreads;
    const int c0 = kRowsPerCta == 1 ? static_cast<int>(blockIdx.x % parts) * part_cols : 0;  // the part's first column
    const int64_t rows = static_cast<int64_t>(p.batch) * p.num_heads * p.q_count;
    if (row >= rows) return;  // a whole row group (the CTA, or one warp of it)
    const int i = p.q_begin + static_cast<int>(row % p.q_count);
    const int h = static_cast<int>((row / p.q_count) % p.num_heads);
    const int b = static_cast<int>(row / (static_cast<int64_t>(p.q_count) * p.num_heads));
    // seqused_k is not written by pass 1; the work before pass 1 in the
    // stream completed before pass 1 (a plain launch) started, hence before
    // this grid, so it may be read before the wait.
    const int lk = decode_keys(p, b);
    int lo, hi;
    decode_visibility(p, lk).row_bounds(i, lo, hi);

    // Pass 1's partials (and, as the stream requires, all of pass 1's
    // writes) are complete and visible after grid_dependency_wait; without
    // programmatic serialization it returns at once.
    //
    // FREE (p.combine_warm): the code below first runs once "dry", before
    // the wait: no partial is loaded (the copies are zero-size), nothing is
    // written, at most kDryFold splits of one chunk are folded from shared
    // memory whose values are discarded. The same instructions then run
    // for real after the wait. With programmatic dependent launch the dry
    // pass runs while pass 1 drains, so the instructions the combine needs
    // after the wait are already in the SM's instruction cache instead of
    // being fetched from memory on the critical path (after another
    // kernel, bench/predecessor_probe.py). The real pass's operations are
    // the same either way.
#pragma unroll 1
    for (int pass = p.combine_warm ? 0 : 1; pass < 2; ++pass) {
      const bool dry = pass == 0;
      if (!dry) grid_dependency_wait();
      fold_row(p, smem, row, i, h, b, lk, lo, hi, c0, t, row_threads, part_cols, dry);
    }
  }

  // Up to this many splits folded by the dry pass: the fold loop's unrolled
  // body (4) once and its remainder once.
  static constexpr int kDryFold = 6;

  __device__ static void fold_row(const AttentionDecodeParams& p, float* smem, int64_t row, int i, int h, int b,
                                  int lk, int lo, int hi, int c0, int t, int row_threads, int part_cols,
                                  bool dry) {
    float M = -CUDART_INF_F, L = 0.f;
    float acc[kCols];
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[j] = 0.f;
    if (lk > 0 && hi >= lo) {  // the same for every thread of the row
      const int s_lo = lo / Cfg::kSplit, s_hi = hi / Cfg::kSplit;
      const int n = dry ? min(s_hi - s_lo + 1, kDryFold) : s_hi - s_lo + 1;  // <= max_splits
      const int chunk = chunk_splits(p.max_splits);
      const int chunks = (n + chunk - 1) / chunk;
      float* const mine = smem + (threadIdx.x / kRowThreads) * row_floats(p.max_splits);
      float* const sm_ml = mine + stages(p.max_splits) * chunk * kD;
      const int64_t slot0 = row * p.max_splits + s_lo;  // workspace slot of split s_lo

      // Chunk c (splits s_lo + c * chunk ...) into buffer c % 2, one group.
      auto load = [&](int c) {
        const int first = c * chunk, cnt = min(chunk, n - first);
        float* dst = mine + (c % 2) * chunk * kD;
        float* dst_ml = sm_ml + (c % 2) * chunk * 2;
        const float* src = p.ws_acc + (slot0 + first) * kD + c0;
        const float* src_ml = p.ws_ml + (slot0 + first) * 2;
        // 16-byte pieces of the part's columns of one split: kD / 4 / parts,
        // a power of two, so a shift and a mask find piece k's split
        const int piece_shift = __ffs(part_cols / 4) - 1, pieces = 1 << piece_shift;
        for (int k = t; k < cnt * pieces; k += row_threads) {
          const int u = k >> piece_shift, off = u * kD + 4 * (k & (pieces - 1));
          cp_async_16(dst + c0 + off, src + off, dry);
        }
        for (int k = t; k < cnt; k += row_threads) cp_async_8(dst_ml + 2 * k, src_ml + 2 * k, dry);
        cp_async_commit();
      };

      load(0);
      if (chunks > 1) load(1);
      for (int c = 0; c < chunks; ++c) {
        // Chunk c has landed: this thread's pieces (wait_group; chunk c + 1
        // may stay in flight), then everybody's (row_sync).
        if (c + 1 < chunks)
          cp_async_wait<1>();
        else
          cp_async_wait<0>();
        row_sync();
        const float* part = mine + (c % 2) * chunk * kD + c0 + t * kCols;
        const float* ml = sm_ml + (c % 2) * chunk * 2;
        const int cnt = min(chunk, n - c * chunk);
        int u = 0;
        if (c == 0) {  // the first split the row sees: copied
          M = ml[0];
          L = ml[1];
#pragma unroll
          for (int j = 0; j < kCols; ++j) acc[j] = part[j];
          u = 1;
        }
        // The fold, splits ascending.
#pragma unroll 4
        for (; u < cnt; ++u) {
          float x[kCols];
#pragma unroll
          for (int j = 0; j < kCols; j += 2) {
            const float2 v = *reinterpret_cast<const float2*>(part + u * kD + j);
            x[j] = v.x;
            x[j + 1] = v.y;
          }
          const float2 mlu = *reinterpret_cast<const float2*>(ml + 2 * u);
          float a, w;
          fold_weights(M, L, mlu.x, mlu.y, a, w);
#pragma unroll
          for (int j = 0; j < kCols; ++j) acc[j] = __fadd_rn(__fmul_rn(acc[j], a), __fmul_rn(x[j], w));
        }
        if (c + 2 < chunks) {
          row_sync();  // every thread of the row is done with buffer c % 2
          load(c + 2);
        }
      }
    }

    // write_output: out = round(ACC * (1 / L)), 1 / L rounded once; lse =
    // (M + log2 L) * ln2; L = 0: out = 0, lse = +inf (decode_finish_row,
    // which pass 1 applies itself to one-split rows when direct_out).
    float inv, lse;
    decode_finish_row(M, L, inv, lse);
    Elem* o = static_cast<Elem*>(p.out) + b * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
              h * p.o_head_stride + c0 + t * kCols;
    if (dry) {
      row_sync();  // the dry fold's reads done before the real pass refills the buffer
      return;
    }
#pragma unroll
    for (int j = 0; j < kCols; j += 2)
      *reinterpret_cast<uint32_t*>(o + j) =
          pack2<Cfg::kBf16>(__fmul_rn(acc[j], inv), __fmul_rn(acc[j + 1], inv));
    if (t == 0 && c0 == 0) {
      p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + static_cast<int64_t>(i) * p.lse_row_stride] = lse;
    }
  }
};

template <class Cfg>
__global__ void __launch_bounds__(DecodeCombine<Cfg>::kThreads)
    attention_decode_combine_sm90_kernel(const __grid_constant__ AttentionDecodeParams p) {
  extern __shared__ __align__(16) float combine_smem[];
  DecodeCombine<Cfg>::run(p, combine_smem);
}

}  // namespace samebits::cuda::sm90
