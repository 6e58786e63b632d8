"""Step time of `stagec run` with FSDP (and with DeepCompile's prefetch) against PyTorch
FSDP2 on the same model, ranks and batch, measured side by side (issue 18).

    python bench/run_vs_fsdp2.py [--ranks 4] [--steps 6] [--rounds 2] [--json PATH]
        [--hidden 256 --layers 4 --seq 256 --seqs-per-rank 2 --vocab 32000]

The model is a tiny Llama (the issue's scale point: hidden 256, 4 layers, seq 256, 2
sequences per rank; 4 heads of 64, intermediate 1024, vocab 32000 unless given), fp32,
AdamW at lr 1e-3. Both sides start from the runtime's seeded initial weights
(runtime/exec/weights.py) and read the same batches (runtime/exec/data.py), so their
losses agree too (printed: the largest relative difference per step).

- stagec: `stagec run -n RANKS --fsdp RANKS` (FSDP's units, stg-fsdp-units) and with
  `--prefetch` (stg-fully-shard + stg-prefetch), MPI through csrc.
- FSDP2: transformers' LlamaForCausalLM, `fully_shard` on each decoder layer and then
  the root (reshard_after_forward=True), gloo on localhost, one process per rank,
  torch.optim.AdamW; one torch thread per rank as stagec's ranks have.

The configurations run one after another, `--rounds` times in alternation (this
machine is shared: alternating spreads its load over both), and each one's step time
is the median over every round of its steps after the first. The ratio is stagec's
median over FSDP2's: the goal is at most 1.0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_config(args) -> dict:
    return {"model_type": "llama", "hidden_size": args.hidden, "num_hidden_layers": args.layers,
            "num_attention_heads": args.hidden // 64, "num_key_value_heads": args.hidden // 64,
            "intermediate_size": 4 * args.hidden, "vocab_size": args.vocab, "rope_theta": 10000.0,
            "rms_norm_eps": 1e-5, "max_position_embeddings": max(2048, args.seq), "tie_word_embeddings": False}


# -- stagec --------------------------------------------------------------------------------


def run_stagec(config_path: str, args, prefetch: bool) -> dict:
    out = tempfile.mktemp(suffix=".json")
    command = [sys.executable, "-m", "stagec.tools.stagec_cli", "run", "-n", str(args.ranks), "--fsdp", str(args.ranks),
               "--model", config_path, "--seq", str(args.seq), "--micro-batch", str(args.seqs_per_rank),
               "--steps", str(args.steps), "--lr", str(args.lr), "--quiet", "--json", out]
    if prefetch:
        command.append("--prefetch")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"run_vs_fsdp2: stagec run failed:\n{done.stdout}\n{done.stderr}")
    with open(out) as f:
        result = json.load(f)
    os.unlink(out)
    return {"losses": result["losses"], "step_seconds": result["step_seconds"]}


# -- FSDP2 ---------------------------------------------------------------------------------


def _fsdp2_rank(rank: int, world: int, config: dict, args_dict: dict, init_file: str, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    from stagec.frontends.templates import load_config
    from stagec.runtime.exec import Batches, initial_weight

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    seq, per_rank, steps = args_dict["seq"], args_dict["seqs_per_rank"], args_dict["steps"]
    hf = LlamaConfig(**{k: v for k, v in config.items() if k != "model_type"}, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = LlamaForCausalLM(hf).float()
    # the runtime's initial weights: template names stack the layers ([L, ...])
    layers = config["num_hidden_layers"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            match = re.match(r"model\.layers\.(\d+)\.(.*)", name)
            if match:
                stacked = initial_weight(f"model.layers.{match.group(2)}", (layers, *p.shape))
                p.copy_(stacked[int(match.group(1))])
            else:
                p.copy_(initial_weight(name, tuple(p.shape)))
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args_dict["lr"], betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    batches = Batches(load_config(config), {"input_ids": (world * per_rank, seq)})
    losses, seconds = [], []
    for step in range(steps):
        data = batches.batch(step)
        ids = data["input_ids"][rank * per_rank:(rank + 1) * per_rank]
        labels = data["labels"][rank * per_rank:(rank + 1) * per_rank]
        dist.barrier()
        start = time.perf_counter()
        logits = model(input_ids=ids).logits
        # the mean over this rank's tokens; FSDP2 averages the gradients over the ranks,
        # so the step is that of the global mean
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total = loss.detach().clone()
        dist.all_reduce(total)
        seconds.append(time.perf_counter() - start)
        losses.append(total.item() / world)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"losses": losses, "step_seconds": seconds}, f)
    dist.destroy_process_group()


def run_fsdp2(config: dict, args) -> dict:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        init, out = os.path.join(tmp, "init"), os.path.join(tmp, "out.json")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        mp.spawn(_fsdp2_rank, args=(args.ranks, config, vars(args), init, out), nprocs=args.ranks, join=True)
        with open(out) as f:
            return json.load(f)


# -- the comparison ------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--seqs-per-rank", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--no-prefetch", action="store_true", help="leave out the stagec --prefetch configuration")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    config = model_config(args)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
        config_path = f.name
    runs = {"fsdp2": lambda: run_fsdp2(config, args), "stagec fsdp": lambda: run_stagec(config_path, args, False)}
    if not args.no_prefetch:
        runs["stagec fsdp+prefetch"] = lambda: run_stagec(config_path, args, True)
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for round_ in range(args.rounds):
        for name, run in runs.items():
            result = run()
            results[name].append(result)
            print(f"round {round_ + 1} {name:>22}: steps {', '.join(f'{s:.2f}' for s in result['step_seconds'])} s",
                  flush=True)
    os.unlink(config_path)
    summary = {}
    for name, rounds in results.items():
        times = [t for r in rounds for t in r["step_seconds"][1:]]
        summary[name] = {"median_step_seconds": statistics.median(times), "losses": rounds[0]["losses"]}
    base = summary["fsdp2"]["median_step_seconds"]
    print(f"\n{args.ranks} ranks, hidden {args.hidden}, {args.layers} layers, seq {args.seq}, "
          f"{args.seqs_per_rank} seqs/rank, vocab {args.vocab}, fp32 AdamW; median over {args.rounds} round(s) "
          f"of {args.steps - 1} steps")
    for name, s in summary.items():
        loss_gap = max(abs(a - b) / abs(b) for a, b in zip(s["losses"], summary["fsdp2"]["losses"]))
        s["ratio_to_fsdp2"] = s["median_step_seconds"] / base
        s["max_relative_loss_difference_to_fsdp2"] = loss_gap
        print(f"  {name:>22}: {s['median_step_seconds']:.3f} s/step  ratio {s['ratio_to_fsdp2']:.2f}  "
              f"loss vs fsdp2 {loss_gap:.1e}")
    if args.json:
        tmp = f"{args.json}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({"config": config, "ranks": args.ranks, "seq": args.seq, "seqs_per_rank": args.seqs_per_rank,
                       "steps": args.steps, "rounds": args.rounds, "results": summary}, f, indent=1)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
