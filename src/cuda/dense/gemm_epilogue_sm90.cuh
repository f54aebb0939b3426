// Epilogue of the sm90 GEMM: out = round(alpha * acc + beta * bias), one
// multiply and one add, each rounded (__fmul_rn / __fadd_rn), then one
// rounding to out dtype (epilogue_value). Two ways to store it, the same
// bits: direct (store_tile: from the accumulator fragment to global memory)
// and staged (store_tile_staged: through shared memory and TMA tile stores,
// 16-bit outputs whose rows TMA can address).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "cuda/dense/dtype.cuh"
#include "cuda/dense/gemm_sm90_params.h"
#include "cuda/dense/gemm_sm90_ptx.cuh"
#include "cuda/dense/gemm_tile_configs.h"

namespace samebits::cuda::dense::sm90 {

// Bias element idx as an f32 (exact for every bias dtype). TB is the bias
// dtype; the kernels branch on p.bias_dtype once per tile (with_bias_type).
template <class TB>
__device__ __forceinline__ float load_bias(const char* bias, int64_t idx) {
  // read-only for the whole kernel (ld.global.nc): the compiler may issue
  // these loads ahead of the output stores
  if constexpr (std::is_same_v<TB, float>)
    return __ldg(reinterpret_cast<const float*>(bias) + idx);
  else if constexpr (std::is_same_v<TB, __half>)
    return __half2float(__ldg(reinterpret_cast<const __half*>(bias) + idx));
  else
    return __bfloat162float(__ldg(reinterpret_cast<const __nv_bfloat16*>(bias) + idx));
}

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<TB>{}) with TB = void (no bias) or the bias dtype: one
// branch per tile, none per element.
template <class F>
__device__ __forceinline__ void with_bias_type(const GemmTmaParams& p, const char* bias, F&& f) {
  if (bias == nullptr)
    f(TypeTag<void>{});
  else if (p.bias_dtype == SB_F32)
    f(TypeTag<float>{});
  else if (p.bias_dtype == SB_F16)
    f(TypeTag<__half>{});
  else
    f(TypeTag<__nv_bfloat16>{});
}

// Two 16-bit values as one 32-bit word, the lower column first.
template <class TO>
__device__ __forceinline__ uint32_t pack_pair(float v0, float v1) {
  if constexpr (std::is_same_v<TO, __half>) {
    const __half2 h = __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

template <class TO>
__device__ __forceinline__ void store_pair(TO* dst, float v0, float v1) {
  if constexpr (std::is_same_v<TO, float>)
    *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
  else
    *reinterpret_cast<uint32_t*>(dst) = pack_pair<TO>(v0, v1);
}

// The bias of batch bz as a byte pointer (nullptr: none).
__device__ __forceinline__ const char* bias_base(const GemmTmaParams& p, int bz) {
  return p.bias == nullptr ? nullptr
                           : static_cast<const char*>(p.bias) +
                                 int64_t(bz) * p.bias_batch_stride * (p.bias_dtype == SB_F32 ? 4 : 2);
}

// THE epilogue value of output element (r, c) < (m, n) from its f32
// accumulator, before the rounding to the output dtype: alpha * acc, plus
// beta * bias, each product and the sum rounded. Both epilogues (direct and
// staged) call this one function, so they store the same bits. TB: the bias
// dtype, or void when the call has no bias (the value is alpha * acc
// alone); the callers choose TB once per tile, not once per element.
template <class TB>
__device__ __forceinline__ float epilogue_value(const GemmTmaParams& p, const char* bias, float acc, int64_t r,
                                                int64_t c) {
  float x = __fmul_rn(p.alpha, acc);
  if constexpr (!std::is_void_v<TB>)
    x = __fadd_rn(x, __fmul_rn(p.beta, load_bias<TB>(bias, r * p.bias_row_stride + c)));
  return x;
}

// epilogue_value of an element that may lie outside the output (r >= m or
// c >= n: no bias term, the value is not stored).
template <class TB>
__device__ __forceinline__ float epilogue_value_edge(const GemmTmaParams& p, const char* bias, float acc, int64_t r,
                                                     int64_t c) {
  if constexpr (!std::is_void_v<TB>) {
    if (r < p.m && c < p.n) return epilogue_value<TB>(p, bias, acc, r, c);
  }
  return epilogue_value<void>(p, nullptr, acc, r, c);
}

// The largest divisor of n that is at most cap.
constexpr int largest_divisor_upto(int n, int cap) {
  for (int d = cap; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// A warp's rows of a fragment m16 x BN (this thread: rows r_base and
// r_base + 8, columns c_base + 8 j and + 1), its 8-column units j in
// [J0, J1) (the whole fragment by default).
template <class TO, int BN, class TB, int J0 = 0, int J1 = BN / 8>
__device__ __forceinline__ void store_warp_rows_body(const GemmTmaParams& p, const float (&acc)[BN / 2], TO* out,
                                                     const char* bias, int64_t r_base, int64_t c_base) {
  static_assert(0 <= J0 && J0 < J1 && J1 <= BN / 8, "a range of the fragment's 8-column units");
  // every element of this thread inside the output, pairs storable: no per-element test
  const bool interior = r_base + 8 < p.m && c_base + 8 * (J1 - 1) + 1 < p.n && p.out_pairs;
  if (interior) {
    // column groups whose values are computed before their stores, dividing
    // the range's units (BN = 224: 7) so that no group runs past it
    constexpr int kGroup = largest_divisor_upto(J1 - J0, 8);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t r = r_base + 8 * h;
      TO* orow = out + r * p.out_row_stride;
#pragma unroll
      for (int j0 = J0; j0 < J1; j0 += kGroup) {
        float v[kGroup][2];
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
          const int j = j0 + g;
          const int64_t c = c_base + 8 * j;
          v[g][0] = epilogue_value<TB>(p, bias, acc[4 * j + 2 * h], r, c);
          v[g][1] = epilogue_value<TB>(p, bias, acc[4 * j + 2 * h + 1], r, c + 1);
        }
#pragma unroll
        for (int g = 0; g < kGroup; ++g) store_pair<TO>(orow + c_base + 8 * (j0 + g), v[g][0], v[g][1]);
      }
    }
    return;
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t r = r_base + 8 * h;
    if (r >= p.m) continue;
    TO* orow = out + r * p.out_row_stride;
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      const int64_t c = c_base + 8 * j;
      if (c >= p.n) continue;
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) v[e] = epilogue_value_edge<TB>(p, bias, acc[4 * j + 2 * h + e], r, c + e);
      if (p.out_pairs && c + 1 < p.n) {
        store_pair<TO>(orow + c, v[0], v[1]);
      } else {
        orow[c] = from_float<TO>(v[0]);
        if (c + 1 < p.n) orow[c + 1] = from_float<TO>(v[1]);
      }
    }
  }
}

template <class TO, int BN>
__device__ __forceinline__ void store_warp_rows_typed(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                                      int64_t r_base, int64_t c_base) {
  TO* out = static_cast<TO*>(p.out) + int64_t(bz) * p.out_batch_stride;
  const char* bias = bias_base(p, bz);
  with_bias_type(p, bias, [&](auto tag) {
    store_warp_rows_body<TO, BN, typename decltype(tag)::type>(p, acc, out, bias, r_base, c_base);
  });
}

// One warp's m16 x BN fragment whose first row is row0 and first column col0.
template <int BN>
__device__ __forceinline__ void store_warp_rows(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                                int64_t row0, int64_t col0) {
  const int l = threadIdx.x % 32;
  const int64_t r_base = row0 + l / 4, c_base = col0 + (l % 4) * 2;
  switch (p.out_dtype) {
    case SB_F32: store_warp_rows_typed<float, BN>(p, acc, bz, r_base, c_base); break;
    case SB_F16: store_warp_rows_typed<__half, BN>(p, acc, bz, r_base, c_base); break;
    default: store_warp_rows_typed<__nv_bfloat16, BN>(p, acc, bz, r_base, c_base); break;
  }
}

// A warpgroup's wgmma m64nNk16 fragment: warp w = (thread % 128) / 32 holds
// rows row0 + 16w .. + 15.
template <int BN>
__device__ __forceinline__ void store_tile(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                           int64_t row0, int64_t col0) {
  store_warp_rows<BN>(p, acc, bz, row0 + ((threadIdx.x % 128) / 32) * 16, col0);
}

// The lean kernels' direct epilogue (entries without kTmaStore): no bias,
// out dtype TO fixed at compile time; store_warp_rows' / store_tile's code
// for that case alone.
template <class TO, int BN>
__device__ __forceinline__ void store_warp_rows_lean(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                                     int64_t row0, int64_t col0) {
  const int l = threadIdx.x % 32;
  TO* out = static_cast<TO*>(p.out) + int64_t(bz) * p.out_batch_stride;
  store_warp_rows_body<TO, BN, void>(p, acc, out, nullptr, row0 + l / 4, col0 + (l % 4) * 2);
}
template <class TO, int BN>
__device__ __forceinline__ void store_tile_lean(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                                int64_t row0, int64_t col0) {
  store_warp_rows_lean<TO, BN>(p, acc, bz, row0 + ((threadIdx.x % 128) / 32) * 16, col0);
}

// ---- the staged epilogue (TileConfig::kTmaStore; p.out_tma) ----------------
// A consumer warpgroup's m64 x WN fragment (rows row0 .., columns col0 ..)
// stored through shared memory: for each block of 64 columns, every thread
// writes its values (the direct epilogue's, epilogue_value) as 16-bit pairs
// into buffer `chunk % 2` of `buf` (64 rows x 128 bytes, the TMA's 128-byte
// swizzle: 16-byte unit u of row r at unit u ^ (r % 8)), then thread 0 of
// the warpgroup stores the block with one TMA tile store (p.tma_c, 64 x 64
// boxes); the TMA writes only the elements inside (m, n). Before a buffer is
// rewritten, thread 0 waits until the store that read it two blocks ago has
// done reading (its group is at most the second newest). `bar_id` is the
// warpgroup's named barrier; `chunk` counts this warpgroup's blocks.
// WN = 64 q + r, 0 < r < 64 (128x96, 128x160, 128x224, 192x192: r = 32;
// 128x168: r = 40): the last r columns are staged as one more block of 64
// rows x r columns and stored through p.tma_c_rem (where the host could
// encode it, p.out_tma_rem; otherwise they go straight from the
// accumulators, the same epilogue_value). kRemTma: the caller guarantees
// p.out_tma_rem, and the direct fallback is not compiled in (the lean
// kernels, gemm_kernel_sm90_tma_wgmma.cuh).
template <class TO, int WN, class TB, bool kRemTma = false>
__device__ __forceinline__ void store_tile_staged_body(const GemmTmaParams& p, const float (&acc)[WN / 2], int bz,
                                                       const char* bias, int64_t row0, int64_t col0, uint8_t* buf,
                                                       int bar_id, uint32_t& chunk) {
  const int t = threadIdx.x % 128, l = t % 32;
  const bool leader = t == 0;
  const int rw = (t / 32) * 16 + l / 4;  // this thread's first row in the fragment (and rw + 8)
  const int cq = (l % 4) * 2;            // its first column in each 8-column unit
  static_assert(kEpiBlock == 64 && WN % 8 == 0, "a block row is one 128-byte swizzle row of 8 units");
  // One block of kUnits 8-column units from unit j0 of the fragment: the
  // values first (the bias loads all in flight together, and ahead of the
  // wait for the buffer), then the shared-memory stores at `offset(r, u)`,
  // then one TMA store through `map` at column c. Interior: the whole
  // block inside the output, no per-element test (without a bias no element
  // has one); one straight-line loop per case, no branch between the loads.
  auto block = [&](auto units_tag, int j0, const CUtensorMap* map, int64_t c, auto offset) {
    constexpr int kUnits = decltype(units_tag)::value;
    uint8_t* b = buf + (chunk & 1) * (kEpiBlock * kEpiBlock * 2);  // block i of the warpgroup: buffer i % 2
    ++chunk;
    const bool interior = std::is_void_v<TB> || (row0 + 64 <= p.m && c + 8 * kUnits <= p.n);
    uint32_t packed[kUnits][2];
    auto values = [&](auto interior_tag) {
#pragma unroll
      for (int u = 0; u < kUnits; ++u) {  // 8-column unit of the block = 16-byte unit of the row
        const int j = j0 + u;             // 8-column group of the fragment (acc registers 4j .. 4j + 3)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t gr = row0 + rw + 8 * h, gc = col0 + 8 * j + cq;
          const float a0 = acc[4 * j + 2 * h], a1 = acc[4 * j + 2 * h + 1];
          if constexpr (decltype(interior_tag)::value)
            packed[u][h] = pack_pair<TO>(epilogue_value<TB>(p, bias, a0, gr, gc), epilogue_value<TB>(p, bias, a1, gr, gc + 1));
          else
            packed[u][h] = pack_pair<TO>(epilogue_value_edge<TB>(p, bias, a0, gr, gc),
                                         epilogue_value_edge<TB>(p, bias, a1, gr, gc + 1));
        }
      }
    };
    if (interior)
      values(std::true_type{});
    else
      values(std::false_type{});
    if (leader) bulk_wait_read<1>();
    named_bar_sync(bar_id, 128);  // buffer b free for every thread of the warpgroup
#pragma unroll
    for (int u = 0; u < kUnits; ++u)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = rw + 8 * h;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(smem_addr(b + offset(r, u) + cq * 2)), "r"(packed[u][h]) : "memory");
      }
    fence_async_smem();
    named_bar_sync(bar_id, 128);  // block written
    if (leader) {
      tma_store_3d(map, b, int32_t(c), int32_t(row0), bz);
      bulk_commit();
    }
  };
  constexpr int kWhole = WN / kEpiBlock;
#pragma unroll
  for (int w = 0; w < kWhole; ++w)  // 64 x 64 blocks, 128-byte swizzle: unit u of row r at u ^ (r % 8)
    block(std::integral_constant<int, 8>{}, w * 8, &p.tma_c, col0 + kEpiBlock * w,
          [](int r, int u) { return uint32_t(r * 128 + ((u ^ (r & 7)) << 4)); });
  if constexpr (WN % kEpiBlock != 0) {  // the last WN % 64 columns
    constexpr int kRem = WN % kEpiBlock, j0 = WN / kEpiBlock * 8;
    if (kRemTma || p.out_tma_rem) {  // one narrower TMA store (p.tma_c_rem: 64 rows x kRem columns)
      if constexpr (kRem == 32)  // 64-byte rows, 64-byte swizzle: unit u of row r at u ^ ((r / 2) % 4)
        block(std::integral_constant<int, 4>{}, j0, &p.tma_c_rem, col0 + WN - kRem,
              [](int r, int u) { return uint32_t(r * 64 + ((u ^ ((r >> 1) & 3)) << 4)); });
      else  // rows of kRem * 2 bytes, unswizzled
        block(std::integral_constant<int, kRem / 8>{}, j0, &p.tma_c_rem, col0 + WN - kRem,
              [](int r, int u) { return uint32_t(r * kRem * 2 + (u << 4)); });
    } else if constexpr (!kRemTma) {  // through the direct epilogue's store
      TO* out = static_cast<TO*>(p.out) + int64_t(bz) * p.out_batch_stride;
      store_warp_rows_body<TO, WN, TB, j0, WN / 8>(p, acc, out, bias, row0 + rw, col0 + cq);
    }
  }
}

template <class TO, int WN>
__device__ __forceinline__ void store_tile_staged_typed(const GemmTmaParams& p, const float (&acc)[WN / 2], int bz,
                                                        int64_t row0, int64_t col0, uint8_t* buf, int bar_id,
                                                        uint32_t& chunk) {
  const char* bias = bias_base(p, bz);
  with_bias_type(p, bias, [&](auto tag) {
    store_tile_staged_body<TO, WN, typename decltype(tag)::type>(p, acc, bz, bias, row0, col0, buf, bar_id, chunk);
  });
}

template <int WN>
__device__ __forceinline__ void store_tile_staged(const GemmTmaParams& p, const float (&acc)[WN / 2], int bz,
                                                  int64_t row0, int64_t col0, uint8_t* buf, int bar_id,
                                                  uint32_t& chunk) {
  if (p.out_dtype == SB_F16)
    store_tile_staged_typed<__half, WN>(p, acc, bz, row0, col0, buf, bar_id, chunk);
  else
    store_tile_staged_typed<__nv_bfloat16, WN>(p, acc, bz, row0, col0, buf, bar_id, chunk);
}

// The lean kernels' epilogue: staged, no bias, out dtype TO fixed at
// compile time, the remainder columns by their own TMA store. The same
// store_tile_staged_body (so the same values, bit for bit) with every other
// case left out of the kernel's code.
template <class TO, int WN>
__device__ __forceinline__ void store_tile_staged_lean(const GemmTmaParams& p, const float (&acc)[WN / 2], int bz,
                                                       int64_t row0, int64_t col0, uint8_t* buf, int bar_id,
                                                       uint32_t& chunk) {
  store_tile_staged_body<TO, WN, void, true>(p, acc, bz, nullptr, row0, col0, buf, bar_id, chunk);
}

}  // namespace samebits::cuda::dense::sm90
