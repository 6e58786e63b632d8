"""The analytical network model against times derived by hand from ASTRA-sim's formulas
(../shared/ASTRA-SIM.md, measured to the nanosecond; docs/simulator-network.md).

Units in every derivation: B = bandwidth * 2^30 / 1e9 bytes/ns; d = floor(h * latency +
m / B) (unaware); R(m) = 3 * floor(m / local-mem-bw); ep = endpoint delay.
On the 8-NPU 50 GB/s 500 ns ring: B = 53.6870912, so 2 MiB takes 39,062.5 ns,
4 MiB 78,125 ns, 8 MiB 156,250 ns; with local-mem-bw 1600: R(2 MiB) = 3 * 1310 = 3930,
R(4 MiB) = 3 * 2621 = 7863.
"""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.astra_config import ConfigError, parse_network, parse_system
from stagec.runtime.sim.network import CollectiveError, NetworkModel

DATA = Path(__file__).parent / "data"
MiB = 1 << 20
ALL = list(range(8))


def astra(network: str, system: str, **kw) -> NetworkModel:
    return NetworkModel.from_astra(str(DATA / network), str(DATA / system), **kw)


def model(topology, npus, bandwidth, latency, *, algorithm="ring", congestion="unaware", **system) -> NetworkModel:
    """A model from in-memory configs: one algorithm for every kind and dimension."""
    dims = len(topology)
    network = parse_network({"topology": topology, "npus_count": npus, "bandwidth": bandwidth, "latency": latency})
    data = {key: [algorithm] * dims for key in (
        "all-reduce-implementation", "all-gather-implementation",
        "reduce-scatter-implementation", "all-to-all-implementation")}
    data.update({"local-mem-bw": 1600, "preferred-dataset-splits": 1})
    data.update(system)
    return NetworkModel(network, parse_system(data, dims_count=dims), congestion=congestion)


def ring8(**system) -> NetworkModel:
    return model(["Ring"], [8], [50], [500], **system)


# --- ring, one dimension ---------------------------------------------------------


def test_ring_all_reduce_is_the_documented_example():
    # ASTRA-SIM.md: 16 MiB on 8 ranks, 50 GB/s, 500 ns ring, one chunk:
    # m = 2 MiB, d = floor(500 + 39062.5) = 39562; 10 + 14 * 39572 + 7 * 3930.
    assert astra("ring_8npus.yml", "ring_1chunk.json").collective_ns("all_reduce", 16 * MiB, ALL) == 581_528


def test_ring_reduce_scatter_all_gather_all_to_all():
    net = ring8()
    # reduce-scatter: n-1 = 7 steps of m = 2 MiB, each reducing: 10 + 7 * 39572 + 7 * 3930
    assert net.collective_ns("reduce_scatter", 16 * MiB, ALL) == 304_524
    # all-gather of a 2 MiB shard: 7 steps of the whole shard, no reduction: 10 + 7 * 39572
    assert net.collective_ns("all_gather", 2 * MiB, ALL) == 277_014
    # all-to-all: n(n-1)/2 = 28 steps of m = S/n = 2 MiB: 10 + 28 * 39572
    assert net.collective_ns("all_to_all", 16 * MiB, ALL) == 1_108_026


def test_ring_chunks_run_one_after_another():
    # 4 splits: C = 4 MiB, m = 512 KiB: d = floor(500 + 9765.625) = 10265,
    # R = 3 * floor(524288 / 1600) = 981; per chunk 10 + 14 * 10275 + 7 * 981 = 150,727.
    net = astra("ring_8npus.yml", "ring_4chunks.json")
    assert net.collective_ns("all_reduce", 16 * MiB, ALL) == 4 * 150_727
    # two active chunks: the unaware backend runs them side by side, sharing nothing.
    assert ring8(**{"preferred-dataset-splits": 4, "active-chunks-per-dimension": 2}).collective_ns(
        "all_reduce", 16 * MiB, ALL) == 2 * 150_727


def test_minimum_chunk_is_the_npu_count():
    net = ring8(**{"preferred-dataset-splits": 4})
    # 12 bytes / 4 = 3, raised to 8 NPUs: 2 chunks of m = 1 byte, d = 500, R = 0:
    # 2 * (10 + 14 * 510)
    assert net.collective_ns("all_reduce", 12, ALL) == 2 * 7_150
    # all-gather keeps floor(4 / 4) = 1: 4 chunks of 7 steps: 4 * (10 + 7 * 510)
    assert net.collective_ns("all_gather", 4, ALL) == 4 * 3_580


def test_all_gather_with_a_zero_byte_chunk_is_an_error_not_a_hang():
    with pytest.raises(CollectiveError, match="0-byte chunk.*loops forever"):
        ring8(**{"preferred-dataset-splits": 4}).collective_ns("all_gather", 3, ALL)


def test_endpoint_delay_is_charged_per_receive():
    # ep = 100: 100 + 14 * (39562 + 100) + 7 * 3930
    assert ring8(**{"endpoint-delay": 100}).collective_ns("all_reduce", 16 * MiB, ALL) == 582_878


# --- direct ----------------------------------------------------------------------


def test_direct_on_a_switch():
    # HGX: Switch of 8, 400 GB/s (B = 429.4967296), 936.25 ns per hop, 2 hops.
    # 1 MiB: m = 128 KiB takes 305.17578125 ns: d = floor(1872.5 + 305.17...) = 2177;
    # R = 3 * floor(131072 / 3350) = 117.
    net = astra("hgx_h100_8npus.yml", "hgx_h100_direct.json")
    assert net.collective_ns("all_reduce", MiB, ALL) == 3 * 10 + 2 * 2177 + 117
    assert net.collective_ns("reduce_scatter", MiB, ALL) == 2 * 10 + 2177 + 117
    assert net.collective_ns("all_to_all", MiB, ALL) == 2 * 10 + 2177
    # all-gather of a 1 MiB shard: m = 1 MiB takes 2441.40625: floor(1872.5 + 2441.4) = 4313
    assert net.collective_ns("all_gather", MiB, ALL) == 2 * 10 + 4313


def test_direct_on_a_congestion_aware_switch():
    # n-1 = 7 messages share the uplink: 6 * floor(305.17) + 2 * floor(936.25 + 305.17)
    # = 1830 + 2482 = 4312 per round; all-reduce 3 ep + 2 rounds + R.
    net = astra("hgx_h100_8npus.yml", "hgx_h100_direct.json", congestion="aware")
    assert net.collective_ns("all_reduce", MiB, ALL) == 30 + 2 * 4312 + 117


def test_direct_on_a_ring_waits_for_the_farthest_npu():
    # Ring of 4, 50 GB/s, 500 ns: offsets 1, 2, 3 are 1, 2, 1 hops away. 4 MiB all-to-all:
    # m = 1 MiB (19531.25 ns): the farthest message floor(1000 + 19531.25) = 20531.
    net = model(["Ring"], [4], [50], [500], algorithm="direct")
    assert net.collective_ns("all_to_all", 4 * MiB, [0, 1, 2, 3]) == 20 + 20_531
    # all-reduce: first-round arrivals at 10 + (20031, 20531, 20031); each frees a packet
    # ep + R = 10 + 3 * 655 = 1975 later; the earliest free packet after the last
    # arrival (20541) is at 20041 + 1975 = 22016, and by then all three are free:
    # the second round leaves at 22016 and its farthest message lands 20531 later.
    assert net.collective_ns("all_reduce", 4 * MiB, [0, 1, 2, 3]) == 22_016 + 20_531 + 10


# --- halving-doubling ------------------------------------------------------------


def test_halving_doubling_on_a_ring():
    # 8 NPUs: rounds at ring offsets 1, 2, 4 (1, 2, 4 hops) with 8, 4, 2 MiB for 16 MiB:
    # d = floor(500 + 156250) = 156750, floor(1000 + 78125) = 79125, floor(2000 + 39062.5)
    # = 41062 (sum 276,937). Packets 1 and 2 reduce: R(4 MiB) + R(2 MiB) = 7863 + 3930.
    net = ring8(algorithm="halvingDoubling")
    assert net.collective_ns("reduce_scatter", 16 * MiB, ALL) == 10 + 276_937 + 3 * 10 + 7863 + 3930
    # all-reduce adds the doubling rounds back: offsets 4, 2, 1 with 2, 4, 8 MiB.
    assert net.collective_ns("all_reduce", 16 * MiB, ALL) == 10 + 2 * 276_937 + 6 * 10 + 7863 + 3930
    # all-gather of a 2 MiB shard: offsets 4, 2, 1 with 2, 4, 8 MiB, nothing reduced.
    assert net.collective_ns("all_gather", 2 * MiB, ALL) == 10 + 276_937 + 3 * 10


def test_halving_doubling_refusals():
    with pytest.raises(CollectiveError, match="exits 1"):
        ring8(algorithm="halvingDoubling").collective_ns("all_to_all", MiB, ALL)
    with pytest.raises(CollectiveError, match="power of two"):
        model(["Ring"], [6], [50], [500], algorithm="halvingDoubling").collective_ns("all_reduce", MiB, range(6))
    with pytest.raises(CollectiveError, match="doubleBinaryTree.*not modelled"):
        ring8(algorithm="doubleBinaryTree").collective_ns("all_reduce", MiB, ALL)


# --- several dimensions ----------------------------------------------------------
# Switch of 4 (100 GB/s: B = 107.3741824, 100 ns) x Switch of 2 (25 GB/s: B = 26.8435456,
# 1000 ns); both Switch: 2 hops.


def test_two_dimensions_baseline_all_reduce():
    net = astra("switch4_switch2.yml", "ring_ring_baseline.json")
    # 8 MiB, one chunk. dim 0 all-reduce of 8 MiB: m = 2 MiB, d = floor(200 + 19531.25)
    # = 19731: 10 + 6 * 19741 + 3 * 3930 = 130,246. dim 1 all-reduce of 8 MiB: m = 4 MiB,
    # d = floor(2000 + 156250) = 158250: 10 + 2 * 158260 + 7863 = 324,393.
    assert net.collective_ns("all_reduce", 8 * MiB, ALL) == 130_246 + 324_393


def test_two_dimensions_chunks_form_a_flow_shop():
    net = model(["Switch", "Switch"], [4, 2], [100, 25], [100, 1000], **{
        "preferred-dataset-splits": 2, "collective-optimization": "baseline"})
    # C = 4 MiB. dim 0: m = 1 MiB, d = floor(200 + 9765.625) = 9965, R = 1965:
    # 10 + 6 * 9975 + 3 * 1965 = 65,755. dim 1: m = 2 MiB, d = floor(2000 + 78125) = 80125:
    # 10 + 2 * 80135 + 3930 = 164,210. Two identical chunks, one chunk-phase per dimension
    # at a time: 65,755 + 2 * 164,210 (the second chunk waits for dimension 1).
    assert net.collective_ns("all_reduce", 8 * MiB, ALL) == 65_755 + 2 * 164_210


def test_two_dimensions_local_bw_aware_all_reduce():
    net = model(["Switch", "Switch"], [4, 2], [100, 25], [100, 1000], **{
        "collective-optimization": "localBWAware"})
    # reduce-scatter on dim 0 (8 MiB, m = 2 MiB): 10 + 3 * 19741 + 3 * 3930 = 71,023;
    # all-reduce on dim 1 of the 2 MiB left: m = 1 MiB, d = floor(2000 + 39062.5) = 41062:
    # 10 + 2 * 41072 + 1965 = 84,119; all-gather on dim 0 of 2 MiB: 10 + 3 * 19741 = 59,233.
    assert net.collective_ns("all_reduce", 8 * MiB, ALL) == 71_023 + 84_119 + 59_233


def test_two_dimensions_all_gather_runs_from_the_last_dimension():
    net = astra("switch4_switch2.yml", "ring_ring_baseline.json")
    # 1 MiB shard: dim 1 first (1 step of 1 MiB: 10 + 41072), then dim 0 with the 2 MiB
    # it gathered (3 steps of 2 MiB: 10 + 3 * 19741).
    assert net.collective_ns("all_gather", MiB, ALL) == 41_082 + 59_233


# --- sub-groups -----------------------------------------------------------------


def test_subgroup_is_a_ring_over_its_members():
    # Members 0..3 of the 8-ring: hops 0->1, 1->2, 2->3 are 1 hop (d = floor(500 +
    # 78125) = 78625 for m = 4 MiB), 3->0 is 3 hops (79625). Over 6 steps the last
    # member's critical path crosses the slow hop twice: 10 + 6 * (78625 + 10) + 2 * 1000
    # + 3 * R(4 MiB).
    expected = 10 + 6 * 78_635 + 2 * 1000 + 3 * 7863
    assert ring8().collective_ns("all_reduce", 16 * MiB, [0, 1, 2, 3]) == expected
    # 10 ns per receive whatever endpoint-delay says.
    assert ring8(**{"endpoint-delay": 100}).collective_ns("all_reduce", 16 * MiB, [0, 1, 2, 3]) == expected


def test_subgroup_of_alike_members_in_closed_form():
    # Members 0, 2, 4, 6 of the 8-ring: every hop, 6 -> 0 included, is 2 hops, so
    # d = floor(2 * 500 + 78125) = 79125 for m = 16 MiB / 4; started together, every
    # member sends each step at once: 10 + 6 * (79125 + 10) + 3 * R(4 MiB).
    expected = 10 + 6 * 79_135 + 3 * 7863
    assert ring8().collective_finish_ns("all_reduce", 16 * MiB, [0, 2, 4, 6]) == [expected] * 4
    # 1, 3, 5, 7 sit alike: the same time (computed once, network.py _subgroup_finish)
    assert ring8().collective_ns("all_reduce", 16 * MiB, [1, 3, 5, 7]) == expected
    # one member late breaks the symmetry: it delays the members after it, not itself
    late = ring8().collective_finish_ns("all_reduce", 16 * MiB, [0, 2, 4, 6], starts=[0, 0, 1000, 0])
    assert late[2] == expected and max(late) > expected


def test_subgroup_order_and_minimum_chunk():
    net = ring8(**{"preferred-dataset-splits": 4})
    # 12 bytes / 4 = 3, raised to the system's 8 NPUs (not the group's 2): 2 chunks,
    # m = 4 bytes, d = 500, two steps: 2 * (10 + 2 * 510)
    assert net.collective_ns("all_reduce", 12, [0, 1]) == 2 * 1_030
    # the order is the comm group's: 0 -> 4 -> 1 -> 5 hops 4, 3, 4, 3 on the ring.
    uniform = ring8().collective_ns("all_gather", MiB, [0, 1, 2, 3])
    assert ring8().collective_ns("all_gather", MiB, [0, 4, 1, 5]) > uniform


def test_subgroup_member_by_member_and_a_late_member():
    # all-gather of 1 MiB over members 0..3: 3 steps of d = 20031 (1 hop) or 21031 (3 -> 0,
    # 3 hops). Member i's last receive ends a path through the receives into i-2, i-1, i:
    # members 0, 1, 2 cross the slow hop once, member 3 never: 10 + 3 * 20041 (+ 1000).
    net = ring8()
    assert net.collective_finish_ns("all_gather", MiB, [0, 1, 2, 3]) == [61_133, 61_133, 61_133, 60_133]
    # Member 2 issues it 5000 ns late: its first message reaches 3 at 5010 + 20031 = 25041
    # (5000 late), so 3 sends step 1 at 25051, 0 receives it at 46082 and sends step 2 at
    # 46092, which 1 receives at 66123: member 1 finishes at 66133. Member 2 itself posts
    # its first receive (5010) before the data arrives (20041) and finishes on time.
    late = net.collective_finish_ns("all_gather", MiB, [0, 1, 2, 3], starts=[0, 0, 5000, 0])
    assert late == [61_133, 66_133, 61_133, 60_133]


def test_a_whole_system_group_in_another_order_is_the_whole_system():
    net = ring8()
    assert net.collective_ns("all_reduce", 16 * MiB, [7, 6, 5, 4, 3, 2, 1, 0]) == 581_528


# --- point to point ---------------------------------------------------------------


def test_p2p_unaware_and_aware():
    # 3 hops either way round the 8-ring; 2 MiB takes 39062.5 ns.
    assert ring8().p2p_ns(0, 3, 2 * MiB) == 1500 + 39_062
    assert ring8().p2p_ns(0, 5, 2 * MiB) == 1500 + 39_062
    # store and forward: 3 * floor(500 + 39062.5)
    assert ring8(congestion="aware").p2p_ns(0, 3, 2 * MiB) == 3 * 39_562


def test_p2p_bandwidth_is_gib_per_second():
    # ASTRA-SIM.md: 1 GiB at "1 GB/s" takes 999,999,999 ns (double arithmetic).
    assert model(["FullyConnected"], [2], [1], [0]).p2p_ns(0, 1, 1 << 30) == 999_999_999


def test_p2p_is_charged_in_the_first_differing_dimension():
    net = astra("switch4_switch2.yml", "ring_ring_baseline.json")
    # rank 5 = (1, 1), rank 4 = (0, 1): 0 -> 5 differs in dim 0 first (2 hops of 100 ns);
    # 0 -> 4 only in dim 1 (2 hops of 1000 ns). 2 MiB: 19531.25 / 78125 ns.
    assert net.p2p_ns(0, 5, 2 * MiB) == 19_731
    assert net.p2p_ns(0, 4, 2 * MiB) == 80_125


# --- stagec hardware descriptions -------------------------------------------------


def test_from_hardware_h100():
    # h100-sxm: NVLink 450e9 B/s x 0.8 = 360 B/ns, 2.5 us; IB 50e9 x 0.9 = 45 B/ns, 6.6 us;
    # local memory 3350 GB/s x 0.85 = 2847.5. 16 GPUs: Switch 8 x Switch 2.
    net = NetworkModel.from_hardware(load_hardware("h100-sxm"), 16)
    assert [d.npus for d in net.dims] == [8, 2]
    assert net.p2p_ns(0, 1, 3_600_000) == 2500 + 10_000  # latency once, 3.6 MB at 360 B/ns
    assert net.p2p_ns(0, 8, 4_500_000) == 6600 + 100_000
    # localBWAware all-reduce of 7.2 MB: reduce-scatter on NVLink (m = 900 KB: d = 5000,
    # R = 3 * floor(900000 / 2847.5) = 948): 10 + 7 * 5010 + 7 * 948 = 41,716; all-reduce
    # over IB of 900 KB (m = 450 KB: d = 16600, R = 474): 10 + 2 * 16610 + 474 = 33,704;
    # all-gather on NVLink of 900 KB: 10 + 7 * 5010 = 35,080.
    assert net.collective_ns("all_reduce", 7_200_000, range(16)) == 41_716 + 33_704 + 35_080
    assert NetworkModel.from_hardware("h100-sxm", 4).dims[0].npus == 4
    with pytest.raises(ConfigError, match="whole nodes"):
        NetworkModel.from_hardware("h100-sxm", 12)


def test_roofline_from_the_system_json():
    roofline = astra("ring_8npus.yml", "ring_4chunks.json").roofline
    assert roofline.enabled
    # ASTRA-SIM.md: 1e12 ops at 900 TFLOP/s is 1,111,111 ns; 1e9 bytes at 1600 GB/s 625,000.
    assert roofline.compute_ns(10**12, 1) == 1_111_111
    assert roofline.compute_ns(1, 10**9) == 625_000


def test_describe_has_one_line_per_dimension():
    lines = astra("switch4_switch2.yml", "ring_ring_baseline.json").describe().splitlines()
    assert lines[0].startswith("dim 0: Switch x4, 100 GB/s")
    assert lines[1].startswith("dim 1: Switch x2, 25 GB/s")


def test_bad_calls():
    net = ring8()
    with pytest.raises(CollectiveError, match="unknown collective kind"):
        net.collective_ns("broadcast", 8, ALL)
    with pytest.raises(CollectiveError, match="not an NPU"):
        net.collective_ns("all_reduce", 8, [0, 8])
    with pytest.raises(CollectiveError, match="twice"):
        net.collective_ns("all_reduce", 8, [0, 0])
    assert net.collective_ns("all_reduce", 0, ALL) == 0
    assert net.collective_ns("all_reduce", 8, [3]) == 0


# --- properties -------------------------------------------------------------------

sizes = st.integers(min_value=8, max_value=1 << 26)
algorithms = st.sampled_from(["ring", "direct", "halvingDoubling"])
topologies = st.sampled_from(["Ring", "Switch", "FullyConnected"])


@settings(max_examples=60, deadline=None)
@given(topology=topologies, algorithm=algorithms, size=sizes, extra=st.integers(0, 1 << 20),
       kind=st.sampled_from(["all_reduce", "reduce_scatter", "all_gather"]))
def test_time_is_monotone_in_size(topology, algorithm, size, extra, kind):
    net = model([topology], [8], [50], [500], algorithm=algorithm)
    assert net.collective_ns(kind, size, ALL) <= net.collective_ns(kind, size + extra, ALL)


@settings(max_examples=60, deadline=None)
@given(topology=topologies, shard=st.integers(min_value=1, max_value=1 << 24), n=st.integers(2, 9))
def test_ring_all_reduce_is_reduce_scatter_then_all_gather(topology, shard, n):
    # One chunk: reduce-scatter of n*S and all-gather of S share step count (n-1) and
    # message (S); all-reduce is the two with one initial ep: AR = RS + AG - ep, and
    # RS - AG = (n-1) R(S).
    net = model([topology], [n], [50], [500])
    group = list(range(n))
    rs = net.collective_ns("reduce_scatter", n * shard, group)
    ag = net.collective_ns("all_gather", shard, group)
    assert net.collective_ns("all_reduce", n * shard, group) == rs + ag - 10
    assert rs - ag == (n - 1) * 3 * int(shard / 1600)


@settings(max_examples=40, deadline=None)
@given(size=sizes, splits=st.integers(1, 16))
def test_one_dimension_chunks_only_add_time(size, splits):
    # ASTRA-SIM.md: no pipelining of chunks on a 1-D network.
    one = ring8().collective_ns("all_reduce", size, ALL)
    assert ring8(**{"preferred-dataset-splits": splits}).collective_ns("all_reduce", size, ALL) >= one - 1
