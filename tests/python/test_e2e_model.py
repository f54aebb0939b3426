"""End to end, part 1: the decoder and Hugging Face checkpoint loading
(tiny checkpoints written by the test itself; no network)."""
import json

import pytest
import torch

pytest.importorskip("safetensors")

from samebits.models import CausalLM, ModelConfig, load_hf, save_hf  # noqa: E402

TINY = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128)


def packed_batch(vocab, lens, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (sum(lens),), generator=g)
    cu = torch.tensor([0] + lens).cumsum(0).to(torch.int32)
    return ids, cu


@pytest.mark.parametrize("kind", ["llama", "qwen2-tied", "llama-sharded"])
def test_hf_round_trip(tmp_path, kind):
    extra = {}
    if kind.startswith("qwen2"):
        extra = dict(model_type="qwen2", attention_bias=True, tie_word_embeddings=True)
    if kind == "llama-sharded":
        extra = dict(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
    m = CausalLM(ModelConfig(**TINY, **extra)).init_weights(3)
    with torch.no_grad():  # non-trivial norms and biases, so a mis-mapped key shows
        for n, p in m.named_parameters():
            if "norm" in n or n.endswith("bias"):
                p.add_(torch.linspace(-0.1, 0.1, p.numel()).view_as(p))
    save_hf(m, str(tmp_path), max_shard_bytes=20_000 if kind.endswith("sharded") else None)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["model_type"] == ("qwen2" if kind.startswith("qwen2") else "llama")
    if kind.endswith("sharded"):
        assert (tmp_path / "model.safetensors.index.json").exists()
    if kind.startswith("qwen2"):
        names = set(__import__("safetensors.torch").torch.load_file(str(tmp_path / "model.safetensors")))
        assert "model.layers.0.self_attn.q_proj.bias" in names and "lm_head.weight" not in names
    m2 = load_hf(str(tmp_path))
    assert m2.config.attention_bias == m.config.attention_bias
    for (k, a), (k2, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert k == k2 and torch.equal(a, b), k
    ids, cu = packed_batch(96, [5, 17, 9])
    with torch.no_grad():
        h1, h2 = m.forward_packed(ids, cu), m2.forward_packed(ids, cu)
        assert torch.equal(h1, h2)
        # samebits vs stock PyTorch on the same weights: both are float32
        # computations of the same function; their difference is rounding
        # only (~1e-6 relative here), far below what a wrong weight would make
        m2.stock = True
        assert torch.allclose(m2.forward_packed(ids, cu), h1, rtol=1e-4, atol=1e-4)


def test_missing_key_is_an_error(tmp_path):
    m = CausalLM(ModelConfig(**TINY)).init_weights(0)
    save_hf(m, str(tmp_path))
    import safetensors.torch as st
    sd = st.load_file(str(tmp_path / "model.safetensors"))
    sd.pop("model.layers.1.mlp.up_proj.weight")
    st.save_file(sd, str(tmp_path / "model.safetensors"))
    with pytest.raises(KeyError, match="up_proj"):
        load_hf(str(tmp_path))


def test_packed_rows_do_not_depend_on_neighbours():
    """A sequence's hidden states alone == inside a packed batch, any offset."""
    m = CausalLM(ModelConfig(**TINY)).init_weights(1)
    ids, cu = packed_batch(96, [7, 30, 12], seed=5)
    with torch.no_grad():
        full = m.forward_packed(ids, cu)
        alone = m.forward_packed(ids[7:37], torch.tensor([0, 30], dtype=torch.int32))
    assert torch.equal(full[7:37], alone)


def test_bf16_packed_invariance():
    m = CausalLM(ModelConfig(**TINY)).init_weights(2).to(torch.bfloat16)
    ids, cu = packed_batch(96, [3, 21], seed=9)
    with torch.no_grad():
        full = m.logprobs_of(m.forward_packed(ids, cu))
        alone = m.logprobs_of(m.forward_packed(ids[3:], torch.tensor([0, 21], dtype=torch.int32)))
    assert full.dtype == torch.float32 and torch.equal(full[3:], alone)
