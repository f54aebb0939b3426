# Writes gemm_sm90_wgmma_ops.cuh (run from the repo root after changing the N list).
out = []
out.append('''// wgmma.mma_async m64nNk16 wrappers (fp32 accumulate, A and B from shared
// memory through descriptors, both K-major, no transpose), one per (N, input
// dtype) the GEMM tile table uses. Mechanical: the only difference between
// them is the number of accumulator registers (N / 2 per thread).
//
// scale-d is 1 in every call: D = D + A * B. The accumulators start from +0
// (zeroed in registers), so every output element is the chain
// ((0 + s_0) + s_1) + ... over k16 steps s_j in increasing k.
#pragma once

#include <cstdint>

namespace samebits::cuda::dense::sm90 {

template <int N, bool kF16>
struct Wgmma;
''')
for n in (32, 64, 96, 128, 160, 168, 192, 224, 256):
    nreg = n // 2
    for f16 in (False, True):
        ty = 'f16' if f16 else 'bf16'
        regs = ', '.join(f'%{i}' for i in range(nreg))
        cons = ', '.join(f'"+f"(d[{i}])' for i in range(nreg))
        out.append(f'''template <>
struct Wgmma<{n}, {'true' if f16 else 'false'}> {{
  static constexpr int kRegs = {nreg};
  __device__ __forceinline__ static void mma(float (&d)[{nreg}], uint64_t desc_a, uint64_t desc_b) {{
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nreg+2}, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} "
        "{{{regs}}}, %{nreg}, %{nreg+1}, p, 1, 1, 0, 0;\\n}}\\n"
        : {cons}
        : "l"(desc_a), "l"(desc_b), "r"(1));
  }}
}};
''')
out.append('}  // namespace samebits::cuda::dense::sm90\n')
open('src/cuda/dense/gemm_sm90_wgmma_ops.cuh', 'w').write('\n'.join(out))
