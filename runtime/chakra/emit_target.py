"""`stagec-opt ... -t chakra -o DIR`: Chakra traces as a stagec-opt target.

    stagec-opt step.mlir --pass-pipeline='builtin.module(stg-instantiate{B=8 S=4096})' -t chakra -o traces/
    stagec-opt step.mlir -p 'stg-instantiate{B=8 S=4096}' -t 'chakra{iterations=2 optimizer=false prefix=llama json=true}' -o traces/

The module is what the passes leave: sharded, collectives matched, optionally
pipelined, scheduled (docs/scheduled-ir.md: the target fuses, groups, buckets and
reuses nothing of its own), its sizes bound by stg-instantiate. `-o` names the directory; the
target writes `<prefix>.<rank>.et` and `comm_group.json` there (runtime/chakra/emit.py)
and prints one line per rank class to the output stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar, Self

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from stagec.runtime.chakra.emit import EmitError, EmitOptions, emit_traces, write_json_dumps

_FLAGS = {"optimizer", "json"}
_STRINGS = {"dir", "prefix", "hardware", "profile"}
_INTS = {"iterations", "workers"}


class ChakraTargetError(DiagnosticException):
    """The module cannot be emitted (stagec-opt reports it as the target failing)."""


@dataclass(frozen=True)
class ChakraTarget(Target):
    """Chakra execution traces: <prefix>.<rank>.et per rank and comm_group.json in -o DIR"""

    name: ClassVar[str] = "chakra"

    dir: str = ""
    prefix: str = "trace"
    iterations: int = 1
    optimizer: bool = True
    hardware: str = "h100-sxm"
    profile: str = ""
    workers: int = 0
    json: bool = False

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        options: dict = {}
        for key, values in spec.parameters.items():
            name = key.replace("-", "_")
            if len(values) != 1:
                raise ValueError(f"target option '{key}' takes one value")
            value = values[0]
            if name in _FLAGS:
                if not isinstance(value, bool):
                    raise ValueError(f"target option '{key}' is true or false")
                options[name] = value
            elif name in _STRINGS:
                options[name] = str(value)
            elif name in _INTS:
                if type(value) is not int:
                    raise ValueError(f"target option '{key}' is an integer")
                options[name] = value
            else:
                raise ValueError(f"unknown chakra target option '{key}'")
        return cls(**options)

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        return ArgSpec(self.name, {})

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from stagec.runtime.cost import CostModel

        if not self.dir:
            raise ChakraTargetError("the chakra target writes a directory: give it with -o DIR (or chakra{dir=DIR})")
        options = EmitOptions(
            iterations=self.iterations, optimizer=self.optimizer, prefix=self.prefix, workers=self.workers,
        )
        try:
            cost = CostModel(self.hardware, self.profile or None)
            report = emit_traces(module, self.dir, cost=cost, options=options)
            if self.json:
                write_json_dumps(self.dir, self.prefix, report.world)
        except (EmitError, OSError, ValueError) as error:
            raise ChakraTargetError(str(error)) from None
        for program in report.programs:
            ranks = program.ranks
            span = f"{ranks[0]}-{ranks[-1]}" if len(ranks) > 1 else str(ranks[0])
            output.write(f"// chakra: @{program.name} ranks {span}: {len(program)} nodes per rank\n")
        output.write(f"// chakra: {report.files} traces and comm_group.json ({len(report.groups)} groups) in {self.dir}\n")
