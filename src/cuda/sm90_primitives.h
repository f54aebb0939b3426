// sm90 building blocks shared by the Hopper kernels: mbarriers, the bulk
// tensor copy engine (TMA), wgmma fences and shared-memory descriptors,
// named barriers and register reallocation. Thin wrappers over PTX, one
// instruction each, so that the kernels read as a sequence of named steps.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace samebits::cuda::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---------------------------------------------------------------- mbarrier
// A phase completes when `count` arrivals and all expected transaction bytes
// have landed. Waiters name the parity of the phase they wait for.

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes the initialised barriers visible to the async proxy (TMA).
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar))
               : "memory");
}

// One arrival that also announces `bytes` of TMA traffic for this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// Announces `bytes` of TMA traffic for the current phase without arriving
// (the arrivals come from elsewhere, e.g. cp_async_mbar_arrive_noinc).
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// One arrival on `bar` once every cp.async this thread has issued so far
// has landed (asynchronous: the thread does not wait). The arrival counts
// toward the barrier's expected count (.noinc).
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar))
               : "memory");
}

// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// ---------------------------------------------------------------- TMA
// 2D tiles out of a 4D tensor map (dim, row, head, batch); the transfer
// completes on `bar` as transaction bytes.
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(smem_addr(bar))
      : "memory");
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy reads (wgmma, TMA) that a barrier hands them to.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---------------------------------------------------------------- barriers
// Named barrier `id` over `threads` threads (a multiple of 32). Id 0 is
// __syncthreads.
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Arrives at named barrier `id` without waiting (the other side syncs).
__device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---------------------------------------------------------------- clusters
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// This CTA's shared-memory address `a` as seen in cluster CTA `rank`.
__device__ __forceinline__ uint32_t map_to_rank(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
// Every thread of every CTA of the cluster arrives (warp-converged: the
// .aligned forms). The default arrive releases this thread's prior memory
// operations and the wait acquires those of every arrival it waited for;
// the relaxed arrive orders nothing.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }
// Two f32 at `a`, a shared-memory address of any CTA of the cluster
// (map_to_rank).
__device__ __forceinline__ float2 ld_shared_cluster_f32x2(uint32_t a) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a) : "memory");
  return v;
}

// ---------------------------------------------------------------- registers
template <uint32_t kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <uint32_t kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// ---------------------------------------------------------------- wgmma
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accumulator reads/writes across a wgmma
// wait: the registers are tied to an empty asm statement.
__device__ __forceinline__ void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// Same for a register operand that an in-flight wgmma still reads: fencing
// it after the wait keeps it alive (and unchanged) until then.
__device__ __forceinline__ void reg_fence(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

// Shared-memory matrix descriptor for the 128-byte swizzle layout that TMA
// writes with CU_TENSOR_MAP_SWIZZLE_128B: rows of 128 bytes (64 16-bit
// elements), 8-row atoms of 1024 bytes, atoms 1024-byte aligned.
//  - lbo: byte distance between 64-element column chunks (only read when an
//    operand is MN-major and wider than one chunk),
//  - sbo: byte distance between 8-row atoms (1024 for a dense tile).
// The descriptor below as its two 32-bit words. Offsets into a tile (a k16
// step, a chunk) are added to the low word in 16-byte units: the start
// address field never reaches bit 16 (shared memory ends below 256 KiB), so
// the sum is the 64-bit descriptor's, and kernels whose base addresses are
// warp-uniform keep the descriptors in uniform registers instead of
// building 64-bit values per wgmma.
__device__ __forceinline__ uint32_t smem_desc_sw128_lo(uint32_t addr, uint32_t lbo) {
  return ((addr & 0x3FFFF) >> 4) | (((lbo & 0x3FFFF) >> 4) << 16);
}
__device__ __forceinline__ uint64_t smem_desc_sw128_at(uint32_t lo, uint32_t sbo) {
  return (static_cast<uint64_t>(((sbo & 0x3FFFF) >> 4) | (1u << 30)) << 32) | lo;  // 1 << 62: 128-byte swizzle
}
__device__ __forceinline__ uint64_t make_smem_desc_sw128(uint32_t addr, uint32_t lbo,
                                                         uint32_t sbo) {
  return smem_desc_sw128_at(smem_desc_sw128_lo(addr, lbo), sbo);
}

// ---------------------------------------------------------------- mma.sync
// Four 8x8 16-bit matrices from shared memory: lanes 8i .. 8i+7 give the
// row addresses (16 bytes each) of matrix i; register i of lane l holds
// elements 2 (l % 4), +1 of row l / 4 of matrix i (.trans: elements
// (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4), i.e. the matrix read by
// columns).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr)
               : "memory");
}
// One k16 step of one warp: c (16 x 8, f32) += a (16 x 16) * b (16 x 8).
// Fragments (g = lane / 4, t = lane % 4): a = {A[g][2t..], A[g+8][2t..],
// A[g][2t+8..], A[g+8][2t+8..]}, b = {B[2t..][g], B[2t+8..][g]},
// c = {C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]}. Its f32 result is
// a wgmma k16 step's, bit for bit (docs/numerics_dense.md).
template <bool kBf16>
__device__ __forceinline__ void mma_m16n8k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// ---------------------------------------------------------------- cp.async
// 16 bytes global -> shared; valid = false writes 16 zero bytes and reads
// nothing (the source address must still be a valid one).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  const uint32_t n = valid ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
               "r"(n)
               : "memory");
}
// Closes this thread's group of cp.async copies; waits until at most
// kPending of its groups are still in flight.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Issues the loads of a kRows x kD tile (16-bit elements) into the
// swizzled chunk layout: element (r, c) lives in chunk c / 64 at row r,
// 16-byte unit ((c % 64) / 8) ^ (r % 8) — what TMA writes with
// CU_TENSOR_MAP_SWIZZLE_128B and 64-column boxes. Rows >= valid_rows are
// zero. `src` points at row 0 (any address when valid_rows <= 0).
// kThreads threads take part, every unit in flight at once (the hand load
// of a sequence's partial last tile in the forward and the backward too,
// with kThreads = 32); the caller commits, waits, fences toward the async
// proxy and synchronizes.
template <int kRows, int kD, int kThreads>
__device__ __forceinline__ void load_tile(uint8_t* dst, const void* src_bytes, int64_t row_stride,
                                          int valid_rows, int tid) {
  const uint16_t* src = static_cast<const uint16_t*>(src_bytes);
  constexpr int kUnitsPerRow = kD / 8;
  constexpr int kRowBytes = 128;
  static_assert((kRows * kUnitsPerRow) % kThreads == 0, "whole rounds of 16-byte units");
#pragma unroll 4
  for (int it = 0; it < kRows * kUnitsPerRow / kThreads; ++it) {
    const int idx = tid + it * kThreads;
    const int r = idx / kUnitsPerRow;
    const int unit = idx % kUnitsPerRow;
    const bool valid = r < valid_rows;
    const uint16_t* s = valid ? src + r * row_stride + unit * 8 : src;
    uint8_t* chunk = dst + (unit / 8) * (kRows * kRowBytes);
    cp_async_16(chunk + r * kRowBytes + (((unit % 8) ^ (r % 8)) << 4), s, valid);
  }
}

// Rows [from, kRows) of a kRows x kD tile in the layout above set to zero
// by kThreads threads (whole 128-byte rows of every chunk, so the swizzle
// does not matter). After a TMA that read a packed batch's neighbour rows
// into them: the caller waited for that TMA and fences toward the async
// proxy before it signals the tile.
template <int kRows, int kD, int kThreads>
__device__ __forceinline__ void zero_tile_rows(uint8_t* dst, int from, int tid) {
  constexpr int kUnitsPerRow = kD / 8;
  const int n = (kRows - from) * kUnitsPerRow;
  for (int idx = tid; idx < n; idx += kThreads) {
    const int r = from + idx / kUnitsPerRow, unit = idx % kUnitsPerRow;
    *reinterpret_cast<uint4*>(dst + (unit / 8) * (kRows * 128) + r * 128 + (unit % 8) * 16) =
        make_uint4(0u, 0u, 0u, 0u);
  }
}

// ---------------------------------------------------------------- math
// Fixed-precision helpers: the numerics contract names every rounding, so
// these are never contracted into FMAs or replaced by approximations the
// compiler picks.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float log2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// Two f32 values rounded to nearest even into one bf16x2 / half2 word (lo
// in the low half): how every kernel rounds P and its outputs.
template <bool kBf16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (kBf16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

}  // namespace samebits::cuda::sm90
