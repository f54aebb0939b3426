// Invalid arguments are reported (status and a message naming the argument),
// never crash, and leave the outputs untouched where validation comes first.
#include <string>

#include "test_util.h"

using namespace sbtest;

static void expect_error(sb_status got, const char* needle) {
  CHECK(got == SB_INVALID_ARGUMENT);
  const std::string msg = sb_last_error();
  if (msg.find(needle) == std::string::npos) {
    std::fprintf(stderr, "message '%s' does not mention '%s'\n", msg.c_str(), needle);
    std::exit(1);
  }
}

int main() {
  Config c;
  c.H = c.Hk = 1;
  c.d = 8;
  Buf q(c.dt, 64 * 8), k(c.dt, 64 * 8), v(c.dt, 64 * 8), out(c.dt, 64 * 8);
  std::vector<float> lse(64);
  sb_attention_params p = base_params(c);
  p.batch = 2;
  p.q = view(q.data(), 0, 1, 8);
  p.k = view(k.data(), 0, 1, 8);
  p.v = view(v.data(), 0, 1, 8);
  p.out = view(out.data(), 0, 1, 8);
  p.lse = sb_view{lse.data(), 0, 1, 1};

  const int32_t bad_cu[3] = {0, 5, 3};
  const int32_t good_cu[3] = {0, 3, 6};
  p.cu_seqlens_q = bad_cu;
  p.cu_seqlens_k = good_cu;
  expect_error(sb_attention_forward(&p), "cu_seqlens_q");
  p.cu_seqlens_q = good_cu;
  p.cu_seqlens_k = bad_cu;
  expect_error(sb_attention_forward(&p), "cu_seqlens_k");
  p.cu_seqlens_k = good_cu;
  const int32_t negative_used[2] = {2, -1};
  p.seqused_k = negative_used;
  expect_error(sb_attention_forward(&p), "seqused_k[1]");
  const int32_t too_many[2] = {2, 4};
  p.seqused_k = too_many;
  expect_error(sb_attention_forward(&p), "seqused_k[1]");

  // paged: a negative block_table entry is refused before anything is read
  const int32_t used[2] = {20, 5};
  const int32_t table[2 * 3] = {0, 1, -1, 2, -1, -1};
  p.seqused_k = used;
  p.cu_seqlens_k = nullptr;
  p.block_table = table;
  p.block_table_batch_stride = 3;
  p.page_size = 8;
  expect_error(sb_attention_forward(&p), "block_table[0][2]");

  // KV-cache append: negative cache length, negative page
  Buf kn(c.dt, 16), vn(c.dt, 16);
  sb_kvcache_append_params a;
  std::memset(&a, 0, sizeof(a));
  a.dtype = c.dt;
  a.device = SB_CPU;
  a.batch = 1;
  a.seqlen_new = 2;
  a.num_heads_k = 1;
  a.head_dim = 8;
  const int32_t neg_len = -3;
  a.cache_seqlens = &neg_len;
  a.k_new = view(kn.data(), 2, 1, 8);
  a.v_new = view(vn.data(), 2, 1, 8);
  a.k_cache = view(k.data(), 64, 1, 8);
  a.v_cache = view(v.data(), 64, 1, 8);
  expect_error(sb_kvcache_append(&a), "cache_seqlens[0]");
  const int32_t len = 7;
  a.cache_seqlens = &len;
  a.block_table = table;  // positions 7, 8 -> pages 0 and 1 of row 0: fine
  a.block_table_batch_stride = 3;
  a.page_size = 4;        // positions 7, 8 -> pages 1 and 2; entry [0][2] is -1
  expect_error(sb_kvcache_append(&a), "block_table[0][2]");
  std::printf("test_api_errors: ok\n");
  return 0;
}
