"""Mesh coordinates <-> ranks and communicator groups for emission (runtime/chakra/ranks.py),
against stg.mesh's own order (dialects/stg/mesh.py)."""

from __future__ import annotations

from stagec.dialects.stg.mesh import MeshOp
from stagec.runtime.chakra.ranks import RankSpace


def test_coordinates_and_peers_follow_the_mesh():
    space = RankSpace.of(("pp", "dp", "tp"), (2, 3, 4))
    mesh = MeshOp("m", {"pp": 2, "dp": 3, "tp": 4})
    for rank in range(24):
        assert space.coords(rank) == mesh.coords_of(rank)
    assert space.peer(5, "pp", 1) == 5 + 12
    assert space.ranks_where({"pp": 1}) == list(range(12, 24))


def test_groups_are_the_ranks_sharing_the_other_coordinates():
    space = RankSpace.of(("pp", "dp", "tp"), (2, 3, 4))
    mesh = MeshOp("m", {"pp": 2, "dp": 3, "tp": 4})
    for axes in (["tp"], ["dp"], ["dp", "tp"], ["pp"]):
        for rank in range(24):
            gid = space.group_id(rank, axes)
            assert space.groups()[gid] == mesh.group_of(rank, axes)
    # numbered in order of first use, a set's groups by their smallest rank
    assert space.groups()[1] == [0, 1, 2, 3] and space.groups()[2] == [4, 5, 6, 7]
    assert space.group_size(["dp", "tp"]) == 12


def test_groups_among_some_stages():
    space = RankSpace.of(("pp", "tp"), (4, 2))
    assert space.groups() == {}
    gid = space.group_id(1, ["pp"], (0, 3))
    assert space.groups()[gid] == [1, 7]
    assert space.group_id(7, ["pp"], (0, 3)) == gid
    assert space.group_size(["pp"], (0, 3)) == 2
