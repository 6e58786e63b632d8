"""The clusters' side of the data flow (di-ps.md §3.2): push and pull a layer on ZeroMQ.

One thread per layer of a push step, each with its own DEALER socket to the layer's
slave port: while one layer is on the wire the next one's payload MAC is being computed
(hashlib releases the GIL), which is the sender's half of §3.2's pipeline. Tensors are
sent from their own memory (zero-copy frames); nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.wire import LayerSpec, WireError, check_tensors, decode, encode_header

__all__ = ["DataClient", "DataError"]


class DataError(Exception):
    """A push or pull that did not complete (a slave refused it, or did not answer)."""


class DataClient:
    def __init__(self, auth: Authenticator, address_of_layer, specs: Sequence[LayerSpec], timeout_s: float = 10.0):
        self.auth, self.address_of_layer, self.specs, self.timeout_ms = auth, address_of_layer, specs, int(
            timeout_s * 1000)
        self.ctx = zmq.Context.instance()
        self.pool = ThreadPoolExecutor(max_workers=max(1, len(specs)))

    def _socket(self, layer: int) -> zmq.Socket:
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.address_of_layer(layer))
        return sock

    def _reply(self, sock: zmq.Socket, layer: int) -> tuple[dict, list]:
        if not sock.poll(self.timeout_ms):
            raise DataError(f"layer {layer}: no answer from its slave in {self.timeout_ms} ms")
        frames = [f.buffer for f in sock.recv_multipart(copy=False)]
        try:
            return self.auth.open_header(frames, f"slave of layer {layer}")
        except AuthError as error:
            raise DataError(str(error)) from error

    def push_layer(self, layer: int, tensors: Mapping[str, np.ndarray], header: Mapping) -> None:
        spec = self.specs[layer]
        payload = [memoryview(np.ascontiguousarray(tensors[n])).cast("B") for n in spec.names]
        sock = self._socket(layer)
        try:
            sock.send_multipart(self.auth.frames({**header, "kind": "push", "layer": layer,
                                                  "tensors": encode_header(spec)}, payload), copy=False)
            reply, _ = self._reply(sock, layer)
        finally:
            sock.close()
        if not reply.get("ok"):
            raise DataError(f"layer {layer}: refused by its slave: {reply.get('error')}")

    def push(self, layers: Sequence[int], tensors_of_layer: Sequence[Mapping[str, np.ndarray]], header: Mapping):
        """Push `layers` concurrently (one thread per layer); raises DataError on any."""
        futures = [self.pool.submit(self.push_layer, l, tensors_of_layer[l], header) for l in layers]
        for f in futures:
            f.result()

    def pull_layer(self, layer: int, min_version: int) -> tuple[int, list[np.ndarray]]:
        spec = self.specs[layer]
        sock = self._socket(layer)
        try:
            frames = self.auth.frames({"kind": "pull", "layer": layer, "min_version": min_version}, [])
            nonce = _nonce(frames[0])
            sock.send_multipart(frames)
            reply, payload = self._reply(sock, layer)
        finally:
            sock.close()
        if reply.get("request") != nonce:
            raise DataError(f"layer {layer}: the reply does not answer our request")
        if not reply.get("ok"):
            raise DataError(f"layer {layer}: not ready at version {min_version} (slave at {reply.get('version')})")
        try:
            check_tensors(reply, payload, spec)
            self.auth.check_payload(reply, payload, f"slave of layer {layer}")
        except (WireError, AuthError) as error:
            raise DataError(f"layer {layer}: {error}") from error
        return int(reply["version"]), decode(payload, spec)

    def pull(self, layers: Sequence[int], min_version: int) -> tuple[int, list[list[np.ndarray]]]:
        """All `layers` at one common version >= min_version (re-pulled until they agree)."""
        while True:
            results = list(self.pool.map(lambda l: self.pull_layer(l, min_version), layers))
            versions = {v for v, _ in results}
            if len(versions) == 1:
                return versions.pop(), [arrays for _, arrays in results]
            min_version = max(versions)

    def close(self) -> None:
        self.pool.shutdown(wait=False)


def _nonce(head: bytes) -> str:
    import json
    return json.loads(head)["nonce"]
