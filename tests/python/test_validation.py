"""One test per input rule of samebits/_validate.py: each error names the
argument at fault."""

import math

import pytest
import torch

import samebits
from samebits import ops

i32 = torch.int32


def qkv(B=2, L=16, H=4, Hk=2, D=32, dtype=torch.float16):
    return torch.randn(B, L, H, D).to(dtype), torch.randn(B, L, Hk, D).to(dtype), torch.randn(B, L, Hk, D).to(dtype)


def packed(T=20, H=4, Hk=2, D=32):
    return torch.randn(T, H, D, dtype=torch.bfloat16), torch.randn(T, Hk, D, dtype=torch.bfloat16), \
        torch.randn(T, Hk, D, dtype=torch.bfloat16)


def cache(B=2, cap=32, Hk=2, D=32, dtype=torch.float16):
    return torch.zeros(B, cap, Hk, D, dtype=dtype), torch.zeros(B, cap, Hk, D, dtype=dtype)


# --- dtype / device / type ----------------------------------------------------------


def test_q_not_a_tensor():
    _, k, v = qkv()
    with pytest.raises(TypeError, match="^q: "):
        samebits.attention([1.0], k, v)


def test_dtype_unsupported():
    q, k, v = (t.double() for t in qkv())
    with pytest.raises(TypeError, match="^q: .*float16, bfloat16 or float32"):
        samebits.attention(q, k, v)


def test_dtype_mismatch():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="^v: .*same dtype"):
        samebits.attention(q, k, v.bfloat16())


def test_device_unsupported():
    q, k, v = (t.to("meta") for t in qkv())
    with pytest.raises(ValueError, match="^q: .*CPU or CUDA"):
        ops.attn_fwd(q, k, v, None, None, 0, 0, 1.0, 0.0, -1, -1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_device_mismatch():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="^k: .*device"):
        samebits.attention(q.cuda(), k, v.cuda())


def test_cu_seqlens_device_checked_by_rule():
    # the index tensors follow the same device rule as q (checked via a meta tensor)
    q, k, v = packed()
    cu = torch.tensor([0, 20], dtype=i32, device="meta")
    with pytest.raises(ValueError, match="^cu_seqlens_q: .*device"):
        samebits.attention_varlen(q, k, v, cu, torch.tensor([0, 20], dtype=i32))


# --- shapes -------------------------------------------------------------------------


def test_rank_dense():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="^q: .*4-D"):
        samebits.attention(q[0], k, v)


def test_rank_varlen():
    q, k, v = qkv(dtype=torch.bfloat16)
    cu = torch.tensor([0, 16, 32], dtype=i32)
    with pytest.raises(ValueError, match="^q: .*3-D"):
        samebits.attention_varlen(q, k, v, cu, cu)


def test_head_dim_multiple_of_8():
    q, k, v = qkv(D=36)
    with pytest.raises(ValueError, match="^q: .*head_dim a multiple of 8"):
        samebits.attention(q, k, v)


def test_head_dim_at_most_256():
    q, k, v = qkv(D=264)
    with pytest.raises(ValueError, match="^q: .*head_dim"):
        samebits.attention(q, k, v)


def test_head_dim_same_for_qkv():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="^v: .*head_dim 32"):
        samebits.attention(q, k, torch.zeros(2, 16, 2, 64, dtype=torch.float16))


def test_last_dim_stride():
    q, k, v = qkv()
    qt = q.transpose(1, 3).contiguous().transpose(1, 3)
    with pytest.raises(ValueError, match="^q: .*stride 1"):
        samebits.attention(qt, k, v)


def test_k_v_same_shape():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="^v: .*same shape as k"):
        samebits.attention(q, k, v[:, :8])


def test_gqa_divisibility():
    q, k, v = qkv(H=4, Hk=3)
    with pytest.raises(ValueError, match="^k: .*divides"):
        samebits.attention(q, k, v)


def test_batch_mismatch():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="^k: .*batch"):
        samebits.attention(q, k[:1], v[:1])


# --- options ------------------------------------------------------------------------


def test_window_below_minus_one():
    with pytest.raises(ValueError, match=r"^window_size\[0\]"):
        samebits.attention(*qkv(), window_size=(-2, 0))


def test_window_not_int():
    with pytest.raises(TypeError, match=r"^window_size\[1\]"):
        samebits.attention(*qkv(), window_size=(-1, 1.5))


def test_window_not_a_pair():
    with pytest.raises(TypeError, match="^window_size"):
        samebits.attention(*qkv(), window_size=3)


def test_softcap_negative():
    with pytest.raises(ValueError, match="^softcap"):
        samebits.attention(*qkv(), softcap=-1.0)


@pytest.mark.parametrize("scale", [math.inf, math.nan])
def test_softmax_scale_finite(scale):
    with pytest.raises(ValueError, match="^softmax_scale"):
        samebits.attention(*qkv(), softmax_scale=scale)


def test_causal_bool():
    with pytest.raises(TypeError, match="^causal"):
        samebits.attention(*qkv(), causal="yes")


# --- cu_seqlens -----------------------------------------------------------------------


def test_cu_seqlens_dtype():
    q, k, v = packed()
    cu = torch.tensor([0, 20], dtype=torch.int64)
    with pytest.raises(TypeError, match="^cu_seqlens_q: .*int32"):
        samebits.attention_varlen(q, k, v, cu, cu.int())


def test_cu_seqlens_rank():
    q, k, v = packed()
    cu = torch.tensor([[0, 20]], dtype=i32)
    with pytest.raises(ValueError, match="^cu_seqlens_k: .*1-D"):
        samebits.attention_varlen(q, k, v, cu[0], cu)


def test_cu_seqlens_length_match():
    q, k, v = packed()
    with pytest.raises(ValueError, match="^cu_seqlens_k: .*length batch"):
        samebits.attention_varlen(q, k, v, torch.tensor([0, 20], dtype=i32), torch.tensor([0, 10, 20], dtype=i32))


def test_cu_seqlens_given_together():
    q, k, v = packed()
    with pytest.raises(ValueError, match="^cu_seqlens_k"):
        ops.attn_fwd(q, k, v, torch.tensor([0, 20], dtype=i32), None, 0, 0, 1.0, 0.0, -1, -1)


def test_cu_seqlens_starts_at_zero():
    q, k, v = packed()
    with pytest.raises(ValueError, match=r"^cu_seqlens_q: .*\[0\] == 0"):
        samebits.attention_varlen(q, k, v, torch.tensor([2, 20], dtype=i32), torch.tensor([0, 20], dtype=i32))


def test_cu_seqlens_monotone():
    q, k, v = packed()
    with pytest.raises(ValueError, match="^cu_seqlens_k: .*non-decreasing"):
        samebits.attention_varlen(q, k, v, torch.tensor([0, 5, 20], dtype=i32),
                                  torch.tensor([0, 12, 10], dtype=i32))


def test_cu_seqlens_last_is_total():
    q, k, v = packed()
    with pytest.raises(ValueError, match="^cu_seqlens_k: .*last offset"):
        samebits.attention_varlen(q, k, v, torch.tensor([0, 20], dtype=i32), torch.tensor([0, 19], dtype=i32))


def test_value_checks_are_not_in_fake_impls():
    # a data-dependent rule is not checked while tracing with fake tensors
    from torch._subclasses.fake_tensor import FakeTensorMode

    q, k, v = packed()
    with FakeTensorMode() as mode:
        fq, fk, fv = (mode.from_tensor(t) for t in (q, k, v))
        bad = mode.from_tensor(torch.tensor([0, 25, 20], dtype=i32))
        out, lse = torch.ops.samebits.attn_fwd(fq, fk, fv, bad, bad, 0, 0, 1.0, 0.0, -1, -1)
    assert out.shape == q.shape and lse.shape == (4, 20)


# --- KV cache ---------------------------------------------------------------------------


def kv_args(**over):
    q = torch.randn(2, 1, 4, 32, dtype=torch.float16)
    kc, vc = cache()
    a = dict(q=q, k_cache=kc, v_cache=vc, k=torch.zeros(2, 1, 2, 32, dtype=torch.float16),
             v=torch.zeros(2, 1, 2, 32, dtype=torch.float16), cache_seqlens=torch.tensor([3, 5], dtype=i32),
             block_table=None)
    a.update(over)
    return a


def call_kv(a):
    return samebits.attention_with_kvcache(a.pop("q"), a.pop("k_cache"), a.pop("v_cache"), a.pop("k"), a.pop("v"),
                                           **a)


def test_kvcache_ok():
    call_kv(kv_args())


def test_kvcache_workspace_ok_on_cpu():
    # the CPU backend needs no workspace; a valid one is accepted and unused
    ref = call_kv(kv_args())
    out = call_kv(kv_args(workspace=torch.empty(16, dtype=torch.uint8)))
    assert torch.equal(out, ref)
    assert samebits.kvcache_workspace_size(kv_args()["q"], kv_args()["k_cache"]) == (0, 0)


def test_kvcache_workspace_dtype():
    with pytest.raises(TypeError, match="^workspace: .*uint8"):
        call_kv(kv_args(workspace=torch.empty(16, dtype=torch.float32)))


def test_kvcache_workspace_type():
    with pytest.raises(TypeError, match="^workspace: .*torch.Tensor"):
        call_kv(kv_args(workspace=bytearray(16)))


def test_kvcache_workspace_device():
    with pytest.raises(ValueError, match="^workspace: .*q's device"):
        call_kv(kv_args(workspace=torch.empty(16, dtype=torch.uint8, device="meta")))


def test_kvcache_workspace_layout():
    with pytest.raises(ValueError, match="^workspace: .*1-D contiguous"):
        call_kv(kv_args(workspace=torch.empty(4, 4, dtype=torch.uint8)))
    with pytest.raises(ValueError, match="^workspace: .*1-D contiguous"):
        call_kv(kv_args(workspace=torch.empty(32, dtype=torch.uint8)[::2]))


def test_kvcache_k_without_v():
    with pytest.raises(ValueError, match="^v: "):
        call_kv(kv_args(v=None))


def test_kvcache_dtype():
    with pytest.raises(TypeError, match="^k_cache: .*same dtype"):
        call_kv(kv_args(k_cache=torch.zeros(2, 32, 2, 32)))


def test_kvcache_cache_shapes():
    with pytest.raises(ValueError, match="^v_cache: .*shape of k_cache"):
        call_kv(kv_args(v_cache=torch.zeros(2, 16, 2, 32, dtype=torch.float16)))


def test_kvcache_new_shape():
    with pytest.raises(ValueError, match="^k: "):
        call_kv(kv_args(k=torch.zeros(2, 1, 4, 32, dtype=torch.float16), v=torch.zeros(2, 1, 4, 32, dtype=torch.float16)))


def test_kvcache_batch():
    kc, vc = cache(B=3)
    with pytest.raises(ValueError, match="^k_cache: .*batch"):
        call_kv(kv_args(k_cache=kc, v_cache=vc))


def test_cache_seqlens_dtype():
    with pytest.raises(TypeError, match="^cache_seqlens: .*int32"):
        call_kv(kv_args(cache_seqlens=torch.tensor([3, 5])))


def test_cache_seqlens_length():
    with pytest.raises(ValueError, match="^cache_seqlens: .*length batch"):
        call_kv(kv_args(cache_seqlens=torch.tensor([3], dtype=i32)))


def test_cache_seqlens_negative():
    with pytest.raises(ValueError, match="^cache_seqlens: .*>= 0"):
        call_kv(kv_args(cache_seqlens=torch.tensor([-1, 5], dtype=i32)))


def test_cache_seqlens_capacity():
    with pytest.raises(ValueError, match="^cache_seqlens: .*capacity 32"):
        call_kv(kv_args(cache_seqlens=torch.tensor([3, 32], dtype=i32)))


def test_block_table_dtype():
    kc, vc = torch.zeros(8, 16, 2, 32, dtype=torch.float16), torch.zeros(8, 16, 2, 32, dtype=torch.float16)
    with pytest.raises(TypeError, match="^block_table: .*int32"):
        call_kv(kv_args(k_cache=kc, v_cache=vc, block_table=torch.zeros(2, 2, dtype=torch.int64)))


def test_block_table_rank():
    kc, vc = torch.zeros(8, 16, 2, 32, dtype=torch.float16), torch.zeros(8, 16, 2, 32, dtype=torch.float16)
    with pytest.raises(ValueError, match="^block_table: .*2-D"):
        call_kv(kv_args(k_cache=kc, v_cache=vc, block_table=torch.zeros(4, dtype=i32)))


def test_block_table_batch():
    kc, vc = torch.zeros(8, 16, 2, 32, dtype=torch.float16), torch.zeros(8, 16, 2, 32, dtype=torch.float16)
    with pytest.raises(ValueError, match="^block_table: .*batch=2"):
        call_kv(kv_args(k_cache=kc, v_cache=vc, block_table=torch.zeros(3, 2, dtype=i32)))


def test_block_table_range():
    kc, vc = torch.zeros(8, 16, 2, 32, dtype=torch.float16), torch.zeros(8, 16, 2, 32, dtype=torch.float16)
    table = torch.tensor([[0, 1], [8, 3]], dtype=i32)  # sequence 1 uses page 8 of 8
    with pytest.raises(ValueError, match=r"^block_table: .*\[0, 8\)"):
        call_kv(kv_args(k_cache=kc, v_cache=vc, block_table=table))


def test_block_table_unused_entries_unchecked():
    # entries past the pages a sequence uses are not read, so they may be anything
    kc, vc = torch.zeros(8, 16, 2, 32, dtype=torch.float16), torch.zeros(8, 16, 2, 32, dtype=torch.float16)
    table = torch.tensor([[0, -1], [2, 99]], dtype=i32)
    call_kv(kv_args(k_cache=kc, v_cache=vc, block_table=table))


# --- backward, threads, flash interface ------------------------------------------------


def test_dout_shape():
    q, k, v = qkv()
    out, lse = ops.attn_fwd(q, k, v, None, None, 0, 0, 1.0, 0.0, -1, -1)
    with pytest.raises(ValueError, match="^dout: "):
        ops.attn_bwd(out[:, :8], q, k, v, out, lse, None, None, 0, 0, 1.0, 0.0, -1, -1)


def test_num_threads():
    with pytest.raises(ValueError, match="^num_threads"):
        samebits.set_num_threads(0)


def test_flash_dropout():
    with pytest.raises(ValueError, match="^dropout_p"):
        samebits.flash_attn_func(*qkv(), dropout_p=0.1)


@pytest.mark.parametrize("arg", ["alibi_slopes"])
def test_flash_alibi(arg):
    with pytest.raises(NotImplementedError, match=f"^{arg}"):
        samebits.flash_attn_func(*qkv(), **{arg: torch.ones(4)})


@pytest.mark.parametrize("arg", ["rotary_cos", "rotary_sin", "cache_batch_idx", "cache_leftpad", "alibi_slopes"])
def test_flash_kvcache_unsupported(arg):
    a = kv_args()
    with pytest.raises(NotImplementedError, match=f"^{arg}"):
        samebits.flash_attn_with_kvcache(a["q"], a["k_cache"], a["v_cache"], cache_seqlens=a["cache_seqlens"],
                                         **{arg: torch.ones(2)})


def test_flash_varlen_block_table():
    q, k, v = packed()
    cu = torch.tensor([0, 20], dtype=i32)
    with pytest.raises(NotImplementedError, match="^block_table"):
        samebits.flash_attn_varlen_func(q, k, v, cu, cu, 20, 20, block_table=torch.zeros(1, 1, dtype=i32))


def test_value_checks_can_be_turned_off_and_on():
    """set_value_checks(False) skips the data-dependent checks (the ones that
    need a host read of device tensors); the default runs them."""
    import samebits
    q = torch.randn(7, 2, 64)
    k = torch.randn(7, 2, 64)
    bad = torch.tensor([0, 5, 3, 7], dtype=torch.int32)  # not non-decreasing
    with pytest.raises(ValueError, match="cu_seqlens_q"):
        samebits.attention_varlen(q, k, k, bad, torch.tensor([0, 2, 4, 7], dtype=torch.int32))
    samebits.set_value_checks(False)
    try:
        from samebits import _validate
        assert not _validate.values_checkable(q.device)
    finally:
        samebits.set_value_checks(True)
    assert _validate.values_checkable(q.device)


def test_packed_backward_without_value_checks_equals_with_them():
    """With set_value_checks(False) a packed backward takes its gradients
    from torch.empty as the checked path does (no zero fill; an invalid
    offset is the caller's undefined behaviour then): the kernels write
    every row of every sequence, so both give the same bits. The unchecked
    run comes second, on memory the checked run's tensors just freed."""
    import samebits
    torch.manual_seed(3)
    lens = [5, 1, 9, 4]
    cu = torch.tensor([0, 5, 6, 15, 19], dtype=torch.int32)
    q, k, v = (torch.randn(sum(lens), 2, 64, dtype=torch.bfloat16) for _ in range(3))
    dout = torch.randn_like(q)

    def grads():
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        out = samebits.attention_varlen(*leaves, cu, cu, causal=True)
        return torch.autograd.grad(out, leaves, dout)

    checked = grads()
    samebits.set_value_checks(False)
    try:
        unchecked = grads()
    finally:
        samebits.set_value_checks(True)
    assert all(torch.isfinite(g.float()).all() for g in unchecked)
    assert all(torch.equal(a, b) for a, b in zip(checked, unchecked))
