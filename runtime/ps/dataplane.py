"""The clusters' side of the data flow (di-ps.md §3.2): push and pull a layer on ZeroMQ.

One thread per layer of a push step, each on a DEALER socket to the layer's slave port;
tensors go out zero-copy from their own memory, nothing is pickled. A push is a
pipeline (§3.2's producer side): layers are sealed (their payload MAC, `auth`) one at
a time, so the first layer is on the wire after one MAC rather than after all of them,
and at most `window` layers are being written to the wire at once, so layers reach the
slaves one after another and a slave verifies one layer while the next arrives (all 16
layers of a push interleaved on the wire would all land at the end, and the slaves'
verification with them). Acknowledgements are awaited outside the window.

Sockets are kept per layer between requests (a fresh TCP connection per layer costs
its handshake and its receive window's ramp-up on every push); one is reused only after
its request was answered, and dropped on any error.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.wire import LayerSpec, WireError, check_tensors, encode_header

__all__ = ["DataClient", "DataError"]


class DataError(Exception):
    """A push or pull that did not complete (a slave refused it, or did not answer)."""


class _Pipeline:
    """One push's stages: `sealing` lets one layer's MAC run at a time, `writing` lets
    `window` layers be written to the wire at once."""

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
        self._idle: dict[int, list[zmq.Socket]] = defaultdict(list)
        self._idle_lock = threading.Lock()

    @contextmanager
    def _connection(self, layer: int) -> Iterator[zmq.Socket]:
        """A socket to the slave of `layer`: an idle one, else a new one. It goes back
        to the idle ones only if the block ends normally (its request answered)."""
        with self._idle_lock:
            sock = self._idle[layer].pop() if self._idle[layer] else None
        if sock is None:
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.address_of_layer(layer))
        try:
            yield sock
        except BaseException:
            sock.close()
            raise
        with self._idle_lock:
            self._idle[layer].append(sock)

    def _reply(self, sock: zmq.Socket, layer: int, request: str) -> tuple[dict, list, list]:
        """The slave's authenticated answer to `request` (the nonce of our header), its
        payload and its raw [header, MAC] frames; a refusal of a message the slave could
        not authenticate names no request."""
        if not sock.poll(self.timeout_ms):
            raise DataError(f"layer {layer}: no answer from its slave in {self.timeout_ms} ms")
        frames = [f.buffer for f in sock.recv_multipart(copy=False)]
        try:
            reply, payload = self.auth.open_header(frames, f"slave of layer {layer}")
        except AuthError as error:
            raise DataError(str(error)) from error
        if reply.get("request") != request and not (reply.get("request") is None and not reply.get("ok")):
            raise DataError(f"layer {layer}: the reply does not answer our request")
        return reply, payload, frames[:2]

    def push_layer(self, layer: int, tensors: Mapping[str, np.ndarray], header: Mapping,
                   pipeline: _Pipeline | None = None) -> list[str]:
        """Send one layer and wait for its slave's acknowledgement (DataError if
        refused). The acknowledgement is the slave's receipt for the master: its header
        and the header's MAC, as [header text, MAC hex] (`Master.op_push_step_done`)."""
        pipeline = pipeline or _Pipeline(1)
        spec = self.specs[layer]
        payload = [memoryview(np.ascontiguousarray(tensors[n])).cast("B") for n in spec.names]
        with self._connection(layer) as sock:
            with pipeline.sealing:
                parts = self.auth.frames({**header, "kind": "push", "layer": layer, "tensors": encode_header(spec)},
                                         payload)
            request = json.loads(parts[0])["nonce"]
            frames = [zmq.Frame(p, copy=False, track=True) for p in parts]
            trackers = [f.tracker for f in frames if f.tracker is not None]
            with pipeline.writing:
                sock.send_multipart(frames, copy=False)
                # libzmq lets go of a zero-copy frame once its bytes are in the kernel,
                # and of ours once the Frame objects (which hold a reference too) are gone
                del frames
                for tracker in trackers:
                    try:
                        tracker.wait(self.timeout_ms / 1000)
                    except zmq.NotDone:
                        raise DataError(f"layer {layer}: not sent to its slave in {self.timeout_ms} ms") from None
            reply, _, (head, mac) = self._reply(sock, layer, request)
        if not reply.get("ok"):
            raise DataError(f"layer {layer}: refused by its slave: {reply.get('error')}")
        return [bytes(head).decode(), bytes(mac).hex()]

    def push(self, layers: Sequence[int], tensors_of_layer: Sequence[Mapping[str, np.ndarray]],
             header: Mapping) -> list[list[str]]:
        """Push `layers` (a thread per layer, through one pipeline); their slaves'
        receipts, or DataError on any."""
        pipeline = _Pipeline(self.window)
        futures = [self.pool.submit(self.push_layer, l, tensors_of_layer[l], header, pipeline) for l in layers]
        return [f.result() for f in futures]

    def pull_layer(self, layer: int, min_version: int) -> tuple[int, list[np.ndarray]]:
        """(version, arrays) of `layer` at a version >= min_version; DataError if the
        slave is not there yet or its answer fails a check."""
        spec = self.specs[layer]
        with self._connection(layer) as sock:
            frames = self.auth.frames({"kind": "pull", "layer": layer, "min_version": min_version}, [])
            sock.send_multipart(frames)
            reply, payload, _ = self._reply(sock, layer, json.loads(frames[0])["nonce"])
        if not reply.get("ok"):
            raise DataError(f"layer {layer}: not ready at version {min_version} (slave at {reply.get('version')})")
        # the MAC is checked in the pass that copies the payload out of ZeroMQ's buffers
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
        with self._idle_lock:
            for socks in self._idle.values():
                for sock in socks:
                    sock.close()
            self._idle.clear()
