// samebits tile table: the one place where the reduction structure of every
// attention kernel is chosen. It is part of the numerics contract
// (docs/numerics.md): entries marked BITS change results when edited, so an
// edit to them is a numerics change and needs a version bump. Entries marked
// FREE only change speed and may be tuned; tests prove they move no bits.
//
// Every value is a pure function of (arch, head_dim, dtype): nothing here
// may read batch size, sequence lengths, SM count or anything at run time.
#ifndef SAMEBITS_CONFIG_H_
#define SAMEBITS_CONFIG_H_

#include <stdint.h>

#include "samebits/samebits.h"

namespace samebits {

// Architectures the table knows. kArchCpu is the CPU reference backend; it
// uses the same block and split structure as sm90 so that its results are
// the closest portable model of what the GPU computes.
constexpr int32_t kArchCpu = 0;
constexpr int32_t kArchSm90 = 90;

constexpr bool supported_head_dim(int32_t head_dim) {
  return head_dim > 0 && head_dim <= 256 && head_dim % 8 == 0;
}

// BITS. Keys per KV block: the online-softmax rescale happens once per block,
// so this is where the row maximum is refreshed. Blocks are aligned at key 0.
//  - 128 for head dims up to 128: a 128x128 S tile per consumer warpgroup
//    pair fits the register budget of a wgmma m64n128 accumulator.
//  - 64 above 128: the P*V accumulator of a 256-wide head leaves room for
//    only half as many score columns.
constexpr int32_t kv_block_size(int32_t arch, int32_t head_dim, sb_dtype) {
  if (arch != kArchCpu && arch != kArchSm90) return 0;
  if (!supported_head_dim(head_dim)) return 0;
  return head_dim <= 128 ? 128 : 64;
}

// BITS. Keys per split: the unit of split-KV parallelism. A row's output is
// the ordered left fold of its splits' partial results (numerics.md, "Split
// merge"), whether one kernel walks all splits or a decode kernel computes
// them in parallel and merges them after. 1024 keys gives 32 splits at 32k
// context, enough CTAs for one decode sequence to fill an H100, and is a
// multiple of every KV block size above.
constexpr int32_t split_size(int32_t arch, int32_t head_dim, sb_dtype dtype) {
  return kv_block_size(arch, head_dim, dtype) == 0 ? 0 : 1024;
}

static_assert(split_size(kArchSm90, 128, SB_BF16) % kv_block_size(kArchSm90, 128, SB_BF16) == 0,
              "a split must hold whole KV blocks");
static_assert(split_size(kArchSm90, 256, SB_BF16) % kv_block_size(kArchSm90, 256, SB_BF16) == 0,
              "a split must hold whole KV blocks");

// FREE. Query rows per work item on the CPU backend. Rows are independent,
// so this only sets how work is cut between threads.
constexpr int32_t kCpuQueryRowsPerTask = 64;

}  // namespace samebits

#endif  // SAMEBITS_CONFIG_H_
