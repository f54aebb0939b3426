// CPU backend internals shared by the attention files and the tests.
#pragma once

#include <cstdint>

#include "samebits/samebits.h"

namespace samebits::cpu {

// The forward with an explicit reduction structure: KV block `block` keys,
// split `split` keys (a multiple of `block`). attention_forward() calls it
// with the tile table's values (include/samebits/config.h); the tests call
// it with other values to show that the structure really shapes the bits.
sb_status attention_forward_with_structure(const sb_attention_params& p, int32_t block,
                                           int32_t split);

}  // namespace samebits::cpu
