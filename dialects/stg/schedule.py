"""The scheduled form of stg (docs/scheduled-ir.md): what the scheduling passes decide
and every backend - Chakra emission, the simulator, the runtime - reads one-to-one.

- In a function marked `stg.scheduled`, op order is issue order.
- Each communication and copy op names its stream: `stream "tp"` (one stream per
  communicator group, named by its mesh axes in mesh order), `"send:pp=1"` /
  `"recv:pp=0"` (one per peer and direction), `"copy"` (host <-> device).
- Asynchronous ops return a `!stg.token`; the `stg.wait` that consumes it is where the
  compute stream waits for them.
- A group of ops issued as one is one `stg.group`: einsums fused into one GEMM kernel,
  or collectives of one kind over one group coalesced into one call (an FSDP unit's
  flat-parameter all-gather, a gradient bucket):

    %q, %k, %v = stg.group {
      %0 = stg.einsum "bsh,hd->bsd" %x, %wq : ...
      %1 = stg.einsum "bsh,hd->bsd" %x, %wk : ...
      %2 = stg.einsum "bsh,hd->bsd" %x, %wv : ...
      stg.yield %0, %1, %2 : T, T, T
    } : T, T, T

    %a, %b = stg.group async stream "fsdp" {
      %0 = stg.all_gather %w1 on @m [fsdp] : ...
      %1 = stg.all_gather %w2 on @m [fsdp] : ...
      stg.yield %0, %1 : T1, T2
    } : !stg.token<T1>, !stg.token<T2>

  The body runs once; the group's results are what it yields (with `async`, tokens
  carrying them). A `ready` group of collectives (a gradient bucket) is issued as soon
  as its inputs are final - by the frameworks' backward hooks - not when the compute
  stream reaches its place. Its members are compute ops (and views of their operands), or
  synchronous collectives of one kind over the same axes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation, Region
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, region_def, var_result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import TensorType, TokenType
from stagec.dialects.stg.structure import terminator

SCHEDULED = "stg.scheduled"  # the unit attribute on a func.func in the scheduled form
COPY_STREAM = "copy"


def collective_stream(axes: Sequence[str], mesh_order: Sequence[str], among: Sequence[int] | None = None) -> str:
    """The stream of a communicator group: its axes in mesh order ("dp,tp"); a
    stage-subset group (stg.all_reduce_stages) adds its coordinates ("pp[0,3]")."""
    ordered = [a for a in mesh_order if a in axes] + [a for a in axes if a not in mesh_order]
    name = ",".join(ordered)
    return f"{name}[{','.join(map(str, among))}]" if among is not None else name


def p2p_stream(direction: str, axis: str, peer: int) -> str:
    """One stream per peer and direction, as NCCL orders a pair's sends (and recvs)."""
    return f"{direction}:{axis}={peer}"


def print_stream(printer: Printer, op: Operation) -> None:
    stream = op.properties.get("stream")
    if isinstance(stream, StringAttr):
        printer.print_string(f' stream "{stream.data}"')


def parse_stream(parser: Parser) -> dict[str, Attribute]:
    if parser.parse_optional_keyword("stream") is None:
        return {}
    return {"stream": StringAttr(parser.parse_str_literal(" (the stream's name)"))}


def stream_of(op: Operation) -> str | None:
    stream = op.properties.get("stream")
    return stream.data if isinstance(stream, StringAttr) else None


@irdl_op_definition
class GroupOp(IRDLOperation):
    """Ops issued as one: one GEMM kernel, or one coalesced collective (module doc)."""

    name = "stg.group"

    outputs = var_result_def(TensorType | TokenType)
    body = region_def("single_block")
    is_async = opt_prop_def(UnitAttr, prop_name="async")
    stream = opt_prop_def(StringAttr)
    # issued as soon as its inputs are final, by the frameworks' backward hooks (a DDP or
    # ZeRO gradient bucket), not when the compute stream reaches its place
    ready = opt_prop_def(UnitAttr)

    def __init__(self, body: Region, *, is_async: bool = False, stream: str | None = None, ready: bool = False):
        yielded = terminator(body)
        types = [v.type for v in yielded.values] if yielded is not None else []
        if is_async:
            types = [TokenType(t) for t in types]
        props: dict[str, Attribute] = {}
        if is_async:
            props["async"] = UnitAttr()
        if stream is not None:
            props["stream"] = StringAttr(stream)
        if ready:
            props["ready"] = UnitAttr()
        super().__init__(result_types=[types], regions=[body], properties=props)

    def members(self) -> list[Operation]:
        """The ops of the body that do work (not views, not the terminator)."""
        return [op for op in self.body.block.ops if _does_work(op.__class__)]

    def collective_kind(self) -> type | None:
        """The members' collective class when this is a coalesced collective, else None."""
        from stagec.dialects.stg.comm import CollectiveOp

        members = self.members()
        return type(members[0]) if members and isinstance(members[0], CollectiveOp) else None

    def verify_(self) -> None:
        from stagec.dialects.stg.comm import AllReduceStagesOp, CollectiveOp, CommOp
        from stagec.dialects.stg.cost import CostInterface

        yielded = terminator(self.body)
        if yielded is None:
            raise VerifyException("'stg.group': the body must end with stg.yield")
        want = [v.type for v in yielded.values]
        if self.is_async is not None:
            want = [TokenType(t) for t in want]
        if want != [r.type for r in self.outputs]:
            what = "tokens carrying the yielded values" if self.is_async is not None else "the yielded values"
            raise VerifyException(f"'stg.group': results must be {what}")
        members = self.members()
        if not members:
            raise VerifyException("'stg.group': the body groups no op")
        kind = self.collective_kind()
        if kind is None:
            for op in members:
                if isinstance(op, CommOp) or not isinstance(op, CostInterface) or op.regions:
                    raise VerifyException(
                        f"'stg.group': {op.name} cannot join a compute group: its members are compute ops "
                        "(one kernel) or collectives of one kind over one group (one call)"
                    )
            if self.is_async is not None or self.stream is not None or self.ready is not None:
                raise VerifyException("'stg.group': a compute group runs on the compute stream, in program order")
            return
        first = members[0]
        among = first.coordinates if isinstance(first, AllReduceStagesOp) else None
        for op in members:
            if type(op) is not kind or op.axis_names != first.axis_names or \
                    (among is not None and op.coordinates != among):
                raise VerifyException(
                    f"'stg.group': {op.name} on [{', '.join(getattr(op, 'axis_names', ()))}] cannot join a group of "
                    f"{first.name} on [{', '.join(first.axis_names)}]: one call is one collective kind over one group"
                )
            assert isinstance(op, CollectiveOp)
            if op.is_async is not None or op.properties.get("stream") is not None:
                raise VerifyException("'stg.group': its members are synchronous and name no stream: the group does")

    def print(self, printer: Printer) -> None:
        if self.ready is not None:
            printer.print_string(" ready")
        if self.is_async is not None:
            printer.print_string(" async")
        print_stream(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)
        printer.print_op_attributes(self.attributes)
        if self.outputs:
            printer.print_string(" : ")
            printer.print_list(self.outputs, lambda r: printer.print_attribute(r.type))

    @classmethod
    def parse(cls, parser: Parser) -> GroupOp:
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("ready") is not None:
            props["ready"] = UnitAttr()
        if parser.parse_optional_keyword("async") is not None:
            props["async"] = UnitAttr()
        props |= parse_stream(parser)
        body = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type) \
            if parser.parse_optional_punctuation(":") else []
        return cls.create(result_types=types, regions=[body], properties=props, attributes=attrs)


def _does_work(cls: type) -> bool:
    """Whether a group member of this class does work: not a view, a state read or the
    terminator. Decided once per class (the schedulers and backends ask it of every
    member of every group, and isinstance on xDSL's op classes is slow)."""
    known = _DOES_WORK.get(cls)
    if known is None:
        from stagec.dialects.stg.state import StateOp
        from stagec.dialects.stg.structure import YieldOp

        known = _DOES_WORK[cls] = not issubclass(cls, (*view_ops(), StateOp, YieldOp))
    return known


_DOES_WORK: dict[type, bool] = {}


def view_ops() -> tuple[type, ...]:
    """The ops that make no work of their own - a view or a fill of a tensor - which a
    group, a pass and a backend look through (imported late: they import this module)."""
    global _VIEWS
    if _VIEWS is None:
        from stagec.dialects.stg.comm import LocalSliceOp
        from stagec.dialects.stg.shape_ops import FillOp, ReshapeOp, SplitOp

        _VIEWS = (ReshapeOp, SplitOp, LocalSliceOp, FillOp)
    return _VIEWS


_VIEWS: tuple[type, ...] | None = None
