"""A short deterministic RL loop: sample with a continuous-batching paged-KV
sampler, recompute the log-probabilities with the trainer's packed forward,
take policy-gradient steps; then the same on stock PyTorch ops.

    python -m samebits.examples.rl                         # tiny model, CPU
    python -m samebits.examples.rl --device cuda --config 1b --identical 1000

Reports, for samebits and for stock PyTorch (the negative control):
  * sampler vs trainer log-probabilities: bitwise mismatches and KL;
  * N identical requests served amid random traffic: unique completions;
  * two runs of the whole loop: final weight hashes;
  * sampler throughput (generated tokens / s).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time

import torch

import samebits
from samebits.models import (CausalLM, Request, Rollout, Sampler, Trainer, compare_logprobs, group_advantages,
                             preset, weight_hash)

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def reward(tokens) -> float:
    """Toy task: the fraction of even token ids in the completion."""
    return sum(t % 2 == 0 for t in tokens) / max(1, len(tokens))


def make_model(args, stock: bool) -> CausalLM:
    cfg = preset(args.config)
    with torch.device("cpu"):
        m = CausalLM(cfg, stock=stock).init_weights(args.seed)
    return m.to(device=args.device, dtype=_DTYPES[args.dtype])


def make_sampler(model, args) -> Sampler:
    return Sampler(model, num_pages=args.num_pages, page_size=args.page_size,
                   max_batch_tokens=args.max_batch_tokens, prefill_chunk=args.prefill_chunk,
                   max_running=args.max_running)


def rollouts_for_step(model, args, step: int):
    """prompts x group samples, arriving at random steps; returns rollouts and the sampler."""
    rng = random.Random(args.seed * 1000 + step)
    V = model.config.vocab_size
    reqs = []
    for p in range(args.prompts):
        prompt = [rng.randrange(V) for _ in range(rng.randrange(4, args.max_prompt))]
        for g in range(args.group):
            reqs.append(Request(len(reqs), prompt, args.max_new, seed=rng.randrange(2**31),
                                arrival=rng.randrange(args.spread)))
    sampler = make_sampler(model, args)
    done = sampler.run(reqs)
    return [Rollout(done[i].prompt, done[i].tokens, done[i].logprobs, reward(done[i].tokens))
            for i in range(len(reqs))], sampler


def rl_loop(args, stock: bool) -> dict:
    model = make_model(args, stock)
    trainer = Trainer(model, lr=args.lr)
    tokens = mismatches = 0
    kl_max, diff_max, tput, rewards = 0.0, 0.0, [], []
    for step in range(args.steps):
        rollouts, sampler = rollouts_for_step(model, args, step)
        tput.append(sampler.tokens_per_s)
        adv = group_advantages(rollouts, args.group)
        # pack the training batch in another order than the sampler served it
        order = random.Random(step).sample(range(len(rollouts)), len(rollouts))
        out = trainer.step([rollouts[i] for i in order], [adv[i] for i in order])
        c = compare_logprobs(out["sampler_logprobs"], out["trainer_logprobs"])
        tokens, mismatches = tokens + c["tokens"], mismatches + c["mismatches"]
        kl_max, diff_max = max(kl_max, abs(c["kl"])), max(diff_max, c["max_abs_diff"])
        rewards.append(sum(r.reward for r in rollouts) / len(rollouts))
    return {"tokens": tokens, "mismatches": mismatches, "max_abs_kl": kl_max, "max_abs_diff": diff_max,
            "weights": weight_hash(model), "tokens_per_s": sum(tput) / len(tput), "rewards": rewards}


def identical_requests(args, stock: bool) -> dict:
    """args.identical copies of one request (same prompt, same seed) among
    random traffic with random arrival steps; counts distinct completions."""
    model = make_model(args, stock)
    rng = random.Random(args.seed + 7)
    V = model.config.vocab_size
    prompt = [rng.randrange(V) for _ in range(args.max_prompt - 1)]
    reqs = []
    for i in range(args.identical):
        reqs.append(Request(len(reqs), prompt, args.max_new, seed=12345, arrival=rng.randrange(args.spread * 4)))
        for _ in range(rng.randrange(3)):  # 0-2 random neighbours per copy
            other = [rng.randrange(V) for _ in range(rng.randrange(1, 2 * args.max_prompt))]
            reqs.append(Request(len(reqs), other, rng.randrange(1, 2 * args.max_new), seed=rng.randrange(2**31),
                                arrival=rng.randrange(args.spread * 4)))
    ids = [r.rid for r in reqs if r.prompt == prompt and r.seed == 12345]
    sampler = make_sampler(model, args)
    done = sampler.run(reqs)
    uniq = {(tuple(done[i].tokens), tuple(done[i].logprobs)) for i in ids}
    return {"copies": len(ids), "requests": len(reqs), "unique": len(uniq),
            "unique_tokens": len({u[0] for u in uniq}), "tokens_per_s": sampler.tokens_per_s}


def parse(argv=None):
    ap = argparse.ArgumentParser(prog="python -m samebits.examples.rl", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="tiny", choices=["tiny", "1b"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, choices=sorted(_DTYPES), help="default: float32 on cpu, bfloat16 on cuda")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--max-prompt", type=int, default=24)
    ap.add_argument("--max-new", type=int, default=16)
    ap.add_argument("--spread", type=int, default=8, help="requests arrive over this many engine steps")
    ap.add_argument("--identical", type=int, default=None, help="copies of one request (default 32 cpu, 1000 cuda)")
    ap.add_argument("--page-size", type=int, default=16)
    ap.add_argument("--num-pages", type=int, default=None)
    ap.add_argument("--max-batch-tokens", type=int, default=256)
    ap.add_argument("--prefill-chunk", type=int, default=32)
    ap.add_argument("--max-running", type=int, default=None)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-stock", action="store_true", help="skip the stock-PyTorch negative control")
    ap.add_argument("--json", default=None, help="also write the report here")
    args = ap.parse_args(argv)
    cuda = args.device.startswith("cuda")
    args.dtype = args.dtype or ("bfloat16" if cuda else "float32")
    args.identical = args.identical if args.identical is not None else (1000 if cuda else 32)
    args.max_running = args.max_running or (256 if cuda else 32)
    args.num_pages = args.num_pages or (8192 if cuda else 512)
    head_dim = preset(args.config).head_dim
    if cuda and head_dim not in (64, 128, 256):
        ap.error(f"--config {args.config} has head dim {head_dim}; the CUDA attention kernels take 64, 128 or 256 "
                 f"(use --config 1b on CUDA, or run {args.config} on the CPU)")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    torch.manual_seed(args.seed)
    if args.device.startswith("cuda"):
        samebits.set_value_checks(False)  # no host syncs on the hot path
    print(f"samebits {samebits.__version__}  torch {torch.__version__}  device {args.device}  "
          f"config {args.config}  dtype {args.dtype}  threads {torch.get_num_threads()}")
    report, ok = {}, True
    for name, stock in [("samebits", False)] + ([] if args.no_stock else [("stock", True)]):
        rollouts_for_step(make_model(args, stock), args, step=-1)  # warm-up: first calls are not timed
        t0 = time.perf_counter()
        a, b = rl_loop(args, stock), rl_loop(args, stock)
        ident = identical_requests(args, stock)
        r = report[name] = {"run1": a, "run2": b, "identical": ident, "seconds": time.perf_counter() - t0}
        print(f"\n[{name}]")
        print(f"  sampler vs trainer logprobs: {a['tokens']} tokens, {a['mismatches']} bitwise mismatches, "
              f"max |diff| {a['max_abs_diff']:.3g}, max |KL| {a['max_abs_kl']:.3g}")
        print(f"  identical requests: {ident['copies']} copies among {ident['requests']} requests -> "
              f"{ident['unique']} unique completion(s) ({ident['unique_tokens']} distinct token sequences)")
        print(f"  weight hash after {args.steps} steps: run1 {a['weights']}  run2 {b['weights']}  "
              f"{'equal' if a['weights'] == b['weights'] else 'DIFFERENT'}")
        print(f"  mean reward per step: {', '.join(f'{x:.3f}' for x in a['rewards'])}")
        print(f"  sampler throughput: {a['tokens_per_s']:.1f} tokens/s (RL batches), "
              f"{ident['tokens_per_s']:.1f} tokens/s (identical-request traffic)")
        invariant = a["mismatches"] == 0 and b["mismatches"] == 0 and ident["unique"] == 1 \
            and a["weights"] == b["weights"]
        r["invariant"] = invariant
        if not stock:
            ok = ok and invariant
    if "stock" in report:
        s, k = report["samebits"], report["stock"]
        print(f"\nthroughput samebits / stock: RL {s['run1']['tokens_per_s'] / k['run1']['tokens_per_s']:.2f}x, "
              f"identical-request traffic {s['identical']['tokens_per_s'] / k['identical']['tokens_per_s']:.2f}x")
        if k["invariant"]:
            print("note: stock PyTorch happened to be invariant in this run (no negative-control failure)")
    print(f"\nsamebits: {'PASS' if ok else 'FAIL'} (bitwise sampler == trainer, 1 unique completion, equal hashes)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
