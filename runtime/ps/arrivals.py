"""When each cluster's next push may reach the master: what lets the grace window close
early (di-ps.md §3.2 steps 3-4; master.py).

The window is there for clusters that finish at about the same time; holding it open
for a cluster that cannot make it costs the round's clusters the whole grace time. A
cluster is predicted from what the master saw of it: when it took its current chunk
(`chunk`), how long its last chunk trained (from `chunk` to `push_request`), how long
its last push took from request to commit, and how much its training time varies from
chunk to chunk. Times are `time.monotonic()` seconds, given by the caller.
"""

from __future__ import annotations

__all__ = ["Arrivals"]


class Arrivals:
    # Until two chunks of a cluster were seen, one expected to arrive within this share
    # of its training time after the window's end may still make it.
    FIRST_JITTER = 0.1
    # After, within SPREAD times the moving mean of the change between its chunks (for
    # normal noise about 3.4 standard deviations), but never less than MIN_JITTER of its
    # training time.
    SPREAD = 3.0
    MIN_JITTER = 0.01
    EMA = 0.2  # weight of the newest change in the moving mean

    def __init__(self):
        self.chunk_taken: dict[int, float] = {}
        self.training_s: dict[int, float] = {}
        self.jitter_s: dict[int, float] = {}  # moving mean of |change| between chunks
        self.push_s: dict[int, float] = {}  # its last push: request to commit

    def took_chunk(self, cluster: int, now: float) -> None:
        self.chunk_taken[cluster] = now

    def requested_push(self, cluster: int, now: float) -> None:
        """`cluster` asks to push: the chunk it took has trained."""
        taken = self.chunk_taken.pop(cluster, None)
        if taken is None:
            return
        seconds, last = now - taken, self.training_s.get(cluster)
        if last is not None:
            change, old = abs(seconds - last), self.jitter_s.get(cluster)
            self.jitter_s[cluster] = change if old is None else old + self.EMA * (change - old)
        self.training_s[cluster] = seconds

    def committed_push(self, cluster: int, seconds: float) -> None:
        """`cluster`'s push was committed `seconds` after its request."""
        self.push_s[cluster] = seconds

    def margin(self, cluster: int) -> float:
        training = self.training_s[cluster]
        jitter = self.jitter_s.get(cluster)
        if jitter is None:
            return self.FIRST_JITTER * training
        return max(self.SPREAD * jitter, self.MIN_JITTER * training)

    def may_arrive_by(self, cluster: int, end: float) -> bool:
        """Whether `cluster`, training a chunk, may commit a push by `end`; unknown (between
        chunks, or before its first push) counts as yes."""
        taken, training = self.chunk_taken.get(cluster), self.training_s.get(cluster)
        if taken is None or training is None:
            return True
        return taken + training + self.push_s.get(cluster, 0.0) - self.margin(cluster) <= end
