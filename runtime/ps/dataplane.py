"""The clusters' side of the data flow (di-ps.md §3.2): push and pull a layer on ZeroMQ.

One thread per layer of a push step, each with its own DEALER socket to the layer's
slave port: while one layer is on the wire the next one's payload MAC is being computed
(hashlib releases the GIL), which is the sender's half of §3.2's pipeline. Tensors are
sent from their own memory (zero-copy frames); nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.wire import LayerSpec, WireError, check_tensors, encode_header

__all__ = ["DataClient", "DataError"]


class DataError(Exception):
    """A push or pull that did not complete (a slave refused it, or did not answer)."""


class _Pipeline:
    """One push's stages (§3.2's pipeline on the sender): layers are sealed (MAC) one
    at a time, so the first is on the wire after one layer's MAC rather than after all
    of them, and at most `window` layers are being written to the wire at once, so
    they arrive one after another and each slave verifies one layer while the next
    arrives. Acknowledgements are awaited outside the window: they never stall it."""

    def __init__(self, window: int):
        self.sealing = threading.Lock()
        self.writing = threading.BoundedSemaphore(window)


class DataClient:
    def __init__(self, auth: Authenticator, address_of_layer, specs: Sequence[LayerSpec], timeout_s: float = 10.0,
                 window: int = 2):
        if window < 1:
            raise ValueError(f"a push window of {window} layers: it must be at least 1")
        self.auth, self.address_of_layer, self.specs, self.timeout_ms = auth, address_of_layer, specs, int(
            timeout_s * 1000)
        self.window = window
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

    def push_layer(self, layer: int, tensors: Mapping[str, np.ndarray], header: Mapping,
                   pipeline: _Pipeline | None = None) -> None:
        """Send one layer and wait for its slave's acknowledgement (DataError if refused)."""
        pipeline = pipeline or _Pipeline(1)
        spec = self.specs[layer]
        payload = [memoryview(np.ascontiguousarray(tensors[n])).cast("B") for n in spec.names]
        sock = self._socket(layer)
        try:
            with pipeline.sealing:
                head = {**header, "kind": "push", "layer": layer, "tensors": encode_header(spec)}
                frames = [zmq.Frame(f, copy=False, track=True) for f in self.auth.frames(head, payload)]
            trackers = [f.tracker for f in frames if f.tracker is not None]
            with pipeline.writing:
                sock.send_multipart(frames, copy=False)
                # libzmq lets go of a zero-copy frame once its bytes are in the kernel
                # (and our Frame objects are gone: they hold a reference too)
                del frames
                for tracker in trackers:
                    try:
                        tracker.wait(self.timeout_ms / 1000)
                    except zmq.NotDone:
                        raise DataError(f"layer {layer}: not sent to its slave in {self.timeout_ms} ms") from None
            reply, _ = self._reply(sock, layer)
        finally:
            sock.close()
        if not reply.get("ok"):
            raise DataError(f"layer {layer}: refused by its slave: {reply.get('error')}")

    def push(self, layers: Sequence[int], tensors_of_layer: Sequence[Mapping[str, np.ndarray]], header: Mapping):
        """Push `layers` (a thread per layer, through one `_Pipeline`); raises DataError on any."""
        pipeline = _Pipeline(self.window)
        futures = [self.pool.submit(self.push_layer, l, tensors_of_layer[l], header, pipeline) for l in layers]
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
        arrays = [np.empty(s, dtype=d) for s, d in zip(spec.shapes, spec.dtypes)]
        try:
            check_tensors(reply, payload, spec)
            self.auth.check_payload(reply, payload, f"slave of layer {layer}", into=arrays)
        except (WireError, AuthError) as error:
            raise DataError(f"layer {layer}: {error}") from error
        return int(reply["version"]), arrays

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
