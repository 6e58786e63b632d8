"""The options that describe a training job, shared by every `stagec` command that
compiles one (summary, stats, trace, simulate, dse): the model, the batch, the
parallel strategy, the training step and the hardware, with one spelling, one
default and one help text each.

A command adds them with `add_job_arguments(parser)` and its own output options
after; the values reach the pipeline through `tools/step.py`.
"""

from __future__ import annotations

import argparse

from stagec.passes.stg_bucket_gradients import DEFAULT_BUCKET_MB
from stagec.tools.errors import non_negative_number, positive_int

STRATEGY_AXES = ("dp", "fsdp", "ep", "cp", "tp", "pp")
DATA_AXES = ("dp", "fsdp", "ep")  # the axes that split the batch
OPTIMIZERS = ("adamw", "adam", "sgd")
DTYPES = ("bf16", "f16", "f32", "f64")
SCHEDULES = ("1f1b", "gpipe", "interleaved-1f1b")
DEFAULT_SEQ = 4096
DEFAULT_HARDWARE = "h100-sxm"

_AXES_HELP = (
    ("dp", "data parallel"),
    ("fsdp", "fully sharded data parallel (ZeRO-3)"),
    ("ep", "expert parallel (MoE)"),
    ("cp", "context parallel (sequence split)"),
    ("tp", "Megatron tensor parallel"),
    ("pp", "pipeline stages (stg-pipeline)"),
)


def add_frontend_arguments(parser: argparse.ArgumentParser) -> None:
    """--frontend template|torch and --torch-factory (docs/torch-frontend.md)."""
    parser.add_argument("--frontend", choices=("template", "torch"), default="template",
                        help="build the model from its template, or import the torch model (transformers' "
                        "LlamaForCausalLM/MixtralForCausalLM/GPT2LMHeadModel for the config, or --torch-factory) "
                        "(default: %(default)s)")
    parser.add_argument("--torch-factory", metavar="MODULE:FACTORY",
                        help="with --frontend torch: FACTORY(config) builds the nn.Module (default: transformers)")


def add_job_arguments(parser: argparse.ArgumentParser, *, model_required: bool = True) -> argparse._ArgumentGroup:
    """The model, batch, strategy, training-step and hardware options; returns the
    "costs and scheduling" group for a command's own options of that kind."""
    from stagec.tools.step import add_phase_arguments

    parser.add_argument("--model", required=model_required, metavar="NAME|config.json",
                        help="a named model config (llama3-70b, gpt3-5b, mixtral-8x7b, ...) or a config.json path")
    parser.add_argument("--batch", type=positive_int, metavar="GLOBAL_BATCH",
                        help="sequences per iteration, every replica and micro-batch together "
                             "(default: one micro-batch per replica)")
    parser.add_argument("--micro-batches", type=positive_int, metavar="M",
                        help="micro-batches per iteration on each replica, instead of --batch "
                             "(batch = M x MBS x replicas)")
    parser.add_argument("--micro-batch", type=positive_int, default=1, metavar="MBS",
                        help="sequences per micro-batch on one data-parallel replica, B in the IR (default: %(default)s)")
    parser.add_argument("--seq", type=positive_int, default=DEFAULT_SEQ, metavar="S",
                        help="sequence length, S in the IR (default: %(default)s)")
    add_frontend_arguments(parser)
    add_phase_arguments(parser)
    strategy = parser.add_argument_group("parallel strategy")
    for axis, what in _AXES_HELP:
        strategy.add_argument(f"--{axis}", type=positive_int, default=1, metavar="N", help=f"{what} size (default: 1)")
    strategy.add_argument("--sp", action="store_true",
                          help="Megatron sequence parallelism: activations between the tensor-parallel layers split "
                               "along the sequence over the tp axis (needs --tp > 1)")
    strategy.add_argument("--zero", type=int, choices=(0, 1, 2), default=0,
                          help="ZeRO stage over the data-parallel ranks (dp, ep, cp): 1 shards the optimizer states as "
                               "Megatron's distributed optimizer, 2 the gradients too (default: %(default)s; fsdp is 3)")
    strategy.add_argument("--schedule", choices=SCHEDULES, default="1f1b",
                          help="pipeline schedule of the micro-batches with --pp (default: %(default)s)")
    strategy.add_argument("--virtual-stages", type=positive_int, default=1, metavar="V",
                          help="model chunks per pipeline rank with --schedule interleaved-1f1b (Megatron's virtual "
                               "pipeline size): the layers are cut into pp x V chunks, rank k holding chunks k, k+pp, "
                               "...; the micro-batches must be a multiple of --pp (default: %(default)s)")
    training = parser.add_argument_group("training step")
    training.add_argument("--recompute", action="store_true", help="recompute each layer's activations in the backward pass")
    training.add_argument("--dtype", default="bf16", choices=DTYPES,
                          help="parameter and activation type; bf16 and f16 keep fp32 gradients and master weights "
                               "(default: %(default)s)")
    training.add_argument("--optimizer", default="adamw", choices=OPTIMIZERS, help="optimizer step (default: %(default)s)")
    training.add_argument("--no-optimizer", action="store_true",
                          help="leave the optimizer step's compute out of the traces, the simulation and the FLOPs "
                               "(what STAGE's traces hold); its states stay in memory and gradients are still reduced")
    training.add_argument("--iterations", type=positive_int, default=1, metavar="N",
                          help="training iterations, chained through the weights (traces and simulation; "
                               "default: %(default)s)")
    costs = parser.add_argument_group("costs and scheduling")
    costs.add_argument("--hardware", default=DEFAULT_HARDWARE, metavar="NAME|FILE",
                       help="the GPU and its links: compute durations, network, and the runtime memory the reserved "
                            "peak adds; h100-sxm, a100-80gb, h200 or a file (default: %(default)s)")
    costs.add_argument("--profile", metavar="FILE", help="measured op times that override the roofline (runtime/cost profile format)")
    costs.add_argument("--bucket-mb", type=non_negative_number, default=DEFAULT_BUCKET_MB, metavar="MB",
                       help="data-parallel gradient all-reduce bucket size in MiB, DDP's bucket_cap_mb; 0: one per "
                            "gradient (default: %(default)s)")
    costs.add_argument("--no-gemm-fusion", action="store_true",
                       help="one GEMM per einsum (default: fuse Q/K/V, gate/up and their gradients as the frameworks do)")
    return costs

