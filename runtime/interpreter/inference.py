"""Kernels of dialects/stg/inference.py: the key/value cache.

A cache lives in the StateStore's `states` table under ("kv_cache", name), stacked per
layer of the enclosing stg.repeats as a parameter is; a cache the store lacks starts
at zero (a prefill fills it; a decode step after it reads what the prefill wrote).
"""

from __future__ import annotations

import torch

from stagec.dialects.stg.inference import KvCacheOp
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.tensor_types import torch_dtype
from stagec.runtime.interpreter.values import Layout, assemble_global, shard_global

KV_CACHE = "kv_cache"


@implements(KvCacheOp)
def kv_cache(op: KvCacheOp, operands, ex):
    entries = assemble_global(operands[0], Layout.of(op.entries.type), ex.placement)
    ty = op.result.type
    shape, dtype = ex.sizes.global_shape(ty), torch_dtype(ty.element_type)
    at = ex.sizes.eval(op.at_expr, "the position of stg.kv_cache")
    new = entries.shape[1]
    if at < 0 or at + new > shape[1]:
        raise InterpreterError(f'kv cache "{op.cache_name.data}": {new} entries at {at} overrun its {shape[1]} positions')
    indices = tuple(i for i, _ in ex.layers)
    stacked = tuple(n for _, n in ex.layers) + shape
    key = (KV_CACHE, op.cache_name.data)
    stored = ex.writes.get("states", key)
    if stored is None:
        cache = torch.zeros(shape, dtype=dtype)
    elif tuple(stored.shape) != stacked:
        raise InterpreterError(
            f'kv cache "{op.cache_name.data}" is {list(stored.shape)} in the state store, but the program '
            f"holds it as {list(stacked)}"
        )
    else:
        cache = (stored[indices] if indices else stored).to(dtype).clone()
    cache[:, at : at + new] = entries.to(dtype)
    if indices:
        ex.writes.write_layer("states", key, indices, stacked, cache)
    else:
        ex.writes.write("states", key, cache)
    return [shard_global(cache, Layout.of(ty), ex.placement)]
