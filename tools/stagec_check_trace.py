"""`stagec check-trace`: check a directory of Chakra traces before a simulator reads it.

The checks are runtime/chakra/check.py's; this module parses the command line and
prints the report. Register it in a CLI with `add_parser(subcommands)` and call
`run(args)` for the parsed arguments; `main()` runs it on its own
(`python -m stagec.tools.stagec_check_trace`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from stagec.tools.errors import UsageError, non_negative_int, positive_int, standalone_main

HELP = """\
Check the Chakra execution traces in DIR - every <prefix>.<rank>.et and the
communicator groups in comm_group.json - for what ASTRA-sim crashes on and for what
it silently gets wrong while exiting 0 (docs/chakra.md):

  files      ranks 0..N-1 contiguous; records framed by a varint32 length > 0; record 0 a
             GlobalMetadata; every node well-formed
  nodes      unique ids; data/ctrl deps naming nodes of the same file; no dependency
             cycle; no METADATA_NODE or INVALID_NODE
  attributes integers where ASTRA-sim reads integers (no float or string), a string
             pg_name, is_cpu_op false on communication nodes; the attributes each
             node kind needs (comm_type/comm_size; comm_dst or comm_src, comm_tag,
             comm_size); no collective ASTRA-sim aborts on (REDUCE, GATHER, SCATTER,
             REDUCE_SCATTER_BLOCK, BARRIER)
  groups     pg_name "" / "0" (all ranks) or a key of comm_group.json that has this rank
  across     every send has a recv on (src, dst, tag, size) and vice versa; each
  ranks      group's members issue the same collective sequence (type, size), in node
             id order

Each defect is printed as `FILE: node ID 'NAME': what is wrong, what would be right`
and the exit code is 1. A clean trace prints each rank's node counts and its bytes
per collective type and send/recv (identical ranks grouped), or with --json:
  {"ranks": {"0": {"nodes": N, "COMP_NODE": N, ..., "ALL_GATHER": {"count": C,
   "bytes": B}, ..., "SEND": {"count": C, "bytes": B}, "RECV": {...}}, ...}}
(a key appears when its count is not zero).

examples:
  stagec check-trace traces/      (written by `stagec trace --model llama3-8b --tp 8 --batch 8 --seq 4096 --out traces/`)
  stagec check-trace traces/ --prefix trace --json
  stagec check-trace traces/ --jobs 4"""




MAX_DEFECTS = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="the directory the traces are in")
    parser.add_argument("--prefix", metavar="P",
                        help="check P.<rank>.et (default: the one prefix of the .et files in DIR)")
    parser.add_argument("--json", action="store_true", help="print the per-rank counts as JSON instead of a table")
    parser.add_argument("--jobs", type=positive_int, metavar="N",
                        help="worker processes for the per-file checks (default: one per CPU it may use)")
    parser.add_argument("--max-defects", type=non_negative_int, default=MAX_DEFECTS, metavar="N",
                        help="print the first N defects and count the rest, as gcc's -fmax-errors (one bad "
                             "comm_group.json makes a defect of every node that names a group); 0: all "
                             "(default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_parser(subcommands) -> argparse.ArgumentParser:
    """Add `check-trace` to an argparse subcommand set (`parser.add_subparsers()`)."""
    parser = subcommands.add_parser(
        "check-trace",
        help="check Chakra traces for what ASTRA-sim crashes on or silently gets wrong",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> None:
    """Print the report; exits with status 1 (SystemExit) when there are defects."""
    from stagec.runtime.chakra.check import TraceDirError, check_trace
    from stagec.tools.progress import Progress

    try:
        with Progress(args.quiet) as progress:
            report = check_trace(args.directory, args.prefix, jobs=args.jobs, progress=progress.task("checking traces"))
    except TraceDirError as error:
        raise UsageError(str(error)) from None
    if not report.ok:
        shown = report.defects if not args.max_defects else report.defects[:args.max_defects]
        for defect in shown:
            print(defect)
        if len(shown) < len(report.defects):
            print(f"... and {len(report.defects) - len(shown)} more (--max-defects 0 prints every one)")
        sys.stdout.flush()  # the defects first, then the summary line on stderr
        print(f"check-trace: {len(report.defects)} defect(s) in {report.prefix}.*.et ({len(report.ranks)} rank file(s)) "
              f"in {args.directory}", file=sys.stderr)
        raise SystemExit(1)
    if args.json:
        json.dump(report.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        _print_table(report)


def rank_ranges(ranks: Sequence[int]) -> str:
    """"0-7, 9, 12-15" for sorted ranks."""
    parts = []
    start = prev = ranks[0]
    for r in list(ranks[1:]) + [None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ", ".join(parts)


def _human_bytes(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _print_table(report) -> None:
    from rich.console import Console
    from rich.table import Table

    from stagec.runtime.chakra.schema import CommType, NodeType

    groups: dict[str, list[int]] = {}  # a rank's stats as canonical JSON -> the ranks that have them
    stats_of: dict[str, dict] = {}
    for rank in sorted(report.ranks):
        stats = report.ranks[rank]
        key = json.dumps(stats, sort_keys=True)
        groups.setdefault(key, []).append(rank)
        stats_of[key] = stats
    keys = set()
    for stats in stats_of.values():
        keys.update(stats)
    node_columns = [t.name for t in NodeType if t.name in keys]
    comm_columns = [t.name for t in CommType if t.name in keys] + [k for k in ("SEND", "RECV") if k in keys]

    # The summary names a path of any length: a table title would wrap it at the table's width.
    print(f"{report.prefix}.*.et in {report.directory}: {len(report.ranks)} ranks, no defects")
    table = Table()
    table.add_column("ranks")
    table.add_column("nodes", justify="right")
    for name in node_columns:
        table.add_column(name.removesuffix("_NODE"), justify="right")
    for name in comm_columns:
        table.add_column(name.replace("_", " ").lower(), justify="right")
    for key, ranks in sorted(groups.items(), key=lambda kv: kv[1][0]):
        stats = stats_of[key]
        row = [rank_ranges(ranks), f"{stats['nodes']:,}"]
        row += [f"{stats.get(n, 0):,}" for n in node_columns]
        for name in comm_columns:
            entry = stats.get(name)
            row.append(f"{entry['count']:,} x, {_human_bytes(entry['bytes'])}" if entry else "")
        table.add_row(*row)
    Console(file=sys.stdout, width=max(120, 24 + 18 * (len(node_columns) + len(comm_columns)))).print(table)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec check-trace", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
