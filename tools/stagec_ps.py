"""`stagec ps`: Di-PS cross-cluster training (di-ps.md; docs/dips.md).

    stagec ps plan CONFIG [-o OUT.mlir] [--trace DIR]

reads a deployment's YAML CONFIG (runtime/ps/config.py), decides the placement and the
push schedule (runtime/ps/placement.py), prints the ps program (dialects/ps) and, on
stderr, a summary; `--trace DIR` also writes the round as Chakra traces for
`stagec simulate DIR` (runtime/ps/trace.py).

`stagec ps run` is tools/stagec_ps_run.py (the PS runtime's processes). Register with
`add_parser(subcommands)`, call `run(args)`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from stagec.tools.errors import UsageError, finite_number, positive_int, standalone_main


HELP = """\
Di-PS: asynchronous cross-cluster training with a master and slave parameter servers
(docs/dips.md). `plan` turns a deployment's description into the ps program the PS
runtime runs and the simulator times; `run` runs it as processes on loopback
(docs/dips-runtime.md).

examples:
  stagec ps plan examples/ps/tiny4.yaml
  stagec ps plan examples/ps/production9.yaml -o dips.mlir --trace dips-traces
  stagec simulate dips-traces
  stagec ps run examples/ps/tiny4.yaml --mode dips"""

PLAN_HELP = """\
Plan a Di-PS deployment from a YAML CONFIG (docs/dips.md): the PS cluster by the cost
model of the Di-PS paper's §3.1 (argmax_i B_i^T p), the model's layers balanced over the slave
PSs by bytes (LPT), and the master's staggered push schedule (Fig. 5) in the fewest
steps. Prints the ps program (stdout, or -o) and a summary on stderr; --trace DIR
writes one round as Chakra traces (clusters, slaves, master; per-link bandwidths in
<prefix>.links.json) for `stagec simulate DIR`. CONFIG may also be a ps program
(.mlir), e.g. one printed here and edited: it is verified, printed and traced as is.

examples:
  stagec ps plan examples/ps/tiny4.yaml
  stagec ps plan examples/ps/production9.yaml --trace out/dips && stagec simulate out/dips"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="ps_command", metavar="ACTION", required=True)
    plan = actions.add_parser("plan", help="print the ps program of a deployment CONFIG (and its traces)",
                              description=PLAN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    plan.add_argument("config", metavar="CONFIG", help="the deployment's YAML description (docs/dips.md), or a ps "
                      "program (.mlir) as this command prints it")
    plan.add_argument("-o", "--output", metavar="OUT.mlir", help="write the ps program here instead of stdout")
    plan.add_argument("--generic", action="store_true", help="print ops in MLIR's generic form")
    trace = plan.add_argument_group("simulation (issue 19 item 6)")
    trace.add_argument("--trace", metavar="DIR", help="also write one round as Chakra traces into DIR")
    trace.add_argument("--prefix", default="dips", help="the trace files' prefix (default: %(default)s)")
    trace.add_argument("--control-bytes", type=positive_int, default=256, metavar="N",
                       help="bytes of one control message (default: %(default)s)")
    trace.add_argument("--update-rate", type=finite_number, default=None, metavar="BYTES_PER_S",
                       help="how fast a slave applies the penalty and outer step (default: the Di-PS paper's Table 2, "
                            "400 GB on 16 slaves in 110 s: 227 MB/s)")
    trace.add_argument("--latency-us", type=finite_number, default=0.0, metavar="US",
                       help="latency of every cluster-PS link (default: %(default)s)")
    trace.add_argument("--force", action="store_true",
                       help="replace the traces of another job in DIR (e.g. `stagec trace`'s: they share "
                            "comm_group.json); the plan's own traces of the same --prefix are always replaced")
    from stagec.tools import stagec_ps_run

    run_parser = actions.add_parser("run", help="run a deployment: master, slaves and clusters as processes",
                                    description=stagec_ps_run.HELP,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    stagec_ps_run.add_arguments(run_parser)


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser("ps", help="Di-PS cross-cluster training: plan (and run) a deployment",
                                    description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    if args.ps_command == "run":
        from stagec.tools import stagec_ps_run

        return int(stagec_ps_run.run(args) or 0)
    return run_plan(args)


def run_plan(args: argparse.Namespace) -> int:
    from xdsl.printer import Printer

    from stagec.dialects.ps import module_from_plan
    from stagec.runtime.ps.config import PsConfigError, load_plan
    from stagec.tools.output import output_stream

    _check_trace_options(args)
    _check_output_is_not_the_config(args)
    try:
        plan = load_plan(args.config)
    except PsConfigError as error:
        raise UsageError(str(error)) from None
    if args.trace and plan.tokens_per_step <= 0:
        raise UsageError(f"{args.config}: key 'tokens_per_step': --trace needs it (an inner step takes "
                         "tokens_per_step / throughput seconds); give the tokens one inner step consumes")
    module = module_from_plan(plan)
    # The traces are written while the program's output is still a temporary file (or
    # unprinted): a failure in them leaves no -o file, as every other failure does.
    with output_stream(args.output) as stream:
        print(summary(plan), file=sys.stderr)
        if args.trace:
            _write_traces(args, plan)
        Printer(stream=stream, print_generic_format=args.generic).print_op(module)
        stream.write("\n")
    return 0


def _check_output_is_not_the_config(args: argparse.Namespace) -> None:
    """-o naming the CONFIG would replace the user's YAML with the program printed from
    it (a ps program may be rewritten in place: it prints back as it reads)."""
    if not args.output or args.config.endswith(".mlir"):
        return
    try:
        same = os.path.samefile(args.output, args.config)
    except OSError:  # either does not exist (yet): not the same file
        return
    if same:
        raise UsageError(f"-o '{args.output}' is the CONFIG it is planned from; give the ps program another file, "
                         "e.g. dips.mlir")


def _check_trace_options(args: argparse.Namespace) -> None:
    """The --trace options, before anything is planned or written."""
    if not args.trace:
        given = [o for o, v in (("--update-rate", args.update_rate), ("--latency-us", args.latency_us),
                                ("--force", args.force)) if v]
        if given:
            raise UsageError(f"{', '.join(given)} shape{'s' if len(given) == 1 else ''} the traces: give --trace DIR")
        return
    if args.update_rate is not None and not args.update_rate > 0:
        raise UsageError(f"--update-rate {args.update_rate} must be > 0 bytes/s")
    if args.latency_us < 0:
        raise UsageError(f"--latency-us {args.latency_us} must be >= 0")
    if not args.prefix or "/" in args.prefix or args.prefix.startswith("."):
        raise UsageError(f"--prefix '{args.prefix}': a plain file name prefix, e.g. dips")
    if os.path.lexists(args.trace) and not os.path.isdir(args.trace):
        raise UsageError(f"--trace '{args.trace}' is not a directory")


def _write_traces(args: argparse.Namespace, plan) -> None:
    from stagec.runtime.chakra.staging import file_list, previous_output
    from stagec.runtime.ps.trace import TABLE2_UPDATE_BYTES_PER_S, TraceError, TraceOptions, write_traces

    # Another job's traces there (`stagec trace`'s, or a plan's of another prefix) share
    # comm_group.json, which the plan's would replace: refused, as `stagec trace` refuses.
    try:
        previous, _ = previous_output(args.trace)
    except OSError as error:  # a file where a directory of the path should be
        raise UsageError(f"--trace '{args.trace}': cannot write it: {error.strerror}") from None
    own = [n for n in previous if n.startswith(f"{args.prefix}.")]
    others = [n for n in previous if not n.startswith(f"{args.prefix}.") and (n != "comm_group.json" or not own)]
    if others and not args.force:
        raise UsageError(f"--trace '{args.trace}' holds the traces of another job ({file_list(others)}): give --force "
                         "to replace them (other files stay), or another directory")
    for name in others:
        os.unlink(os.path.join(args.trace, name))
    options = TraceOptions(control_bytes=args.control_bytes, latency_ns=args.latency_us * 1000.0,
                           slave_update_bytes_per_s=args.update_rate or TABLE2_UPDATE_BYTES_PER_S,
                           prefix=args.prefix)
    try:
        report = write_traces(plan, args.trace, options)
    except TraceError as error:
        raise UsageError(f"{args.config}: {error}") from None
    print(f"traces: {report.world} ranks ({len(plan.clusters)} clusters, {plan.num_slaves} slaves, master), "
          f"{report.nodes} nodes in {args.trace}; time them with `stagec simulate {args.trace}`", file=sys.stderr)


def summary(plan) -> str:
    """What `stagec ps plan` decided, for people: the PS cluster with every score, the
    layers and bytes of each slave, the number of push steps and their bound."""
    from stagec.runtime.ps.placement import effective_throughput, ps_cluster_scores, push_steps_bound, slave_loads
    from stagec.tools.stagec_stats import human_bytes

    scores = ps_cluster_scores(plan.bandwidth, [effective_throughput(c) for c in plan.clusters])
    names = [c.name for c in plan.clusters]
    lines = [f"PS cluster: {names[plan.ps_cluster]} (B_i^T p, bytes/s x tokens/s: "
             + ", ".join(f"{n} {s:.4g}" for n, s in zip(names, scores)) + ")"]
    loads = slave_loads([layer.nbytes for layer in plan.layers], plan.slave_of_layer, plan.num_slaves)
    total = sum(loads)
    lines.append(f"{len(plan.layers)} layers, {human_bytes(total)} on {plan.num_slaves} slaves (LPT by bytes):")
    for s in range(plan.num_slaves):
        mine = [layer.prefix for layer, owner in zip(plan.layers, plan.slave_of_layer) if owner == s]
        shown = ", ".join(mine[:3]) + (f", ... ({len(mine)})" if len(mine) > 3 else "")
        plural = "" if len(mine) == 1 else "s"
        lines.append(f"  slave {s}: {len(mine)} layer{plural}, {human_bytes(loads[s])}" + (f": {shown}" if mine else ""))
    idle = [s for s in range(plan.num_slaves) if s not in plan.slave_of_layer]
    if idle:
        lines.append(f"  ({len(idle)} of {plan.num_slaves} slaves hold no layer: a slave serves whole layers and "
                     f"the model has {len(plan.layers)}; `slaves: {plan.num_slaves - len(idle)}` does the same)")
    bound = push_steps_bound(len(plan.clusters), plan.slave_of_layer)
    most = max(plan.slave_of_layer.count(s) for s in range(plan.num_slaves))
    lines.append(f"push schedule: {len(plan.push_schedule)} steps "
                 f"(fewest possible: max(L = {len(plan.layers)}, k x max layers per slave = "
                 f"{len(plan.clusters)} x {most}) = {bound})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec ps", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
