"""The ps dialect's ops: a Di-PS deployment (di-ps.md §3-§4) as one `ps.program`.

    ps.program @dips inner_steps 64 tokens_per_step 32768 model "llama3.2-1b" overrides {num_hidden_layers = 4} {
      ps.cluster @A throughput 120000.0 delay 0.0        // §3.1 p_j, §5.1 emulated delay
      ps.cluster @B throughput 80000.0 delay 0.5
      ps.bandwidth [[1250000000.0, 125000000.0], [125000000.0, 1250000000.0]]   // B, bytes/s
      ps.master on @A                                    // the PS cluster, argmax_i B_i^T p
      ps.slaves 2 on @A
      ps.layer "model.embed_tokens" bytes 1048576 slave 0
      ps.layer "model.layers.0" bytes 524288 slave 1
      ps.outer_nesterov lr 0.7 momentum 0.9             // Algorithm 1 line 17
      ps.penalty alpha 0.02 beta 3.0 clip 1.0 enabled true   // §4.1
      ps.heartbeat interval 1.0 missed 3                 // §4 two-level resilience
      ps.snapshot every 1 keep 2
      ps.round {                                         // §3.2 steps 1-6, in issue order
        ps.push_request @A
        ps.push_request @B
        ps.push step 0 [@A layer 0 -> slave 0, @B layer 1 -> slave 1]
        ps.push step 1 [@A layer 1 -> slave 1, @B layer 0 -> slave 0]
        ps.commit prepare @A
        ps.commit commit @A
        ps.window_open grace 5.0
        ...
        ps.window_close
        ps.update
        ps.pull_notice @A
        ps.pull step 0 [@A layer 0 from slave 0, @B layer 1 from slave 1]
      }
    }

The program names its model as `stagec ps plan`'s CONFIG did: a named config or a
config.json path, the dtype of the moved parameters (`dtype bf16`; printed unless it is
f32) and the Hugging Face config keys that override the config's (`overrides {...}`,
printed unless there are none), so that the program alone rebuilds the model whose
layers it places (runtime/ps/run_model.py).

Declarations (cluster, bandwidth, master, slaves, layer, outer_nesterov, penalty,
heartbeat, snapshot, round) sit directly in the program; control messages and data
steps sit in its round, whose op order is the order the master issues them. Layers and
clusters are numbered by declaration order. The round is the one in which every
cluster takes part: the master's full schedule, of which a round with fewer clusters
runs the steps that concern them. `ps.program`'s verifier checks the whole program:
references, ranges, the schedule's coverage and contention, and the protocol's order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, BoolAttr, DictionaryAttr, Float64Type, FloatAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, Operation
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.ps.syntax import Field, KeywordOp, config_value, format_float

# The dtypes a model's parameters may be moved in: frontends/templates/blocks.py's DTYPES
# (a test keeps the two equal; the dialect does not import the templates).
MODEL_DTYPES = ("bf16", "f16", "f32", "f64")


# A property the custom syntax reads and prints as `0.7`, `true`, `[[1.0, 2.0], ...]`:
# any other type would print as these and read back as something else.
F64 = FloatAttr[Float64Type]
F64_MATRIX = ArrayAttr[ArrayAttr[F64]]


# -- the program ---------------------------------------------------------------------


@irdl_op_definition
class ProgramOp(KeywordOp):
    """A Di-PS deployment: its roles, its model's layers, its settings and its round."""

    name = "ps.program"
    sym_name = prop_def(StringAttr)
    inner_steps = prop_def(IntAttr)
    tokens_per_step = prop_def(IntAttr)
    model = prop_def(StringAttr)
    model_dtype = opt_prop_def(StringAttr)  # absent: f32
    model_overrides = opt_prop_def(DictionaryAttr)  # absent: none
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "sym_name", "sym"), Field("inner_steps", "inner_steps", "int"),
              Field("tokens_per_step", "tokens_per_step", "int"), Field("model", "model", "str"),
              Field("dtype", "model_dtype", "word", MODEL_DTYPES, default="f32"),
              Field("overrides", "model_overrides", "config", default={}))

    @classmethod
    def has_region(cls) -> bool:
        return True

    def verify_(self) -> None:
        _verify_no_block_arguments(self)
        if self.inner_steps.data < 1:
            raise VerifyException(f"'ps.program' has inner_steps {self.inner_steps.data}; H is at least 1")
        if self.tokens_per_step.data < 0:
            raise VerifyException(f"'ps.program' has tokens_per_step {self.tokens_per_step.data}; give 0 (unknown) or more")
        dtype = self.value("model_dtype")
        if dtype not in MODEL_DTYPES:
            raise VerifyException(f"'ps.program' has model dtype '{dtype}'; give one of {', '.join(MODEL_DTYPES)}")
        overrides = self.model_overrides.data if self.model_overrides is not None else {}
        for key, attr in overrides.items():
            try:
                config_value(attr)
            except ValueError as error:
                raise VerifyException(f"'ps.program' model override '{key}': {error}") from None
        if _every_op_verifies(self):
            _verify_program(self)


# -- declarations --------------------------------------------------------------------


@irdl_op_definition
class ClusterOp(KeywordOp):
    """A training cluster: throughput p_j in tokens/s (§3.1) and the extra delay of an
    emulated cluster, as a fraction of an inner step (§5.1)."""

    name = "ps.cluster"
    sym_name = prop_def(StringAttr)
    throughput = prop_def(F64)
    extra_delay = prop_def(F64)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "sym_name", "sym"), Field("throughput", "throughput", "float"),
              Field("delay", "extra_delay", "float"))

    def verify_(self) -> None:
        name = self.sym_name.data
        if not 0 < self.throughput.value.data < math.inf:
            raise VerifyException(f"'ps.cluster' @{name} has throughput {format_float(self.throughput.value.data)}; "
                                  "give a finite number of tokens/s > 0")
        if not 0 <= self.extra_delay.value.data < math.inf:
            raise VerifyException(f"'ps.cluster' @{name} has delay {format_float(self.extra_delay.value.data)}; "
                                  "give a finite fraction of a step >= 0")


@irdl_op_definition
class BandwidthOp(KeywordOp):
    """B: `B[i][j]` bytes/s between the CPU servers of cluster i and the NPUs of cluster j."""

    name = "ps.bandwidth"
    matrix = prop_def(F64_MATRIX)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "matrix", "matrix"),)

    def verify_(self) -> None:
        rows = self.value("matrix")
        n = len(rows)
        if n == 0:
            raise VerifyException("'ps.bandwidth' is empty; give an N x N matrix, one row and column per cluster")
        for i, row in enumerate(rows):
            if len(row) != n:
                raise VerifyException(f"'ps.bandwidth' is not square: row {i} has {len(row)} entries, "
                                      f"the matrix {n} rows; give an N x N matrix")
            for j, value in enumerate(row):
                if not value > 0 or value == float("inf"):
                    raise VerifyException(f"'ps.bandwidth' entry [{i}][{j}] is {format_float(value)}; "
                                          "every bandwidth is a finite number of bytes/s > 0")


@irdl_op_definition
class MasterOp(KeywordOp):
    """The master PS (control flow, §3.2) and the cluster whose CPU servers run it."""

    name = "ps.master"
    cluster = prop_def(StringAttr)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("on", "cluster", "sym"),)


@irdl_op_definition
class SlavesOp(KeywordOp):
    """The slave PSs (data flow, §3.1), numbered 0..count-1, and where they run."""

    name = "ps.slaves"
    count = prop_def(IntAttr)
    cluster = prop_def(StringAttr)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "count", "int"), Field("on", "cluster", "sym"))

    def verify_(self) -> None:
        from stagec.runtime.ps.plan import MAX_SLAVES

        if not 1 <= self.count.data <= MAX_SLAVES:
            raise VerifyException(f"'ps.slaves' declares {self.count.data} slaves; give 1 to {MAX_SLAVES:,}")


@irdl_op_definition
class LayerOp(KeywordOp):
    """A unit of push and pull: the parameters under a torch module path, their bytes,
    and the slave PS that owns them."""

    name = "ps.layer"
    prefix = prop_def(StringAttr)
    nbytes = prop_def(IntAttr)
    slave = prop_def(IntAttr)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "prefix", "str"), Field("bytes", "nbytes", "int"), Field("slave", "slave", "int"))

    def verify_(self) -> None:
        if self.nbytes.data < 1:
            raise VerifyException(f"'ps.layer' \"{self.prefix.data}\" has {self.nbytes.data} bytes; give at least 1")


@irdl_op_definition
class OuterNesterovOp(KeywordOp):
    """The slaves' outer optimizer: Nesterov momentum (Algorithm 1 line 17)."""

    name = "ps.outer_nesterov"
    lr = prop_def(F64)
    momentum = prop_def(F64)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("lr", "lr", "float"), Field("momentum", "momentum", "float"))

    def verify_(self) -> None:
        if not 0 < self.lr.value.data < math.inf:
            raise VerifyException(f"'ps.outer_nesterov' lr {format_float(self.lr.value.data)}: give a finite lr > 0")
        if not 0 <= self.momentum.value.data <= 1:
            raise VerifyException(f"'ps.outer_nesterov' momentum {format_float(self.momentum.value.data)}: "
                                  "give 0 <= momentum <= 1")


@irdl_op_definition
class PenaltyOp(KeywordOp):
    """The pseudo-gradient penalty (§4.1): EMA factor alpha, outlier threshold beta
    (exclude a cluster whose score exceeds beta * max(E)), clipping norm."""

    name = "ps.penalty"
    alpha = prop_def(F64)
    beta = prop_def(F64)
    clip = prop_def(F64)
    enabled = prop_def(BoolAttr)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("alpha", "alpha", "float"), Field("beta", "beta", "float"), Field("clip", "clip", "float"),
              Field("enabled", "enabled", "bool"))

    def verify_(self) -> None:
        alpha, beta, clip = (getattr(self, p).value.data for p in ("alpha", "beta", "clip"))
        if not 0 < alpha <= 1:
            raise VerifyException(f"'ps.penalty' alpha {format_float(alpha)}: the EMA factor is in (0, 1] (§4.1: 0.02)")
        if not 0 < beta < math.inf:
            raise VerifyException(f"'ps.penalty' beta {format_float(beta)}: the outlier threshold is finite and > 0 "
                                  "(§4.1: 3)")
        if not 0 < clip < math.inf:
            raise VerifyException(f"'ps.penalty' clip {format_float(clip)}: the clipping norm is finite and > 0 "
                                  "(§4.1: 1)")


@irdl_op_definition
class HeartbeatOp(KeywordOp):
    """Heartbeats of clusters and slaves to the master (§4): one every `interval`
    seconds; `missed` consecutive missing beats remove a cluster or restart a slave."""

    name = "ps.heartbeat"
    interval = prop_def(F64)
    missed = prop_def(IntAttr)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("interval", "interval", "float"), Field("missed", "missed", "int"))

    def verify_(self) -> None:
        if not 0 < self.interval.value.data < math.inf:
            raise VerifyException(f"'ps.heartbeat' interval {format_float(self.interval.value.data)}: "
                                  "give a finite number of seconds > 0")
        if self.missed.data < 1:
            raise VerifyException(f"'ps.heartbeat' missed {self.missed.data}: give at least 1 beat")


@irdl_op_definition
class SnapshotOp(KeywordOp):
    """Each slave keeps the snapshots of every `every`-th version (0: none), the newest
    `keep` of them, for evaluation and joining clusters (§4); besides, the newest
    version's, which a restarted slave resumes from (the two-stage commit writes one
    for every version)."""

    name = "ps.snapshot"
    every = prop_def(IntAttr)
    keep = prop_def(IntAttr)
    traits = traits_def(HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("every", "every", "int"), Field("keep", "keep", "int"))

    def verify_(self) -> None:
        if self.every.data < 0 or self.keep.data < 1:
            raise VerifyException(f"'ps.snapshot' every {self.every.data} keep {self.keep.data}: "
                                  "give every >= 0 (0: never) and keep >= 1")


@irdl_op_definition
class RoundOp(KeywordOp):
    """One outer round of the dual workflow (§3.2 steps 1-6), ops in issue order."""

    name = "ps.round"
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), HasParent(ProgramOp))
    FIELDS: ClassVar[tuple[Field, ...]] = ()

    @classmethod
    def has_region(cls) -> bool:
        return True

    def verify_(self) -> None:
        _verify_no_block_arguments(self)


def _verify_no_block_arguments(op: KeywordOp) -> None:
    # the custom syntax prints a region without its block's arguments: they would vanish
    if op.body.block.args:
        raise VerifyException(f"'{op.name}' has {len(op.body.block.args)} block arguments; its region takes none")


# -- control messages (gRPC in the runtime) -------------------------------------------------


class _ClusterMessage(KeywordOp):
    cluster = prop_def(StringAttr)
    traits = traits_def(HasParent(RoundOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "cluster", "sym"),)


@irdl_op_definition
class PushRequestOp(_ClusterMessage):
    """§3.2 step 1: a cluster asks the master to push; the master names the slaves."""

    name = "ps.push_request"


@irdl_op_definition
class CommitOp(KeywordOp):
    """§3.2 step 2: a cluster's two-stage commit of its completed push: `prepare`
    (all layers sent, the master checks the slaves hold them), then `commit` (the
    master records the cluster and its consumed tokens)."""

    name = "ps.commit"
    phase = prop_def(StringAttr)
    cluster = prop_def(StringAttr)
    traits = traits_def(HasParent(RoundOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("", "phase", "word", ("prepare", "commit")), Field("", "cluster", "sym"))

    def verify_(self) -> None:
        if self.phase.data not in ("prepare", "commit"):
            raise VerifyException(f"'ps.commit' phase '{self.phase.data}': the two stages are prepare and commit")


@irdl_op_definition
class WindowOpenOp(KeywordOp):
    """§3.2 step 3: the first commit opens the update round's window of `grace` s."""

    name = "ps.window_open"
    grace = prop_def(F64)
    traits = traits_def(HasParent(RoundOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("grace", "grace", "float"),)

    def verify_(self) -> None:
        if not 0 <= self.grace.value.data < math.inf:
            raise VerifyException(f"'ps.window_open' grace {format_float(self.grace.value.data)}: "
                                  "give a finite number of seconds >= 0")


@irdl_op_definition
class WindowCloseOp(KeywordOp):
    """§3.2 step 4: the grace time is over; the committed clusters form the round."""

    name = "ps.window_close"
    traits = traits_def(HasParent(RoundOp))
    FIELDS: ClassVar[tuple[Field, ...]] = ()


@irdl_op_definition
class UpdateOp(KeywordOp):
    """§3.2 step 5: the master has the slaves apply the penalty and the outer step to
    the round's clusters; the slaves report back when done (step 6)."""

    name = "ps.update"
    traits = traits_def(HasParent(RoundOp))
    FIELDS: ClassVar[tuple[Field, ...]] = ()


@irdl_op_definition
class PullNoticeOp(_ClusterMessage):
    """§3.2 step 6: the master tells a cluster of the round to pull."""

    name = "ps.pull_notice"


# -- data steps (ZeroMQ in the runtime) ------------------------------------------------------


class _StepOp(KeywordOp):
    """One step of the layer-wise schedule (Fig. 5): transfers between clusters and
    slaves in which each cluster and each slave takes part at most once."""

    step = prop_def(IntAttr)
    clusters = prop_def(ArrayAttr[StringAttr])
    layers = prop_def(ArrayAttr[IntAttr])
    slaves = prop_def(ArrayAttr[IntAttr])
    traits = traits_def(HasParent(RoundOp))
    FIELDS: ClassVar[tuple[Field, ...]] = (Field("step", "step", "int"),)
    ARROW: ClassVar[str] = "->"  # a pull's transfers read "layer 0 from slave 0"

    def __init__(self, step: int, transfers: Sequence[tuple[str, int, int]]):
        super().__init__(properties={
            "step": IntAttr(step),
            "clusters": ArrayAttr([StringAttr(c) for c, _, _ in transfers]),
            "layers": ArrayAttr([IntAttr(layer) for _, layer, _ in transfers]),
            "slaves": ArrayAttr([IntAttr(s) for _, _, s in transfers]),
        })

    @property
    def transfers(self) -> list[tuple[str, int, int]]:
        """(cluster name, layer index, slave index) of each transfer."""
        return [(c.data, layer.data, s.data)
                for c, layer, s in zip(self.clusters.data, self.layers.data, self.slaves.data, strict=True)]

    def print_extra(self, printer: Printer) -> None:
        printer.print_string(" [")
        for i, (cluster, layer, slave) in enumerate(self.transfers):
            if i:
                printer.print_string(", ")
            printer.print_symbol_name(cluster)
            printer.print_string(f" layer {layer} {self.ARROW} slave {slave}")
        printer.print_string("]")

    @classmethod
    def parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        def transfer() -> tuple[str, int, int]:
            cluster = parser.parse_symbol_name().data
            parser.parse_keyword("layer")
            layer = parser.parse_integer(allow_boolean=False, context_msg=" (a layer index)")
            if cls.ARROW == "->":
                parser.parse_punctuation("->")
            else:
                parser.parse_keyword(cls.ARROW)
            parser.parse_keyword("slave")
            slave = parser.parse_integer(allow_boolean=False, context_msg=" (a slave index)")
            return cluster, layer, slave

        found = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, transfer)
        return {
            "clusters": ArrayAttr([StringAttr(c) for c, _, _ in found]),
            "layers": ArrayAttr([IntAttr(layer) for _, layer, _ in found]),
            "slaves": ArrayAttr([IntAttr(s) for _, _, s in found]),
        }

    def verify_(self) -> None:
        if not len(self.clusters.data) == len(self.layers.data) == len(self.slaves.data):
            raise VerifyException(f"'{self.name}' step {self.step.data}: clusters, layers and slaves differ in length")
        by_slave: dict[int, str] = {}
        by_cluster: dict[str, int] = {}
        verb = "sends" if self.name == "ps.push" else "receives"
        for cluster, layer, slave in self.transfers:
            # The cluster first: two layers of one cluster to one slave are its mistake.
            if cluster in by_cluster:
                raise VerifyException(
                    f"'{self.name}' step {self.step.data}: @{cluster} {verb} layers {by_cluster[cluster]} and {layer}; "
                    f"a cluster {verb} one layer per step")
            if slave in by_slave:
                raise VerifyException(
                    f"'{self.name}' step {self.step.data}: @{by_slave[slave]} and @{cluster} both use slave {slave}; "
                    "a slave serves one cluster per step (Fig. 5)")
            by_slave[slave] = cluster
            by_cluster[cluster] = layer


@irdl_op_definition
class PushOp(_StepOp):
    """A push step: each listed cluster sends one layer to the slave that owns it."""

    name = "ps.push"


@irdl_op_definition
class PullOp(_StepOp):
    """A pull step: each listed cluster receives one updated layer from its slave."""

    name = "ps.pull"
    ARROW: ClassVar[str] = "from"


DECLARATIONS = (ClusterOp, BandwidthOp, MasterOp, SlavesOp, LayerOp, OuterNesterovOp, PenaltyOp, HeartbeatOp,
                SnapshotOp, RoundOp)
_SINGLETONS = (BandwidthOp, MasterOp, SlavesOp, OuterNesterovOp, PenaltyOp, HeartbeatOp, SnapshotOp, RoundOp)


# -- the program's verifier ------------------------------------------------------------------


def _only(ops: list[Operation], cls: type) -> Operation:
    found = [op for op in ops if isinstance(op, cls)]
    if len(found) != 1:
        raise VerifyException(f"'ps.program' needs exactly one {cls.name}, it has {len(found)}")
    return found[0]


def _every_op_verifies(program: ProgramOp) -> bool:
    """Whether each op in the program passes its own checks, which the program's checks
    take for granted (they read the ops' properties). xDSL verifies nested ops first,
    but stagec-opt's diagnostics verify each op alone, parents first, to find the one to
    blame: a malformed op then fails here, and is blamed, at its own place, when its turn
    comes."""
    for op in program.body.walk():
        try:
            op.verify_()
        except VerifyException:
            return False
    return True


def _verify_program(program: ProgramOp) -> None:
    ops = list(program.body.block.ops)
    clusters = [op.sym_name.data for op in ops if isinstance(op, ClusterOp)]
    if not clusters:
        raise VerifyException("'ps.program' declares no ps.cluster; a program trains on at least one cluster")
    for i, name in enumerate(clusters):
        if name in clusters[:i]:
            raise VerifyException(f"'ps.program' declares cluster @{name} twice")
    singletons = {cls: _only(ops, cls) for cls in _SINGLETONS}
    known = ", ".join(f"@{c}" for c in clusters)

    def check_cluster(op: Operation, name: str, what: str) -> None:
        if name not in clusters:
            raise VerifyException(f"'{op.name}' {what} @{name}, which is not a ps.cluster of the program ({known})")

    n = len(clusters)
    matrix = singletons[BandwidthOp].value("matrix")
    if len(matrix) != n:
        raise VerifyException(f"'ps.bandwidth' is {len(matrix)} x {len(matrix)} but the program has {n} clusters; "
                              f"give an {n} x {n} matrix")
    master, slaves = singletons[MasterOp], singletons[SlavesOp]
    check_cluster(master, master.cluster.data, "runs on")
    check_cluster(slaves, slaves.cluster.data, "run on")
    if master.cluster.data != slaves.cluster.data:
        raise VerifyException(f"'ps.slaves' run on @{slaves.cluster.data} but 'ps.master' on @{master.cluster.data}; "
                              "the PSs share the PS cluster (§3.1)")
    num_slaves = slaves.count.data
    layers = [op for op in ops if isinstance(op, LayerOp)]
    if not layers:
        raise VerifyException("'ps.program' declares no ps.layer; the PSs hold at least one layer")
    prefixes: dict[str, int] = {}
    for index, layer in enumerate(layers):
        prefix = layer.prefix.data
        if prefix in prefixes:
            raise VerifyException(f"'ps.layer' \"{prefix}\" is declared twice (layers {prefixes[prefix]} and {index})")
        prefixes[prefix] = index
        if not 0 <= layer.slave.data < num_slaves:
            raise VerifyException(f"'ps.layer' \"{prefix}\" is owned by slave {layer.slave.data}, but ps.slaves "
                                  f"declares {num_slaves} (slaves 0..{num_slaves - 1})")
    owner = [layer.slave.data for layer in layers]
    _verify_round(singletons[RoundOp], clusters, owner, check_cluster)


def _verify_round(round_op: RoundOp, clusters: list[str], owner: list[int], check_cluster) -> None:
    ops = list(round_op.body.block.ops)
    position = {id(op): i for i, op in enumerate(ops)}
    steps = {PushOp: [op for op in ops if isinstance(op, PushOp)], PullOp: [op for op in ops if isinstance(op, PullOp)]}
    for cls, found in steps.items():
        if not found:
            raise VerifyException(f"'ps.round' has no {cls.name} step; every layer moves in some step")
        for expected, op in enumerate(found):
            if op.step.data != expected:
                raise VerifyException(f"'{cls.name}' step {op.step.data} comes where step {expected} is due; "
                                      "steps are numbered 0, 1, ... in order")
        seen: dict[tuple[str, int], int] = {}
        for op in found:
            for cluster, layer, slave in op.transfers:
                check_cluster(op, cluster, f"step {op.step.data} moves a layer of")
                if not 0 <= layer < len(owner):
                    raise VerifyException(f"'{op.name}' step {op.step.data} moves layer {layer}, but the program has "
                                          f"{len(owner)} layers (0..{len(owner) - 1})")
                if slave != owner[layer]:
                    raise VerifyException(f"'{op.name}' step {op.step.data} moves layer {layer} via slave {slave}, "
                                          f"but slave {owner[layer]} owns it")
                if (cluster, layer) in seen:
                    raise VerifyException(f"'{op.name}': @{cluster} moves layer {layer} twice "
                                          f"(steps {seen[(cluster, layer)]} and {op.step.data})")
                seen[(cluster, layer)] = op.step.data
        for cluster in clusters:
            for layer in range(len(owner)):
                if (cluster, layer) not in seen:
                    raise VerifyException(f"'{cls.name}': @{cluster} never moves layer {layer}; every cluster moves "
                                          "every layer once a round")

    def once(cls, cluster: str, phase: str | None = None) -> Operation:
        found = [op for op in ops if isinstance(op, cls) and op.cluster.data == cluster
                 and (phase is None or op.phase.data == phase)]
        what = f"{cls.name}{' ' + phase if phase else ''} @{cluster}"
        if len(found) != 1:
            raise VerifyException(f"'ps.round' needs exactly one {what}, it has {len(found)}")
        return found[0]

    for op in ops:
        if isinstance(op, (PushRequestOp, PullNoticeOp, CommitOp)):
            check_cluster(op, op.cluster.data, "names")
    window_open = _only_in(ops, WindowOpenOp)
    window_close = _only_in(ops, WindowCloseOp)
    update = _only_in(ops, UpdateOp)
    first_commit = None
    for cluster in clusters:
        request = once(PushRequestOp, cluster)
        pushes = [position[id(op)] for op in steps[PushOp] if any(c == cluster for c, _, _ in op.transfers)]
        prepare, commit = once(CommitOp, cluster, "prepare"), once(CommitOp, cluster, "commit")
        notice = once(PullNoticeOp, cluster)
        pulls = [position[id(op)] for op in steps[PullOp] if any(c == cluster for c, _, _ in op.transfers)]
        _before(request, pushes[0], ops, f"@{cluster}'s first push")
        if position[id(prepare)] < pushes[-1]:
            raise VerifyException(f"'ps.commit' prepare @{cluster} comes before @{cluster}'s last push step; "
                                  "a cluster commits once it has sent every layer (§3.2 step 2)")
        _order(prepare, commit, position, "the two-stage commit prepares before it commits")
        _order(commit, window_close, position, f"@{cluster} commits inside the window")
        _order(update, notice, position, "the master notifies pulls after the update (§3.2 step 6)")
        _before(notice, pulls[0], ops, f"@{cluster}'s first pull")
        if first_commit is None or position[id(commit)] < position[id(first_commit)]:
            first_commit = commit
    _order(first_commit, window_open, position, "the first commit opens the window (§3.2 step 3)")
    _order(window_open, window_close, position, "the window opens before it closes")
    _order(window_close, update, position, "the update follows the window (§3.2 step 5)")


def _only_in(ops: list[Operation], cls: type) -> Operation:
    found = [op for op in ops if isinstance(op, cls)]
    if len(found) != 1:
        raise VerifyException(f"'ps.round' needs exactly one {cls.name}, it has {len(found)}")
    return found[0]


def _order(first: Operation, second: Operation, position: dict, why: str) -> None:
    if position[id(first)] > position[id(second)]:
        raise VerifyException(f"'{second.name}' comes before '{first.name}' in ps.round; {why}")


def _before(op: Operation, index: int, ops: list[Operation], what: str) -> None:
    if ops.index(op) > index:
        raise VerifyException(f"'{op.name}' @{op.cluster.data} comes after {what}; a cluster asks before it moves data")
