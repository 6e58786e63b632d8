"""The control flow on gRPC (di-ps.md §3.2): one unary method, `/dips.Master/Call`, whose
request and response are sealed JSON bodies (`auth.Authenticator.seal`), served with
grpc's generic handlers so there is no generated code.

A request names an `op`; the master answers a body. A request that fails
authentication is refused with UNAUTHENTICATED and logged; one the master cannot
accept (an unknown op, a stale version) gets `{"error": ...}`.

`ControlClient.call` never blocks for long: it returns None when the master cannot be
reached within the timeout, and callers retry on their own schedule (§4: clients
"persistently attempt to reconnect in a non-blocking manner").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures

import grpc

from stagec.runtime.ps.auth import AuthError, Authenticator

__all__ = ["ControlClient", "long_poll_s", "push_settled", "serve"]

SERVICE, METHOD = "dips.Master", "Call"
log = logging.getLogger("stagec.ps.control")


def long_poll_s(plan) -> float:
    """How long the master may hold a long poll (a request with `wait_s`): half a
    heartbeat, since a slave's poll is its heartbeat, and well inside a call's timeout."""
    return min(plan.heartbeat_s / 2, 1.0)


def push_settled(status: dict) -> bool:
    """Whether a `push_status` answer is final for the cluster: its round is over, or it
    never gets one (training finished before it began)."""
    return status["state"] in ("done", "excluded", "skipped") or bool(status.get("finished")) and status[
        "state"] != "in_round"


def serve(address: str, auth: Authenticator, handle: Callable[[dict], dict], workers: int = 16) -> grpc.Server:
    """Start a gRPC server on `address` that routes every authenticated body to `handle`."""

    def call(request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            body = auth.open(request, context.peer())
        except AuthError as error:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, str(error))
        try:
            reply = handle(body)
        except Exception as error:  # a bug in a handler answers the caller, not the server
            log.exception("control op %s failed", body.get("op"))
            reply = {"error": f"{type(error).__name__}: {error}"}
        return auth.seal(reply)

    handler = grpc.method_handlers_generic_handler(SERVICE, {METHOD: grpc.unary_unary_rpc_method_handler(call)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    server.add_generic_rpc_handlers((handler,))
    if server.add_insecure_port(address) == 0:
        raise OSError(f"cannot bind the control port {address}")
    server.start()
    return server


class ControlClient:
    def __init__(self, address: str, auth: Authenticator):
        self.address, self.auth = address, auth
        self._channel = grpc.insecure_channel(address)
        self._call = self._channel.unary_unary(f"/{SERVICE}/{METHOD}")

    def call(self, op: str, timeout: float = 2.0, **fields) -> dict | None:
        """The master's answer, or None if it cannot be reached (or refuses us)."""
        try:
            reply = self._call(self.auth.seal({"op": op, **fields}), timeout=timeout, wait_for_ready=False)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.UNAUTHENTICATED:
                log.warning("master refused %s: %s", op, error.details())
            else:
                log.debug("%s to %s: %s", op, self.address, error.code())
            return None
        try:
            return self.auth.open(reply, self.address)
        except AuthError:
            return None

    def close(self) -> None:
        self._channel.close()
