"""The event loop's rules on small hand-built programs, each expected time derived in
the test (runtime/sim/engine.py; ../shared/ASTRA-SIM.md "Compute, overlap,
concurrency" for the rules ASTRA-sim has). Collectives and messages carry their
transfer time directly here: the network model is tested on its own."""

from __future__ import annotations

import pytest

from stagec.runtime.sim.engine import Deadlock, SimulationError, simulate
from stagec.runtime.sim.program import COLL, COMP, COPY, RECV, SEND, Actor, Collective, PointToPoint, SimProgram
from stagec.runtime.sim.report import actor_report


class Job:
    """Actors built node by node: `comp`, `coll`, `send`, `recv`, `copy` return the node."""

    def __init__(self, ranks: int):
        self.actors = [Actor(r, SimProgram(f"rank{r}", labels=["n"]), [r]) for r in range(ranks)]

    def _add(self, rank, kind, deps, nanos=0, resolved=None):
        actor = self.actors[rank]
        ref = -1
        if resolved is not None:
            ref = len(actor.comm)
            actor.comm.append(resolved)
            actor.program.refs.append(("test", ref))
        return actor.program.add(kind, deps, nanos=nanos, comm=ref)

    def comp(self, rank, nanos, deps=()):
        return self._add(rank, COMP, deps, nanos)

    def copy(self, rank, nanos, deps=()):
        return self._add(rank, COPY, deps, nanos)

    def coll(self, rank, nanos, members, deps=(), key="g", what=("all_reduce", 1)):
        return self._add(rank, COLL, deps, resolved=Collective(key, frozenset(members), nanos, str(key), what))

    def send(self, rank, peer, nanos, tag=0, deps=()):
        return self._add(rank, SEND, deps, resolved=PointToPoint(peer, tag, nanos, peer))

    def recv(self, rank, peer, nanos, tag=0, deps=()):
        return self._add(rank, RECV, deps, resolved=PointToPoint(peer, tag, nanos, peer))

    def run(self):
        self.times = simulate(self.actors)
        return self.times

    def end(self, rank, node):
        return self.times[rank].end[node]


def test_chained_compute_adds():
    job = Job(1)
    a = job.comp(0, 100)
    b = job.comp(0, 50, deps=[a])
    job.run()
    assert (job.end(0, a), job.end(0, b)) == (100, 150)


def test_independent_compute_nodes_share_one_engine():
    # two ready compute nodes: one compute engine, lowest id first: 0-30, 30-70
    job = Job(1)
    a = job.comp(0, 30)
    b = job.comp(0, 40)
    job.run()
    assert (job.times[0].start[b], job.end(0, b), job.end(0, a)) == (30, 70, 30)


def test_collective_overlaps_independent_compute_and_adds_when_chained():
    # ASTRA-SIM.md: an all-reduce independent of a 100 us compute node finishes at the
    # max of the two; a chained one at their sum.
    job = Job(1)
    c = job.comp(0, 100_000)
    r = job.coll(0, 60_000, {0})
    job.run()
    assert job.times[0].finish == 100_000 and job.end(0, r) == 60_000
    job = Job(1)
    c = job.comp(0, 100_000)
    r = job.coll(0, 60_000, {0}, deps=[c])
    job.run()
    assert job.end(0, r) == 160_000


def test_communication_of_one_rank_is_serialised():
    # two independent collectives on different groups: one communication engine, so
    # 30 then 40 (ASTRA-SIM.md: one communication node in flight per rank)
    job = Job(1)
    a = job.coll(0, 30, {0}, key="tp")
    b = job.coll(0, 40, {0}, key="dp")
    job.run()
    assert (job.end(0, a), job.times[0].start[b], job.end(0, b)) == (30, 30, 70)


def test_collective_starts_when_the_last_member_issues_it():
    # rank 1 computes 100 first: both ranks' all-reduce runs 100..100+25
    job = Job(2)
    r0 = job.coll(0, 25, {0, 1})
    c1 = job.comp(1, 100)
    r1 = job.coll(1, 25, {0, 1}, deps=[c1])
    job.run()
    assert (job.times[0].start[r0], job.end(0, r0), job.end(1, r1)) == (0, 125, 125)


def test_collectives_match_in_issue_order_per_group():
    # two all-reduces on one group; rank 0 issues the first at 0 and its engine is held
    # until the first ends; rank 1 issues it at 50 (after 50 ns of compute): the first
    # runs 50..55 on both, both issue the second at 55: 55..60.
    job = Job(2)
    a0 = job.coll(0, 5, {0, 1})
    b0 = job.coll(0, 5, {0, 1})
    w = job.comp(1, 50)
    a1 = job.coll(1, 5, {0, 1}, deps=[w])
    b1 = job.coll(1, 5, {0, 1}, deps=[w])
    job.run()
    assert (job.end(0, a0), job.end(1, a1), job.end(0, b0), job.end(1, b1)) == (55, 55, 60, 60)


def test_message_arrives_after_the_send_and_a_late_recv_ends_when_posted():
    # rank 0: 100 compute, then a 20 ns send; rank 1's recv posted at 0 ends at 120.
    job = Job(2)
    c = job.comp(0, 100)
    s = job.send(0, 1, 20, deps=[c])
    r = job.recv(1, 0, 20)
    job.run()
    assert (job.end(0, s), job.end(1, r)) == (120, 120)
    # rank 1 computes until 200 first: the message came at 120, the recv ends at 200.
    job = Job(2)
    c = job.comp(0, 100)
    s = job.send(0, 1, 20, deps=[c])
    w = job.comp(1, 200)
    r = job.recv(1, 0, 20, deps=[w])
    job.run()
    assert job.end(1, r) == 200


def test_two_sends_issued_together_are_serialised():
    job = Job(2)
    a = job.send(0, 1, 20, tag=1)
    b = job.send(0, 1, 20, tag=2)
    ra = job.recv(1, 0, 20, tag=1)
    rb = job.recv(1, 0, 20, tag=2)
    job.run()
    assert (job.end(0, a), job.end(0, b), job.end(1, ra), job.end(1, rb)) == (20, 40, 20, 40)


def test_messages_match_by_tag():
    # rank 1 posts the recv of tag 2 first; the tag-1 message (first sent) waits for its
    # own recv: recv tag 2 ends at 40 (second send), recv tag 1 is posted at 40, ends 40.
    job = Job(2)
    job.send(0, 1, 20, tag=1)
    job.send(0, 1, 20, tag=2)
    r2 = job.recv(1, 0, 20, tag=2)
    r1 = job.recv(1, 0, 20, tag=1, deps=[r2])
    job.run()
    assert (job.end(1, r2), job.end(1, r1)) == (40, 40)


def test_copy_engine_overlaps_compute_and_communication():
    job = Job(1)
    job.comp(0, 100)
    job.coll(0, 100, {0})
    k = job.copy(0, 100)
    job.run()
    assert job.times[0].finish == 100 and job.end(0, k) == 100


def test_report_splits_the_step_into_compute_exposed_communication_and_idle():
    # rank 1: compute 100, all-reduce (30 ns) with rank 0, then compute 50 that depends
    # on it. Rank 0: its all-reduce issued at 0 waits for rank 1 (idle 0..100), runs
    # 100..130 (exposed: nothing computes), then compute 130..180.
    job = Job(2)
    r0 = job.coll(0, 30, {0, 1})
    job.comp(0, 50, deps=[r0])
    c1 = job.comp(1, 100)
    r1 = job.coll(1, 30, {0, 1}, deps=[c1])
    job.comp(1, 50, deps=[r1])
    times = job.run()
    rank0 = actor_report(job.actors[0], times[0])
    assert (rank0.finish_ns, rank0.compute_ns, rank0.communication_ns, rank0.exposed_communication_ns,
            rank0.idle_ns) == (180, 50, 30, 30, 100)
    assert rank0.overlap_ratio == 0.0
    # an all-reduce hidden under compute: 100 compute, a 40 ns collective beside it
    job = Job(1)
    job.comp(0, 100)
    job.coll(0, 40, {0})
    times = job.run()
    rank = actor_report(job.actors[0], times[0])
    assert (rank.compute_ns, rank.communication_ns, rank.exposed_communication_ns, rank.idle_ns) == (100, 40, 0, 0)
    assert rank.overlap_ratio == 1.0


def test_a_recv_nobody_sends_is_a_deadlock_naming_the_rank():
    job = Job(2)
    job.recv(1, 0, 20, tag=7)
    with pytest.raises(Deadlock, match=r"rank 1 waits in recv node 0 'n' for a message from rank 0 \(tag 7\)"):
        job.run()


def test_collectives_issued_in_different_orders_are_refused():
    job = Job(2)
    job.coll(0, 5, {0, 1}, what=("all_reduce", 8))
    job.coll(1, 5, {0, 1}, what=("all_gather", 8))
    with pytest.raises(SimulationError, match="collective 1 on group g differs between its members"):
        job.run()
