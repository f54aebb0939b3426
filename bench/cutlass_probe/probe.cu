// Probe (bench only, not part of the library): CUTLASS 3 sm90 GEMMs of
// fixed tile and cluster shapes, no split-K or stream-K, behind a C entry
// point, to time them beside samebits' own entries and cuBLAS and to check
// whether they store the same bits. Build one object per configuration with
// -DSBC_CFG=n, then link them with the dispatcher (-DSBC_DISPATCH).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#ifndef SBC_DISPATCH
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

#if SBC_CFG == 0
using SbcTile = Shape<_128, _128, _64>; using SbcCluster = Shape<_2, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 1
using SbcTile = Shape<_128, _128, _64>; using SbcCluster = Shape<_1, _2, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 2
using SbcTile = Shape<_128, _128, _64>; using SbcCluster = Shape<_1, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 3
using SbcTile = Shape<_64, _128, _64>; using SbcCluster = Shape<_2, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedPingpong; using ESched = cutlass::epilogue::TmaWarpSpecialized;
#elif SBC_CFG == 4
using SbcTile = Shape<_128, _256, _64>; using SbcCluster = Shape<_2, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 5
using SbcTile = Shape<_256, _128, _64>; using SbcCluster = Shape<_1, _2, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 6
using SbcTile = Shape<_128, _96, _64>; using SbcCluster = Shape<_1, _2, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 7
using SbcTile = Shape<_128, _160, _64>; using SbcCluster = Shape<_2, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 8
using SbcTile = Shape<_128, _96, _64>; using SbcCluster = Shape<_1, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif SBC_CFG == 9
using SbcTile = Shape<_128, _160, _64>; using SbcCluster = Shape<_1, _1, _1>;
using KSched = cutlass::gemm::KernelTmaWarpSpecializedCooperative; using ESched = cutlass::epilogue::TmaWarpSpecializedCooperative;
#endif

using Bf = cutlass::bfloat16_t;
using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, SbcTile, SbcCluster, cutlass::epilogue::collective::EpilogueTileAuto,
    float, float, void, cutlass::layout::RowMajor, 8, Bf, cutlass::layout::RowMajor, 8, ESched>::CollectiveOp;
using Main = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Bf, cutlass::layout::RowMajor, 8, Bf,
    cutlass::layout::ColumnMajor, 8, float, SbcTile, SbcCluster,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epi::SharedStorage))>,
    KSched>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

#define SBC_CAT2(a, b) a##b
#define SBC_CAT(a, b) SBC_CAT2(a, b)

static typename Gemm::Arguments make_args(const void* a, const void* b, void* d, int m, int n, int k) {
  static int sms = 0;
  if (sms == 0) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(m, k, 1));
  auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(n, k, 1));
  auto sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(m, n, 1));
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = sms;
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, 1},
                                {static_cast<const Bf*>(a), sa, static_cast<const Bf*>(b), sb},
                                {{1.0f, 0.0f}, nullptr, typename Kernel::StrideC{}, static_cast<Bf*>(d), sd},
                                hw};
  return args;
}

extern "C" size_t SBC_CAT(sbc_workspace_, SBC_CFG)(int m, int n, int k) {
  return Gemm::get_workspace_size(make_args(nullptr, nullptr, nullptr, m, n, k));
}

extern "C" int SBC_CAT(sbc_gemm_, SBC_CFG)(const void* a, const void* b, void* d, int m, int n, int k, void* ws,
                                         cudaStream_t s) {
  Gemm g;
  auto args = make_args(a, b, d, m, n, k);
  if (g.can_implement(args) != cutlass::Status::kSuccess) return 1;
  if (g.initialize(args, ws, s) != cutlass::Status::kSuccess) return 2;
  if (g.run(s) != cutlass::Status::kSuccess) return 3;
  return 0;
}
#else
#define SBC_DECL(n)                                                                  \
  extern "C" size_t sbc_workspace_##n(int, int, int);                                \
  extern "C" int sbc_gemm_##n(const void*, const void*, void*, int, int, int, void*, cudaStream_t);
SBC_DECL(0) SBC_DECL(1) SBC_DECL(2) SBC_DECL(3) SBC_DECL(4) SBC_DECL(5) SBC_DECL(6) SBC_DECL(7) SBC_DECL(8) SBC_DECL(9)
extern "C" int sbc_configs() { return 10; }
extern "C" size_t sbc_workspace(int cfg, int m, int n, int k) {
  switch (cfg) {
    case 0: return sbc_workspace_0(m, n, k);
    case 1: return sbc_workspace_1(m, n, k);
    case 2: return sbc_workspace_2(m, n, k);
    case 3: return sbc_workspace_3(m, n, k);
    case 4: return sbc_workspace_4(m, n, k);
    case 5: return sbc_workspace_5(m, n, k);
    case 6: return sbc_workspace_6(m, n, k);
    case 7: return sbc_workspace_7(m, n, k);
    case 8: return sbc_workspace_8(m, n, k);
    case 9: return sbc_workspace_9(m, n, k);
  }
  return 0;
}
extern "C" int sbc_gemm(int cfg, const void* a, const void* b, void* d, int m, int n, int k, void* ws, void* s) {
  auto st = static_cast<cudaStream_t>(s);
  switch (cfg) {
    case 0: return sbc_gemm_0(a, b, d, m, n, k, ws, st);
    case 1: return sbc_gemm_1(a, b, d, m, n, k, ws, st);
    case 2: return sbc_gemm_2(a, b, d, m, n, k, ws, st);
    case 3: return sbc_gemm_3(a, b, d, m, n, k, ws, st);
    case 4: return sbc_gemm_4(a, b, d, m, n, k, ws, st);
    case 5: return sbc_gemm_5(a, b, d, m, n, k, ws, st);
    case 6: return sbc_gemm_6(a, b, d, m, n, k, ws, st);
    case 7: return sbc_gemm_7(a, b, d, m, n, k, ws, st);
    case 8: return sbc_gemm_8(a, b, d, m, n, k, ws, st);
    case 9: return sbc_gemm_9(a, b, d, m, n, k, ws, st);
  }
  return 9;
}
#endif
