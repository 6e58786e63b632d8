"""Writing a benchmark's result: whole or not at all, as the tools write their files."""

from __future__ import annotations

import json
import os


def write_json(path: str, doc: dict) -> None:
    """`doc` as indented JSON at `path` (folders made), through a temporary name."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as stream:
        json.dump(doc, stream, indent=2)
        stream.write("\n")
    os.replace(temporary, path)
