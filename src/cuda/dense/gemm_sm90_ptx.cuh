// sm_90a primitives of the dense GEMM: mbarriers, TMA tile loads, wgmma
// fences and shared-memory matrix descriptors, as thin inline-PTX wrappers.
#pragma once

#include <cuda.h>  // CUtensorMap (type only; the library does not link libcuda)

#include <cstdint>

namespace samebits::cuda::dense::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarriers ------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialisations visible to the async proxy (TMA) before first use.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_at(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) { mbar_arrive_at(smem_addr(bar)); }
// Arrives and adds `bytes` to the transaction count the phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx_at(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Spins until the phase of parity `parity` of the mbarrier at shared
// address `bar` has completed.
__device__ __forceinline__ void mbar_wait_at(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) { mbar_wait_at(smem_addr(bar), parity); }

// ---- TMA --------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// 3-D tile load (x = k, y = row, z = batch) into shared memory at `dst`;
// completes `bytes of the box` on the mbarrier at `bar` (shared addresses).
// Out-of-range elements are filled with zeros.
__device__ __forceinline__ void tma_load_3d_at(uint32_t dst, const CUtensorMap* map, uint32_t bar, int32_t x,
                                               int32_t y, int32_t z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(x), "r"(y), "r"(z)
      : "memory");
}

// Multicast variant: the box lands at the same shared-memory offset `dst` in
// every CTA of the cluster named in `cta_mask` (bit r = cluster rank r), and
// completes its bytes on the mbarrier at offset `bar` of each of those CTAs.
__device__ __forceinline__ void tma_load_3d_multicast_at(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                                         int32_t x, int32_t y, int32_t z, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(x), "r"(y), "r"(z), "h"(cta_mask)
      : "memory");
}

// 3-D tile store (x = column, y = row, z = batch) from shared memory, in
// the bulk async-group of the issuing thread. Elements of the box outside the
// tensor are not written. The shared-memory source may be reused once
// bulk_wait_read has seen the group complete its reads.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int32_t x, int32_t y,
                                             int32_t z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_addr(src)), "r"(x), "r"(y), "r"(z)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// At most N of this thread's bulk groups still read shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// At most N of this thread's bulk groups are incomplete (their writes included).
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy (TMA) reads of them.
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Named barrier `id` (1..15) of `count` threads (a multiple of 32).
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// ---- thread-block clusters ------------------------------------------------
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster arrives, then waits for all:
// release / acquire at cluster scope (barrier inits, shared memory a peer
// still writes or arrives on).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// Arrives on the mbarrier at the offset of `bar` in the shared memory of
// cluster CTA `cta_rank` (which may be this CTA).
// Default semantics (.release, .cta scope), NOT .release.cluster: ptxas
// lowers a cluster-scope release to MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR in
// front of the arrive, which waits for every outstanding global store of the
// warp (the epilogue's) and costs about a microsecond. In the GEMM ring this
// arrive runs once per k tile per consumer warp and per cluster CTA, on the
// consumers' critical path, so the cluster entries ran at ~1.5 us per k tile
// whatever the tile size. Nothing needs the cluster-scope release: what the
// arrive publishes is "this warp's wgmma's no longer read stage s", and those
// reads (async proxy) are complete at wgmma.wait_group, before the arrive; the
// peer's TMA write into the stage is ordered after the barrier phase it waits
// on. (The same form as CUTLASS's ClusterBarrier::arrive(cta_id, pred).)
__device__ __forceinline__ void mbar_arrive_cluster_at(uint32_t bar, uint32_t cta_rank) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta_rank)
      : "memory");
}

// ---- wgmma ----------------------------------------------------------------
// ---- warp-level tensor-core steps (the small-M entries) ---------------------
// Four 8x8 16-bit matrices from shared memory: lanes 8i .. 8i+7 give the row
// addresses of matrix i (16 bytes each); register i of lane l holds elements
// 2 (l % 4), +1 of row l / 4 of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t smem_byte_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_byte_addr)
               : "memory");
}
// One k16 step of one warp: c (16 x 8, f32) += a (16 x 16, row) * b (16 x 8,
// col), bf16 or fp16 operands. Fragments (g = lane / 4, t = lane % 4):
// a = {A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]},
// b = {B[2t..][g], B[2t+8..][g]}, c = {C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]}.
template <bool kF16>
__device__ __forceinline__ void mma_m16n8k16(float* c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across the async
// wgmma region (the registers are in flight between issue and wait).
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor of a K-major tile written by TMA with the
// 128-byte swizzle: rows of 64 16-bit elements (128 bytes), 8-row swizzle
// atoms 1024 bytes apart (stride byte offset), tile base 1024-byte aligned.
// The k16 slice j of the 64-wide k tile starts 32*j bytes into the row.
// The descriptor as two 32-bit words: the low word holds the start address
// (bits 0-13, address / 16) and the leading byte offset (bits 16-29, 1:
// unused with swizzle); the high word the stride byte offset (bits 32-45:
// 1024 / 16) and the layout (bits 62-63: 1 = 128-byte swizzle). Offsets
// into the tile (a k16 slice, a 64-row fragment, a stage) are added to the
// low word in units of 16 bytes: shared addresses stay below 256 KiB, so
// the start address never carries into the leading byte offset.
constexpr uint32_t kDescSw128Hi = (1024u >> 4) | (1u << 30);
__device__ __forceinline__ uint32_t desc_k_major_sw128_lo(uint32_t smem_byte_addr) {
  return ((smem_byte_addr & 0x3FFFF) >> 4) | (1u << 16);
}
__device__ __forceinline__ uint64_t desc_sw128(uint32_t lo) { return (uint64_t(kDescSw128Hi) << 32) | lo; }

// ---- register budget ------------------------------------------------------
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

}  // namespace samebits::cuda::dense::sm90
