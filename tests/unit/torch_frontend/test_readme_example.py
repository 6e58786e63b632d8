"""The README's torch frontend example runs as written and prints a folded program."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_readme_python_example_runs():
    section = (ROOT / "README.md").read_text().split("## PyTorch models", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.+?)\n```", section, re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    text = out.getvalue()
    assert 'stg.model = "tiny-lm"' in text and "L = 4" in text
    assert text.count("stg.repeat L") == 1 and 'stg.param "layers.weight"' in text
