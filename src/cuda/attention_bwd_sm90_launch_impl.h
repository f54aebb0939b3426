// Body of the per-configuration launcher of the sm90 attention backward;
// included only by the attention_bwd_sm90_hdim<D>_<dtype>.cu files, each
// instantiating one Cfg. Three kernels on one stream, in this order (each
// reads what the previous one wrote; stream order is the only sync):
//   1. preprocess: D_i into dq's rows            (attention_bwd_sm90_dq.h)
//   2. dK, dV                                   (attention_bwd_sm90_dkdv.h)
//   3. dQ, overwriting D                        (attention_bwd_sm90_dq.h;
//      with SAMEBITS_BWD_TMA the v3 kernel of attention_bwd_sm90_dq_tma.h)
// The fused configuration (BwdFusedConfig, SAMEBITS_BWD_FUSED) runs the
// preprocess, a zero fill of its workspace, the fused dK/dV/dQ kernel and
// the dq conversion instead (launch_attention_bwd_fused).
#pragma once

#include <string>

#include "core/backend.h"
#include "cuda/attention_bwd_sm90_dkdv.h"
#include "cuda/attention_bwd_sm90_dq.h"
#include "cuda/attention_bwd_sm90_launch.h"
#include "cuda/kernel_attributes.h"
#if SAMEBITS_BWD_TMA
#include <cstdlib>

#include "cuda/attention_bwd_sm90_dq_tma.h"
#endif
#if SAMEBITS_BWD_TMA && SAMEBITS_BWD_TMA_DKDV
#include "cuda/attention_bwd_sm90_dkdv_tma.h"
#include "cuda/attention_bwd_sm90_fused.h"
#endif

namespace samebits::cuda::sm90 {

namespace bwd_detail {
inline long grid_of(long units, int per_sm, const BwdLaunchShape& shape) {
  long grid = units >= 0 ? units : static_cast<long>(shape.num_sms) * per_sm;
  if (shape.max_ctas > 0 && shape.max_ctas < grid) grid = shape.max_ctas;
  return grid;
}
#if SAMEBITS_BWD_TMA
// SAMEBITS_BWD_TMA_STRICT=1 (tests): a v3 kernel whose tensor maps cannot
// be encoded is an error instead of a silent fall back to v2, so a test run
// cannot pass on v2's kernels unnoticed.
inline bool tma_strict() {
  const char* s = std::getenv("SAMEBITS_BWD_TMA_STRICT");
  return s != nullptr && s[0] != '\0' && s[0] != '0';
}
// SAMEBITS_BWD_DKDV_FORM=0/1/2/3 forces the dK/dV kernel's form
// (DkdvTmaKernel::Form) for a raw-form call, and SAMEBITS_BWD_DQ_RAW=0 the
// general dQ kernel: for comparisons of speed and for the test that every
// form gives the same bits (read at every call, so a test can switch).
// -1 (unset): dkdv_form's rule.
inline int bwd_dkdv_form_env() {
  const char* s = std::getenv("SAMEBITS_BWD_DKDV_FORM");
  return s != nullptr && s[0] >= '0' && s[0] <= '3' ? s[0] - '0' : -1;
}
// BwdScore::raw on the host: no softcap and a positive scale, the form
// that has kernels of its own (dkdv_form, the raw-only dQ kernel).
inline bool raw_score(const AttentionBwdParams& p) { return p.has_softcap == 0 && p.scale_log2 > 0.f; }
inline bool bwd_dq_raw_env() {
  const char* s = std::getenv("SAMEBITS_BWD_DQ_RAW");
  return s == nullptr || s[0] != '0';
}
// SAMEBITS_BWD_HELD=0: the chained form where dkdv_form's rule would run
// the held one (DkdvTmaKernel::kRawHeld), for comparisons of speed.
inline bool bwd_held_env() {
  const char* s = std::getenv("SAMEBITS_BWD_HELD");
  return s == nullptr || s[0] != '0';
}
inline sb_status no_maps(const char* pass) {
  return fail(SB_CUDA_ERROR, std::string("attention_bwd_sm90: ") + pass +
                                 ": tensor maps could not be encoded (SAMEBITS_BWD_TMA_STRICT)");
}
#endif
// Kernel's shared-memory opt-in (once per device, kernel_attributes.h).
template <auto Kernel>
sb_status opt_in(int bytes) {
  const cudaError_t err = opt_in_shared_memory<Kernel>(bytes);
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_bwd_sm90: cudaFuncSetAttribute: ") +
                                   cudaGetErrorString(err));
  return SB_OK;
}
#if SAMEBITS_BWD_TMA && SAMEBITS_BWD_TMA_DKDV
// The dK/dV kernel's form for a call (FREE: every form gives the same
// bits): the general kernel for softcap and non-positive scales and where
// no raw form exists (DkdvTmaKernel::kHasRawForms); else the chained form
// where BwdConfig's kChainRaw says so, kRaw otherwise. The chained form
// holds K and V in registers (kRawHeld, where it exists) under a causal
// mask or a window: 1-3.5 % faster there, 1-2 % slower unmasked
// (docs/backward_design.md, "Held K and V").
template <class Cfg>
int dkdv_form(const AttentionBwdParams& p) {
  using K = bwd::DkdvTmaKernel<Cfg>;
  if constexpr (!K::kHasRawForms) return K::kGeneral;
  if (!raw_score(p)) return K::kGeneral;
  if (const int forced = bwd_dkdv_form_env(); forced >= 0)
    return forced == K::kRawHeld && !K::kHasHeldForm ? K::kRawChained : forced;
  if (!Cfg::kChainRaw) return K::kRaw;
  const bool masked = p.window_left >= 0 || p.window_right >= 0;
  return K::kHasHeldForm && masked && bwd_held_env() ? K::kRawHeld : K::kRawChained;
}
#endif
#if SAMEBITS_BWD_TMA
// One TMA-producer kernel (its shared-memory opt-in, then the launch).
template <auto kKernel>
sb_status launch_with_maps(long g, int threads, int smem, const AttentionBwdParams& params,
                           const BwdMaps& maps, cudaStream_t stream) {
  if (sb_status s = opt_in<kKernel>(smem); s != SB_OK) return s;
  kKernel<<<static_cast<unsigned>(g), threads, smem, stream>>>(params, maps);
  return SB_OK;
}
// kRawKernel for a call in the raw score form (`raw`), else kGeneralKernel:
// two instantiations of one kernel that give the same bits.
template <auto kRawKernel, auto kGeneralKernel>
sb_status launch_raw_or_general(bool raw, long g, int threads, int smem, const AttentionBwdParams& params,
                                const BwdMaps& maps, cudaStream_t stream) {
  return raw ? launch_with_maps<kRawKernel>(g, threads, smem, params, maps, stream)
             : launch_with_maps<kGeneralKernel>(g, threads, smem, params, maps, stream);
}
#endif
inline sb_status check(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_bwd_sm90: ") + what + ": " + cudaGetErrorString(err));
  return SB_OK;
}
}  // namespace bwd_detail

#if SAMEBITS_BWD_TMA && SAMEBITS_BWD_TMA_DKDV
// The fused backward (BwdFusedConfig; attention_bwd_sm90_fused.h): the
// preprocess, a zero fill of the workspace (accumulators and counters),
// the fused kernel, and the conversion of the accumulators into dq, in
// stream order. params.dq_accum / dq_sem: the caller's workspace of
// shape.fused_workspace_bytes.
template <class Cfg>
sb_status launch_attention_bwd_fused(const AttentionBwdParams& params, const BwdLaunchShape& shape) {
  using namespace bwd_detail;
  BwdMaps maps;
  if (!make_bwd_maps(params, Cfg::kHeadDim, Cfg::kBf16, Cfg::kBlockM, Cfg::kBlockN, &maps))
    return fail(SB_UNSUPPORTED,
                "attention_bwd_sm90: the fused backward's tensor maps could not be encoded "
                "(a stride TMA does not take)");
  if (long g = grid_of(shape.pre_units, 8, shape); g > 0) {
    bwd::attention_bwd_preprocess_sm90_kernel<Cfg::kHeadDim, Cfg::kBf16>
        <<<static_cast<unsigned>(g), bwd::kPreprocessThreads, 0, shape.stream>>>(params);
    if (sb_status s = check("preprocess launch"); s != SB_OK) return s;
  }
  if (const cudaError_t err =
          cudaMemsetAsync(params.dq_accum, 0, shape.fused_workspace_bytes, shape.stream);
      err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_bwd_sm90: workspace zero fill: ") +
                                   cudaGetErrorString(err));
  if (long g = grid_of(shape.dkdv_units, 1, shape); g > 0) {
    // The raw score form has a kernel of its own (same bits; fewer
    // registers held by the softcap path); SAMEBITS_BWD_DKDV_FORM=0 forces
    // the general one.
    const bool raw = raw_score(params) && bwd_dkdv_form_env() != 0;
    if (sb_status s = launch_raw_or_general<bwd::attention_bwd_fused_sm90_kernel<Cfg, true>,
                                            bwd::attention_bwd_fused_sm90_kernel<Cfg, false>>(
            raw, g, Cfg::kDkdvTmaThreads, Cfg::kDkdvTmaSmemBytes, params, maps, shape.stream);
        s != SB_OK)
      return s;
    if (sb_status s = check("fused launch"); s != SB_OK) return s;
  }
  if (long g = grid_of(shape.pre_units, 8, shape); g > 0) {
    bwd::attention_bwd_dq_convert_sm90_kernel<Cfg::kHeadDim, Cfg::kBf16>
        <<<static_cast<unsigned>(g), 128, 0, shape.stream>>>(params);
    if (sb_status s = check("dq conversion launch"); s != SB_OK) return s;
  }
  return SB_OK;
}
#endif

// The three passes (BwdConfig).
template <class Cfg>
sb_status launch_attention_bwd_passes(const AttentionBwdParams& params, const BwdLaunchShape& shape) {
  using namespace bwd_detail;
  // The tensor maps are encoded before the first launch, so that the three
  // kernels go out back to back: host work between two launches would leave
  // the GPU idle once the preprocess is done (the opt-ins below cost one
  // atomic load after a device's first call).
#if SAMEBITS_BWD_TMA && SAMEBITS_BWD_TMA_DKDV
  // v3 dK/dV: a producer warpgroup; v2's kernel when the maps cannot be
  // encoded (then the dQ pass falls back as well).
  BwdMaps dkdv_maps;
  const bool dkdv_tma =
      make_bwd_maps(params, Cfg::kHeadDim, Cfg::kBf16, Cfg::kBlockM, Cfg::kBlockN, &dkdv_maps);
  if (!dkdv_tma && tma_strict()) return no_maps("v3 dk/dv");
#endif
#if SAMEBITS_BWD_TMA
  // v3 dQ: a TMA producer warp; v2's kernel when the maps cannot be encoded.
  BwdMaps dq_maps;
  const bool dq_tma =
      make_bwd_maps(params, Cfg::kHeadDim, Cfg::kBf16, Cfg::kDqBlockM, Cfg::kDqTmaBlockN, &dq_maps);
  if (!dq_tma && tma_strict()) return no_maps("v3 dq");
#endif

  if (long g = grid_of(shape.pre_units, 8, shape); g > 0) {
    bwd::attention_bwd_preprocess_sm90_kernel<Cfg::kHeadDim, Cfg::kBf16>
        <<<static_cast<unsigned>(g), bwd::kPreprocessThreads, 0, shape.stream>>>(params);
    if (sb_status s = check("preprocess launch"); s != SB_OK) return s;
  }
  if (long g = grid_of(shape.dkdv_units, 1, shape); g > 0) {
#if SAMEBITS_BWD_TMA && SAMEBITS_BWD_TMA_DKDV
    if (dkdv_tma) {
      // The kernel's form (dkdv_form); the raw forms only where they exist.
      using K = bwd::DkdvTmaKernel<Cfg>;
      const int form = dkdv_form<Cfg>(params);
      auto launch = [&](auto form_tag) {
        return launch_with_maps<bwd::attention_bwd_dkdv_tma_sm90_kernel<Cfg, decltype(form_tag)::value>>(
            g, Cfg::kDkdvTmaThreads, Cfg::kDkdvTmaSmemBytes, params, dkdv_maps, shape.stream);
      };
      // (dkdv_form names the held form only where it exists; the chained
      // form stands in for it otherwise)
      sb_status s;
      switch (K::kHasRawForms ? form : int(K::kGeneral)) {
        case K::kRawHeld:
          if constexpr (K::kHasHeldForm) {
            s = launch(std::integral_constant<int, K::kRawHeld>{});
            break;
          }
          [[fallthrough]];
        case K::kRawChained:
          if constexpr (K::kHasRawForms) {
            s = launch(std::integral_constant<int, K::kRawChained>{});
            break;
          }
          [[fallthrough]];
        case K::kRaw:
          if constexpr (K::kHasRawForms) {
            s = launch(std::integral_constant<int, K::kRaw>{});
            break;
          }
          [[fallthrough]];
        default:
          s = launch(std::integral_constant<int, K::kGeneral>{});
      }
      if (s != SB_OK) return s;
    } else
#endif
    {
      constexpr auto kernel = bwd::attention_bwd_dkdv_sm90_kernel<Cfg>;
      if (sb_status s = opt_in<kernel>(Cfg::kDkdvSmemBytes); s != SB_OK) return s;
      kernel<<<static_cast<unsigned>(g), Cfg::kThreads, Cfg::kDkdvSmemBytes, shape.stream>>>(params);
    }
    if (sb_status s = check("dk/dv launch"); s != SB_OK) return s;
  }
  if (long g = grid_of(shape.dq_units, 1, shape); g > 0) {
#if SAMEBITS_BWD_TMA
    if (dq_tma) {
      // The raw score form has a kernel of its own (same bits; fewer
      // registers held by the softcap path). SAMEBITS_BWD_DQ_RAW=0: the
      // general kernel for every call (comparisons of speed).
      const bool raw_only = raw_score(params) && bwd_dq_raw_env();
      if (sb_status s = launch_raw_or_general<bwd::attention_bwd_dq_tma_sm90_kernel<Cfg, true>,
                                              bwd::attention_bwd_dq_tma_sm90_kernel<Cfg, false>>(
              raw_only, g, Cfg::kDqTmaThreads, Cfg::kDqTmaSmemBytes, params, dq_maps, shape.stream);
          s != SB_OK)
        return s;
    } else
#endif
    {
      constexpr auto kernel = bwd::attention_bwd_dq_sm90_kernel<Cfg>;
      if (sb_status s = opt_in<kernel>(Cfg::kDqSmemBytes); s != SB_OK) return s;
      kernel<<<static_cast<unsigned>(g), Cfg::kDqThreads, Cfg::kDqSmemBytes, shape.stream>>>(params);
    }
    if (sb_status s = check("dq launch"); s != SB_OK) return s;
  }
  return SB_OK;
}

template <class Cfg>
sb_status launch_attention_bwd(const AttentionBwdParams& params, const BwdLaunchShape& shape) {
#if SAMEBITS_BWD_TMA && SAMEBITS_BWD_TMA_DKDV
  if constexpr (Cfg::kFused) return launch_attention_bwd_fused<Cfg>(params, shape);
  else
#endif
    return launch_attention_bwd_passes<Cfg>(params, shape);
}

}  // namespace samebits::cuda::sm90
