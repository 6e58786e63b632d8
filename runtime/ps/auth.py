"""Authentication of every Di-PS message with a shared secret (issue 19, item 5).

A control message (gRPC, JSON body) travels as `mac || body` and a data message
(ZeroMQ, multipart) as `[header, mac, payload...]`, with mac = HMAC-SHA256(secret,
header || payload...). Every header and body carries a random nonce; a receiver keeps
the nonces it has seen recently and refuses a replay. Verification comes first: a
message whose MAC does not verify is refused, logged with its peer, and nothing in it
is looked at.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping

__all__ = ["AuthError", "Authenticator", "MAC_BYTES"]

MAC_BYTES = 32
log = logging.getLogger("stagec.ps.auth")


class AuthError(Exception):
    """A message that failed authentication or a replay check."""


class Authenticator:
    """Signs and verifies messages with one shared secret; remembers recent nonces."""

    def __init__(self, secret: bytes, remember: int = 65536):
        if not secret:
            raise ValueError("the Di-PS shared secret must not be empty")
        self._secret = secret
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._remember = remember
        self._lock = threading.Lock()

    @staticmethod
    def nonce() -> str:
        return os.urandom(12).hex()

    def mac(self, parts: Iterable[bytes | memoryview]) -> bytes:
        h = hmac.new(self._secret, digestmod=hashlib.sha256)
        for part in parts:
            h.update(part)
        return h.digest()

    def _check_nonce(self, nonce: object, peer: str) -> None:
        if not isinstance(nonce, str) or not nonce:
            raise AuthError(f"message from {peer} has no nonce")
        with self._lock:
            if nonce in self._seen:
                log.warning("refused a replayed message from %s", peer)
                raise AuthError(f"replayed message from {peer}")
            self._seen[nonce] = None
            if len(self._seen) > self._remember:
                self._seen.popitem(last=False)

    def seal(self, body: Mapping) -> bytes:
        """A control message: mac || JSON body (with a fresh nonce)."""
        data = json.dumps({**body, "nonce": self.nonce()}, separators=(",", ":")).encode()
        return self.mac([data]) + data

    def open(self, message: bytes, peer: str) -> dict:
        """The body of a sealed control message, or AuthError (logged)."""
        mac, data = message[:MAC_BYTES], message[MAC_BYTES:]
        if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, self.mac([data])):
            log.warning("refused an unauthenticated control message from %s", peer)
            raise AuthError(f"unauthenticated control message from {peer}")
        body = json.loads(data)
        if not isinstance(body, dict):
            raise AuthError(f"control message from {peer} is not an object")
        self._check_nonce(body.get("nonce"), peer)
        return body

    def payload_mac(self, payload: Iterable) -> str:
        """HMAC of a data message's payload frames; computed once per committed version
        for pulls (the producer side of §3.2's pipeline) and per layer for pushes."""
        return self.mac(payload).hex()

    def frames(self, header: Mapping, payload: list, payload_mac: str | None = None) -> list:
        """A data message: [header, mac(header), payload...]. The header carries a
        fresh nonce and the payload's MAC, so the receiver checks the header (cheap)
        before the payload is touched and the payload's MAC in its consumer thread."""
        mac = payload_mac if payload_mac is not None else self.payload_mac(payload)
        head = json.dumps({**header, "nonce": self.nonce(), "payload_mac": mac}, separators=(",", ":")).encode()
        return [head, self.mac([head]), *payload]

    def open_header(self, frames: list, peer: str) -> tuple[dict, list]:
        """(header, payload frames) of a data message whose header verifies, or
        AuthError (logged). The payload is not yet checked: see `check_payload`."""
        if len(frames) < 2:
            log.warning("refused a malformed data message from %s", peer)
            raise AuthError(f"malformed data message from {peer}")
        head, mac, payload = bytes(frames[0]), bytes(frames[1]), frames[2:]
        if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, self.mac([head])):
            log.warning("refused an unauthenticated data message from %s", peer)
            raise AuthError(f"unauthenticated data message from {peer}")
        header = json.loads(head)
        if not isinstance(header, dict):
            raise AuthError(f"data message header from {peer} is not an object")
        self._check_nonce(header.get("nonce"), peer)
        return header, payload

    def check_payload(self, header: Mapping, payload: list, peer: str) -> None:
        expected = header.get("payload_mac")
        if not isinstance(expected, str) or not hmac.compare_digest(expected, self.payload_mac(payload)):
            log.warning("refused a data message with a forged payload from %s", peer)
            raise AuthError(f"payload of a data message from {peer} does not match its MAC")
