"""Pins docs/walkthrough.md to the tools: every IR or output snippet in the page is the
real output of the command shown just above it.

A snippet is a fenced block (```mlir or ```text) that follows a ```sh block with only
blank lines between them; the sh block holds one command (lines may end in `\`). The
command runs in a scratch directory in which `tests/` and `docs/` are the repository's,
so the page's relative paths work there and written files (traces) land there. The
snippet must then appear in the command's output:

- its lines, compared without leading and trailing blanks, appear as a run of
  consecutive output lines (FileCheck's CHECK followed by CHECK-NEXTs);
- a line `// ...` (or `...`) ends a run: any number of output lines may come between
  it and the next run, which must come later in the output (a new CHECK);
- a line ending in ` ...` matches an output line that begins with the text before it
  (a long line cut short).

Every ```mlir block of the page must be such a snippet: IR that no command produces
would drift unseen. The script prints one line per failing snippet (page line, the
command, the first line that differs and what the output has there) and exits 1, or
`N snippets from M commands agree` and exits 0.

    python check_page.py docs/walkthrough.md [--root REPO]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

GAP = {"// ...", "..."}
CUT = " ..."
OUTPUT_LANGS = {"mlir", "text"}


@dataclass
class Block:
    lang: str
    line: int  # the page line of the opening fence
    text: list[str]
    section: str


@dataclass
class Snippet:
    command: str
    block: Block


def fenced_blocks(lines: list[str]) -> list[tuple[Block, int]]:
    """(block, index of the page line after its closing fence)."""
    blocks: list[tuple[Block, int]] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        m = re.match(r"^```(\S*)\s*$", line)
        if m is None:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit(f"line {start + 1}: a fenced block that never closes")
        blocks.append((Block(m.group(1), start + 1, body, section), i + 1))
        i += 1
    return blocks


def snippets(page: list[str]) -> tuple[list[Snippet], list[str]]:
    found: list[Snippet] = []
    errors: list[str] = []
    blocks = fenced_blocks(page)
    for k, (block, after) in enumerate(blocks):
        if block.lang not in OUTPUT_LANGS:
            continue
        prev = blocks[k - 1] if k > 0 else None
        adjacent = prev is not None and prev[0].lang == "sh" and all(
            not page[j].strip() for j in range(prev[1], block.line - 1))
        if not adjacent:
            if block.lang == "mlir":
                errors.append(f"line {block.line}: an mlir block with no ```sh command right above it: "
                              "every IR snippet of the page must be the output of a command")
            continue
        command = " ".join(part.rstrip("\\").strip() for part in prev[0].text if part.strip())
        found.append(Snippet(command, block))
    return found, errors


def matches(want: str, got: str) -> bool:
    if want.endswith(CUT):
        return got.startswith(want[: -len(CUT)].rstrip())
    return want == got


def runs_of(text: list[str]) -> list[list[str]]:
    runs: list[list[str]] = [[]]
    for raw in text:
        line = raw.strip()
        if line in GAP:
            runs.append([])
        else:
            runs[-1].append(line)
    return [r for r in runs if r]


def compare(text: list[str], output: list[str]) -> str | None:
    """None when the snippet appears in the output, else what differs."""
    got = [line.strip() for line in output]
    at = 0
    for run in runs_of(text):
        best, best_len = None, -1
        for i in range(at, len(got) - len(run) + 1):
            n = 0
            while n < len(run) and matches(run[n], got[i + n]):
                n += 1
            if n == len(run):
                best = None
                at = i + len(run)
                break
            if n > best_len:
                best, best_len = i, n
        else:
            if best is None:
                return f"the output has fewer lines than the run starting `{run[0]}`"
            have = got[best + best_len] if best + best_len < len(got) else "<end of output>"
            return (f"`{run[best_len]}` is not in the output where it should be"
                    f" (after {best_len} matching line(s)); the output has `{have}`")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page")
    parser.add_argument("--root", default=None, help="the repository (default: the page's folder's parent)")
    args = parser.parse_args()
    page_path = os.path.abspath(args.page)
    root = os.path.abspath(args.root or os.path.join(os.path.dirname(page_path), ".."))
    with open(page_path) as f:
        page = f.read().splitlines()
    found, errors = snippets(page)
    name = os.path.basename(page_path)
    outputs: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="walkthrough-") as scratch:
        for folder in ("tests", "docs"):
            os.symlink(os.path.join(root, folder), os.path.join(scratch, folder))
        for snip in found:
            if snip.command not in outputs:
                done = subprocess.run(["bash", "-o", "pipefail", "-c", snip.command], cwd=scratch,
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    errors.append(f"line {snip.block.line} ({snip.block.section}): `{snip.command}` exited "
                                  f"{done.returncode}: {done.stderr.strip()[-500:]}")
                    outputs[snip.command] = []
                    continue
                outputs[snip.command] = done.stdout.splitlines()
            if not outputs[snip.command]:
                continue
            diff = compare(snip.block.text, outputs[snip.command])
            if diff is not None:
                errors.append(f"line {snip.block.line} ({snip.block.section}): the snippet differs from "
                              f"`{snip.command}`: {diff}")
    for error in errors:
        print(f"{name}:{error}")
    if errors:
        return 1
    print(f"{name}: {len(found)} snippets from {len(outputs)} commands agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
