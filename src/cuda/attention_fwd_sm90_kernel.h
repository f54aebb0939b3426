// sm90 attention forward kernel: one persistent CTA per SM, warp-specialized.
//   warpgroup 0                 producer: warp 0 issues TMA / hand loads, 64 registers
//   warpgroups 1..kConsumerWGs  consumers, 64 query rows each
// Every role walks the same work items (TileScheduler); see the mainloop
// header for the barrier protocol.
#pragma once

#include "cuda/attention_fwd_sm90_epilogue.h"
#include "cuda/attention_fwd_sm90_mainloop.h"

namespace samebits::cuda::sm90 {

// Ping-pong between the two consumer warpgroups (FREE: order of issue only).
// Each issue point of warpgroup w waits at named barrier kSchedBar + w until
// the other warpgroup has issued its wgmmas, issues its own, then lets the
// other go: one warpgroup's softmax runs while the other's wgmmas occupy the
// tensor cores. Warpgroup 1 arrives once first so warpgroup 0 starts; the
// one arrival left over at the end is consumed by warpgroup 0.
template <class Cfg>
struct IssueScheduler {
  static constexpr uint32_t kSchedBar = 2;  // named barriers 2, 3
  static constexpr bool kOn = Cfg::kConsumerWarpgroups == 2;
  int wg;
  __device__ void start() const {
    if (kOn && wg == 1) named_barrier_arrive(kSchedBar + 0, 256);
  }
  __device__ void wait_turn() const {
    if (kOn) named_barrier_sync(kSchedBar + wg, 256);
  }
  __device__ void pass_turn() const {
    if (kOn) named_barrier_arrive(kSchedBar + (1 - wg), 256);
  }
  __device__ void finish() const {
    if (kOn && wg == 0) named_barrier_sync(kSchedBar + 0, 256);
  }
};

template <class Cfg>
__device__ void consumer_run(const AttentionFwdParams& p, const SharedStorage<Cfg>& smem, int wg) {
  using C = Consumer<Cfg>;
  const int tid = threadIdx.x % 128;  // thread in the warpgroup
  const int warp = tid / 32, lane = tid % 32;
  const int q4 = lane % 4;
  // Row (inside the CTA's tile) of this thread's first accumulator row.
  const int tile_row = wg * 64 + warp * 16 + lane / 4;
  const uint32_t q_addr = smem_addr(smem.q()) + wg * 64 * Cfg::kRowBytes;
  float* fold_smem = smem.fold(wg);
  const ScoreMod score(p);
  const IssueScheduler<Cfg> turn{wg};
  turn.start();

  TileScheduler<Cfg::kBlockM> sched(p);
  WorkItem w;
  uint32_t tile_iter = 0, block_iter = 0;
  for (; sched.next(w); ++tile_iter) {
    const Visibility vis{w.lq, w.lk, p.window_left, p.window_right};
    const BlockRange<Cfg> range(w, vis);
    const int row_base = range.m0 + tile_row;  // row in the sequence

    SplitState<Cfg> st;
    st.reset();
    FoldState<Cfg> fold;
    fold.reset();

    mbar_wait(smem.q_full(), tile_iter & 1);
    if (range.n_hi < range.n_lo) {
      if (lane == 0) mbar_arrive(smem.q_empty());
    } else {
      // Steady state, block n (stage s), with P_{n-1} of the previous block
      // in registers:
      //   issue  S_n = Q K_n^T                 (wgmma group 1)
      //   issue  O += P_{n-1} V_{n-1}          (wgmma group 2)
      //   wait group 1, release K_n; softmax of S_n -> P_n, alpha_n
      //     (runs while group 2 is on the tensor cores)
      //   wait group 2, release V_{n-1}; O *= alpha_n (or fold at a split)
      // which is the contract's order: O = O * alpha_n + P_n V_n, block by
      // block, with the softmax overlapping the P V product.
      float sacc[C::kSRegs];
      uint32_t pf[Cfg::kBlockN / 16][4];
      float alpha[2];
      int n = range.n_lo;
      int s = block_iter % Cfg::kStages;
      uint32_t parity = (block_iter / Cfg::kStages) & 1;
      // prologue: gemm Q * K_lo -> S, softmax -> P_lo
      mbar_wait(smem.k_full(s), parity);
      turn.wait_turn();
      C::issue_qk(sacc, q_addr, smem_addr(smem.k(s)));
      turn.pass_turn();
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < C::kSRegs; ++i) reg_fence(sacc[i]);
      if (lane == 0) mbar_arrive(smem.k_empty(s));  // release K_lo
      if (n == range.n_hi && lane == 0) mbar_arrive(smem.q_empty());  // release Q
      {
        const int k0 = n * Cfg::kBlockN;
        const bool masked = !vis.block_fully_visible(range.m0, range.m_last, k0, Cfg::kBlockN);
        C::softmax_update(sacc, st.m, st.l, alpha, score, vis, masked, row_base, k0, q4);
        // acc is zero here: alpha_lo scales nothing
        C::pack_p(sacc, pf);
      }
#pragma unroll
      for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) reg_fence(pf[kk][r]);
#pragma unroll
      for (int i = 0; i < Cfg::kHeadDim / 2; ++i) reg_fence(st.acc[i]);
      for (++n; n <= range.n_hi; ++n) {
        const int s_prev = s;
        const uint32_t parity_prev = parity;
        ++block_iter;
        s = block_iter % Cfg::kStages;
        parity = (block_iter / Cfg::kStages) & 1;
        const int k0 = n * Cfg::kBlockN;

        // gemm Q * K_n -> S (group 1), gemm P_{n-1} * V_{n-1} -> O (group 2)
        mbar_wait(smem.k_full(s), parity);
        mbar_wait(smem.v_full(s_prev), parity_prev);
        turn.wait_turn();
        C::issue_qk(sacc, q_addr, smem_addr(smem.k(s)));
        C::issue_pv(st.acc, pf, smem_addr(smem.v(s_prev)));
        turn.pass_turn();
        wgmma_wait<1>();
#pragma unroll
        for (int i = 0; i < C::kSRegs; ++i) reg_fence(sacc[i]);
        if (lane == 0) mbar_arrive(smem.k_empty(s));  // release K_n
        if (n == range.n_hi && lane == 0) mbar_arrive(smem.q_empty());  // release Q

        // A new split starts at every multiple of S keys (numerics.md
        // "Online softmax inside one split"): S_n starts from a fresh
        // state; the finished split is folded once its last P V is in.
        const bool new_split = k0 % Cfg::kSplit == 0;
        float m_old[2], l_old[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          m_old[h] = st.m[h];
          l_old[h] = st.l[h];
          if (new_split) {
            st.m[h] = -CUDART_INF_F;
            st.l[h] = 0.f;
          }
        }
        // P_n stays f32 in sacc until group 2 (which reads P_{n-1}) is done.
        const bool masked = !vis.block_fully_visible(range.m0, range.m_last, k0, Cfg::kBlockN);
        C::softmax_update(sacc, st.m, st.l, alpha, score, vis, masked, row_base, k0, q4);

        // Wait for group 2 (O += P_{n-1} V_{n-1}), then release V_{n-1}.
        // The wait sits inside both arms of the split branch on purpose:
        // ptxas schedules a wgmma wait to the top of its basic block, so a
        // wait in the softmax's block would run before the softmax and
        // serialize it behind P V (seen in the SASS: every MUFU.EX2 after
        // WARPGROUP.DEPBAR gsb0 0x0). The branch ends the softmax's block,
        // so the softmax overlaps P V.
        auto finish_pv = [&]() {
          wgmma_wait<0>();
#pragma unroll
          for (int i = 0; i < Cfg::kHeadDim / 2; ++i) reg_fence(st.acc[i]);
#pragma unroll
          for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r) reg_fence(pf[kk][r]);  // P_{n-1} was read until here
          if (lane == 0) mbar_arrive(smem.v_empty(s_prev));  // release V_{n-1}
        };
        if (new_split) {
          finish_pv();
          fold.fold(m_old, l_old, st.acc, fold_smem, tid);
#pragma unroll
          for (int i = 0; i < Cfg::kHeadDim / 2; ++i) st.acc[i] = 0.f;
        } else {
          finish_pv();
          C::rescale(st.acc, alpha);
        }
        C::pack_p(sacc, pf);
        // Pin the new O and P here: wgmma operands must not be written
        // between the next iteration's wgmmas (they would serialize).
#pragma unroll
        for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk)
#pragma unroll
          for (int r = 0; r < 4; ++r) reg_fence(pf[kk][r]);
#pragma unroll
        for (int i = 0; i < Cfg::kHeadDim / 2; ++i) reg_fence(st.acc[i]);
      }
      // epilogue of the mainloop: gemm P_hi * V_hi -> O
      mbar_wait(smem.v_full(s), parity);
      turn.wait_turn();
      C::issue_pv(st.acc, pf, smem_addr(smem.v(s)));
      turn.pass_turn();
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < Cfg::kHeadDim / 2; ++i) reg_fence(st.acc[i]);
#pragma unroll
      for (int kk = 0; kk < Cfg::kBlockN / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) reg_fence(pf[kk][r]);
      if (lane == 0) mbar_arrive(smem.v_empty(s));  // release V_hi
      ++block_iter;
    }

    fold.finish(st, fold_smem, tid);
    write_output<Cfg>(p, w, st, row_base, q4);
  }
  turn.finish();
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    attention_fwd_sm90_kernel(const __grid_constant__ AttentionFwdParams p) {
  extern __shared__ uint8_t smem_raw[];
  // Swizzle atoms need 1024-byte alignment; kSmemBytes reserves the slack.
  const uint32_t raw = smem_addr(smem_raw);
  const SharedStorage<Cfg> smem{smem_raw + ((1024 - (raw % 1024)) % 1024)};
  // Warpgroup index, made warp-uniform for the compiler (shuffled from lane
  // 0) so role branches and shared-memory descriptors use uniform registers.
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);

  if (threadIdx.x == 0) {
    mbar_init(smem.q_full(), 1);
    mbar_init(smem.q_empty(), 4 * Cfg::kConsumerWarpgroups);
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(smem.k_full(s), 1);
      mbar_init(smem.v_full(s), 1);
      mbar_init(smem.k_empty(s), 4 * Cfg::kConsumerWarpgroups);
      mbar_init(smem.v_empty(s), 4 * Cfg::kConsumerWarpgroups);
    }
    mbar_init(smem.tail(), 1);
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    if constexpr (Cfg::kConsumerWarpgroups == 2) setmaxnreg_dec<Cfg::kProducerRegs>();
    // One producer warp; the other three leave so they take no issue slots.
    if (threadIdx.x / 32 == 0) Producer<Cfg>::run(p, smem);
  } else {
    if constexpr (Cfg::kConsumerWarpgroups == 2) setmaxnreg_inc<Cfg::kConsumerRegs>();
    consumer_run<Cfg>(p, smem, wg - 1);
  }
}

}  // namespace samebits::cuda::sm90
