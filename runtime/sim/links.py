"""A network of point-to-point links, each with its own bandwidth and latency: what a
cross-cluster job's messages cross (Di-PS, di-ps.md §3.1: each cluster reaches the PS
cluster at its own B_ij), which the hierarchical model of network.py cannot say.

Contract: `LinkNetwork` answers `p2p_ns(src, dst, size)` as floor(latency + size / bandwidth)
in ns for a listed (src, dst) pair, the same rule as ASTRA-sim's congestion-unaware
backend for one hop; messages on different links never slow each other (the engine
still runs one communication node per rank at a time). It has no collectives: a
collective on it is a `CollectiveError`. It is read from `<prefix>.links.json` beside
a trace directory's files, which `stagec simulate DIR` uses when no --network is given:

    {"format": "stagec links", "version": 1, "world": 4,
     "links": [[src, dst, bytes_per_second, latency_ns], ...]}

Each entry is one direction; a pair not listed has no link (a message there is an error).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence

from stagec.runtime.sim.network import CollectiveError

LINKS_FILE = "{prefix}.links.json"
FORMAT = "stagec links"


class LinkNetwork:
    """Directed links between ranks, each with a bandwidth (bytes/s) and a latency (ns)."""

    roofline = None  # COMP nodes take their trace duration

    def __init__(self, world: int, links: Iterable[tuple[int, int, float, float]], source: str = "links"):
        if isinstance(world, bool) or not isinstance(world, int) or world < 1:
            raise ValueError(f"{source}: world must be a positive number of ranks (got {world!r})")
        self.world = world
        self.source = source
        self.links: dict[tuple[int, int], tuple[float, float]] = {}
        for entry in links:
            if not isinstance(entry, Sequence) or len(entry) != 4:
                raise ValueError(f"{source}: a link is [src, dst, bytes_per_second, latency_ns], not {entry!r}")
            src, dst, bandwidth, latency = entry
            for rank in (src, dst):
                if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world:
                    raise ValueError(f"{source}: link {entry!r} names rank {rank!r}, not one of 0..{world - 1}")
            if src == dst:
                raise ValueError(f"{source}: link {entry!r} goes from rank {src} to itself")
            if not _number(bandwidth) or not bandwidth > 0 or not math.isfinite(bandwidth):
                raise ValueError(f"{source}: link {entry!r} has bandwidth {bandwidth!r}; give bytes/s > 0")
            if not _number(latency) or not latency >= 0 or not math.isfinite(latency):
                raise ValueError(f"{source}: link {entry!r} has latency {latency!r}; give ns >= 0")
            if (src, dst) in self.links:
                raise ValueError(f"{source}: the link {src} -> {dst} is listed twice")
            self.links[(src, dst)] = (float(bandwidth), float(latency))

    @classmethod
    def from_file(cls, path: str) -> LinkNetwork:
        """Read `<prefix>.links.json` (module docstring); ValueError names what is wrong."""
        try:
            with open(path, encoding="utf-8") as stream:
                doc = json.load(stream)
        except OSError as error:
            raise ValueError(f"{path}: cannot read: {error.strerror or error}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ValueError(f"{path}: not JSON: {error}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != 1:
            raise ValueError(f"{path}: not a links file (format '{FORMAT}', version 1)")
        links = doc.get("links")
        if not isinstance(links, list):
            raise ValueError(f"{path}: 'links' must be a list of [src, dst, bytes_per_second, latency_ns]")
        return cls(doc.get("world"), links, source=os.path.basename(path))

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": 1, "world": self.world,
                "links": [[s, d, b, lat] for (s, d), (b, lat) in sorted(self.links.items())]}

    def p2p_ns(self, src: int, dst: int, size: int) -> int:
        """floor(latency + size / bandwidth) ns for one message on the src -> dst link."""
        link = self.links.get((src, dst))
        if link is None:
            raise CollectiveError(f"{self.source}: no link from rank {src} to rank {dst}; list it in the links file")
        if size < 0:
            raise CollectiveError(f"message size must be >= 0 bytes (got {size})")
        bandwidth, latency = link
        return int(latency + size / bandwidth * 1e9)

    def collective_ns(self, kind: str, size: int, ranks: Sequence[int]) -> int:
        raise CollectiveError(f"{self.source}: a link network times point-to-point messages only, not {kind}; "
                              "simulate collectives on --network/--system or --hardware")

    def describe(self) -> str:
        bandwidths = sorted({b for b, _ in self.links.values()})
        shown = ", ".join(f"{b / 1e6:g} MB/s" for b in bandwidths[:6]) + (", ..." if len(bandwidths) > 6 else "")
        return f"{len(self.links)} point-to-point links among {self.world} ranks ({self.source}): {shown}"


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def write_links(path: str, network: LinkNetwork) -> None:
    """Write `network` as a links file, through a temporary file renamed into place."""
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as stream:
            json.dump(network.to_json(), stream)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
