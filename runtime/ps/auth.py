"""Authentication of every Di-PS message with a shared secret (issue 19, item 5).

A control message (gRPC, JSON body) travels as `mac || body` with mac =
HMAC-SHA256(secret, body). A data message (ZeroMQ, multipart) is
`[header, HMAC-SHA256(secret, header), payload...]`; the header carries the payload's
MAC (`mac.PayloadMac`: GHASH or Poly1305 under a one-time key derived from the secret
and the header's `payload_nonce`), so the small header is checked first and the payload's MAC
after, in the receiver's consumer thread, fused with the copy into the memory pool.
Every header and body carries a random nonce; a receiver keeps the nonces it has seen
recently and refuses a replay. Verification comes first: a message whose MAC does not
verify is refused, logged with its peer, and nothing in it is applied.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from stagec.runtime.ps.mac import ALGORITHM, PayloadMac, payload_key

__all__ = ["AuthError", "Authenticator", "MAC_BYTES"]

MAC_BYTES = 32
log = logging.getLogger("stagec.ps.auth")


class AuthError(Exception):
    """A message that failed authentication or a replay check."""


class Authenticator:
    """Signs and verifies messages with one shared secret; remembers recent nonces."""

    def __init__(self, secret: bytes, remember: int = 65536, payload_alg: str = ALGORITHM):
        if not secret:
            raise ValueError("the Di-PS shared secret must not be empty")
        PayloadMac(b"\0" * 32, payload_alg)  # an algorithm this process cannot run fails here
        self._secret = secret
        self.payload_alg = payload_alg
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

    def seal_payload(self, payload: Sequence) -> dict:
        """The header fields that authenticate `payload`: a fresh nonce, the algorithm
        and the tag. A slave seals its pull frames once per committed version (the
        producer side of §3.2's pipeline); a push is sealed per layer."""
        nonce = os.urandom(16)
        key = payload_key(self._secret, nonce, self.payload_alg)
        tag = PayloadMac(key, self.payload_alg).frames(payload).digest()
        return {"payload_alg": self.payload_alg, "payload_nonce": nonce.hex(), "payload_mac": tag.hex()}

    def frames(self, header: Mapping, payload: list, sealed: Mapping | None = None) -> list:
        """A data message: [header, mac(header), payload...]. The header carries a
        fresh nonce and the payload's seal (`seal_payload`, computed here unless given)."""
        seal = sealed if sealed is not None else self.seal_payload(payload)
        head = json.dumps({**header, **seal, "nonce": self.nonce()}, separators=(",", ":")).encode()
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

    def check_payload(self, header: Mapping, payload: Sequence, peer: str,
                      into: Sequence[np.ndarray] | None = None) -> None:
        """AuthError (logged) unless `payload` matches the seal in its (verified)
        header. With `into` (a memory-pool buffer set whose sizes `wire.check_tensors`
        has checked), the bytes are copied there during the same pass; on a refusal
        the caller must not use `into`."""
        alg, nonce, expected = header.get("payload_alg"), header.get("payload_nonce"), header.get("payload_mac")
        if alg != self.payload_alg or not isinstance(nonce, str) or not isinstance(expected, str):
            log.warning("refused a data message without a valid payload seal from %s", peer)
            raise AuthError(f"data message from {peer} has no {self.payload_alg} payload seal (got {alg!r})")
        try:
            key = payload_key(self._secret, bytes.fromhex(nonce), self.payload_alg)
        except ValueError:
            raise AuthError(f"data message from {peer} has a malformed payload nonce") from None
        tag = PayloadMac(key, self.payload_alg).frames(payload, into).digest().hex()
        if not hmac.compare_digest(expected.encode(), tag.encode()):
            log.warning("refused a data message with a forged payload from %s", peer)
            raise AuthError(f"payload of a data message from {peer} does not match its MAC")
