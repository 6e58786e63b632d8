"""One line per node of a Chakra trace file, for docs/walkthrough.md:

    python tests/lit/docs/walkthrough/Inputs/show_trace.py traces/mlp.0.et

prints `id TYPE name data=[...] ctrl=[...] attr=value ...`, with a collective's
comm_type by its Chakra name. Durations are left out: they come from the cost model's
hardware file, which the walkthrough does not pin.
"""

import sys

from stagec.runtime.chakra.schema import CommType, NodeType
from stagec.runtime.chakra.wire import read_trace


def show(path: str) -> None:
    for node in read_trace(path).nodes:
        attrs = []
        for a in node.attrs:
            value = CommType(a.value).name if a.name == "comm_type" else a.value
            attrs.append(f"{a.name}={value}")
        deps = f"data={list(node.data_deps)} ctrl={list(node.ctrl_deps)}"
        print(" ".join([str(node.id), NodeType(node.type).name, node.name, deps, *attrs]))


if __name__ == "__main__":
    for path in sys.argv[1:]:
        show(path)
