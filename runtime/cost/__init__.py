"""The cost model (docs/cost-model.md): hardware descriptions, per-op compute time on
a roofline, collective time on an alpha-beta model, and profiles of measured times.

    from stagec.runtime.cost import CostModel, load_hardware
    model = CostModel(load_hardware("h100-sxm"))
    cost = model.op_cost(op, bindings)   # OpCost(num_ops, tensor_size, micros, source)

Shared by the Chakra emitter, the simulator (runtime/sim) and the DeepCompile passes.
"""

from stagec.runtime.cost.collectives import COLLECTIVES, CollectiveError, comm_micros
from stagec.runtime.cost.hardware_description import (
    Efficiency,
    Hardware,
    HardwareError,
    Link,
    load_hardware,
    parse_hardware,
    shipped_hardware,
)
from stagec.runtime.cost.model import CostError, CostModel, OpCost, element_dtype, op_dtype
from stagec.runtime.cost.profile import (
    CollectiveSample,
    Profile,
    ProfileError,
    SignatureError,
    load_profile,
    op_signature,
    parse_profile,
)

__all__ = [
    "COLLECTIVES",
    "CollectiveError",
    "CollectiveSample",
    "CostError",
    "CostModel",
    "Efficiency",
    "Hardware",
    "HardwareError",
    "Link",
    "OpCost",
    "Profile",
    "ProfileError",
    "SignatureError",
    "comm_micros",
    "element_dtype",
    "load_hardware",
    "load_profile",
    "op_dtype",
    "op_signature",
    "parse_hardware",
    "parse_profile",
    "shipped_hardware",
]
