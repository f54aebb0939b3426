#include <cstdio>
#include "cuda/attention_bwd_sm90_params.h"
using namespace samebits::cuda::sm90;
__global__ void k(AttentionBwdParams p, int* out) {
  for (int b = 0; b < p.batch; ++b) {
    SeqGeom s = seq_geom(p, b);
    out[b * 4 + 0] = s.lk;
    out[b * 4 + 1] = s.lk_stored;
    out[b * 4 + 2] = s.k_tail_tma;
    out[b * 4 + 3] = s.q_tail_tma;
  }
}
int main() {
  AttentionBwdParams p{};
  p.batch = 4; p.seqlen_k = 390; p.seqlen_q = 200; p.tail_tma = 1;
  int used[4] = {390, 257, 129, 64};
  int *du, *dout;
  cudaMalloc(&du, 16); cudaMalloc(&dout, 64);
  cudaMemcpy(du, used, 16, cudaMemcpyHostToDevice);
  p.seqused_k = du;
  k<<<1, 1>>>(p, dout);
  int h[16];
  cudaMemcpy(h, dout, 64, cudaMemcpyDeviceToHost);
  for (int b = 0; b < 4; ++b) printf("b=%d lk=%d stored=%d ktail=%d qtail=%d\n", b, h[b*4], h[b*4+1], h[b*4+2], h[b*4+3]);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
