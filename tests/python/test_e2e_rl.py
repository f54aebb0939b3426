"""End to end, part 3: deterministic policy-gradient steps and the RL example."""
import torch

from samebits.examples import rl


def test_two_runs_same_weights_and_on_policy(capsys):
    args = rl.parse(["--steps", "2", "--prompts", "2", "--group", "3", "--max-new", "8", "--max-prompt", "12",
                     "--identical", "8"])
    a, b = rl.rl_loop(args, stock=False), rl.rl_loop(args, stock=False)
    assert a["weights"] == b["weights"]
    assert a["tokens"] > 0 and a["mismatches"] == 0 and a["max_abs_kl"] == 0.0
    ident = rl.identical_requests(args, stock=False)
    assert ident["copies"] == 8 and ident["unique"] == 1
    # the weights moved: the step is not a no-op
    m = rl.make_model(args, stock=False)
    assert rl.weight_hash(m) != a["weights"]


def test_cli(tmp_path, capsys):
    rc = rl.main(["--steps", "1", "--prompts", "2", "--group", "2", "--max-new", "6", "--max-prompt", "10",
                  "--identical", "6", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "0 bitwise mismatches" in out and "[stock]" in out and "tokens/s" in out
    assert (tmp_path / "r.json").exists()


def test_trainer_step_deterministic_gradients():
    """The gradient of a packed batch is the same on every run."""
    from samebits.models import CausalLM, Rollout, preset, token_logprobs
    ro = [Rollout([1, 2, 3, 4], [5, 6, 7], []), Rollout([9, 8], [7, 6, 5, 4], [])]
    grads = []
    for _ in range(2):
        m = CausalLM(preset("tiny")).init_weights(0)
        (-token_logprobs(m, ro).sum()).backward()
        grads.append([p.grad.clone() for p in m.parameters()])
    assert all(torch.equal(x, y) for x, y in zip(*grads))


def test_cuda_rejects_head_dims_without_a_kernel(capsys):
    """The tiny preset (head dim 16) is CPU-only; asking for it on CUDA is a
    clear usage error before any model is built, not a kernel error later."""
    import pytest
    with pytest.raises(SystemExit):
        rl.parse(["--device", "cuda", "--config", "tiny"])
    assert "head dim 16" in capsys.readouterr().err
    assert rl.parse(["--device", "cuda", "--config", "1b"]).dtype == "bfloat16"
