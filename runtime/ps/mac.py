"""The data plane's payload MAC (issue 19, item 5; the data flow of di-ps.md §3.2): a
one-time polynomial MAC, GHASH where the CPU multiplies four blocks in one VPCLMULQDQ
(stagec.csrc._mac), else Poly1305 from the OpenSSL that CPython's `hashlib` already links.

Why not HMAC-SHA256 over the payload: it runs at about 1.4-1.8 GB/s on one core here
(with SHA-NI), less than loopback ZeroMQ, and both ends MAC every byte, so a push of
256 MB spent more time in the MAC than on the wire. Keyed BLAKE2b is slower still (0.8
GB/s). OpenSSL's Poly1305 runs at about 12.6 GB/s (AVX-512 IFMA), GHASH on VPCLMULQDQ at
about 20 GB/s: on two cores a push is CPU-bound and the two ends' MACs are all that
Di-PS adds to raw ZeroMQ, so GHASH's saving (about 15 ms of CPU a 256 MB push) made
pushes 6-8% faster (docs/dips-runtime.md, Measured). Both calls release the GIL, so
the per-layer threads MAC while other threads receive and copy.

Both are one-time authenticators: a key must never MAC two different messages. Each
payload gets a fresh random 16-byte nonce and the key
HMAC-SHA256(secret, "dips-payload-" || algorithm || nonce) ("dips-payload-poly1305"
for Poly1305 and the HMAC-SHA256 fallback); the nonce travels in the
(HMAC-authenticated) header. Reusing a nonce for the *same* bytes (a slave answering
pulls from frames sealed once per version) gives the same tag and reveals nothing new.
Each frame is MAC'd as its length (a 16-byte little-endian block), its bytes, then
zeros up to a multiple of 16 (the padding of RFC 8439's AEAD): frames cannot be re-cut,
and every frame starts on a block, which the vector code needs for its speed (an
8-byte length alone made Poly1305 35% slower).

GHASH's tag is GHASH_H(the frames, then a block of the frame count and the byte
count, each 64-bit little-endian) XOR s, with (H, s) the two halves of the one-time
key: the Wegman-Carter MAC that GMAC is, with a one-time key in place of AES. The
closing block is GCM's length block: GHASH alone cannot tell a message from one with
zero blocks in front (an empty frame's length block is one), and the counts can. A
forgery succeeds with probability at most (blocks + 1) / 2^128 (a nonzero polynomial of
that degree in the uniformly random H has that many roots), about 2^-104 for 256 MB;
Poly1305's bound there is about 2^-79.

Where neither can run, the tag is HMAC-SHA256 under the derived key (`ALGORITHM` says
which): correct, only slower. Both ends of a deployment run on one machine image, so
they agree; a header names its algorithm and a receiver refuses any other than its own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import hmac
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["ALGORITHM", "ALGORITHMS", "CHUNK_BYTES", "PayloadMac", "payload_key"]

# Fused verify-and-copy works in chunks that stay in the L2 cache between the MAC
# reading them and the copy writing them to the memory pool.
CHUNK_BYTES = 1 << 20
ALGORITHMS = ("ghash", "poly1305", "hmac-sha256")


def _libcrypto() -> tuple[ctypes.CDLL, int] | tuple[None, None]:
    """The libcrypto that `_hashlib` loaded (one OpenSSL per process), else the
    system's, with its Poly1305 EVP_MAC; (None, None) where there is none."""
    import _hashlib  # noqa: F401  (loads libcrypto into this process)

    paths = []
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "libcrypto" in line and "/" in line})
    except OSError:
        pass
    found = ctypes.util.find_library("crypto")
    for path in [*paths, *([found] if found else [])]:
        try:
            lib = ctypes.CDLL(path)
            fetch = lib.EVP_MAC_fetch
        except (OSError, AttributeError):
            continue
        fetch.restype, fetch.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        mac = fetch(None, b"POLY1305", None)
        if not mac:
            continue
        lib.EVP_MAC_CTX_new.restype, lib.EVP_MAC_CTX_new.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
        lib.EVP_MAC_init.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
        lib.EVP_MAC_update.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        lib.EVP_MAC_final.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                                      ctypes.c_size_t]
        lib.EVP_MAC_CTX_free.argtypes = [ctypes.c_void_p]
        return lib, mac
    return None, None


def _ghash():
    """stagec.csrc._mac where it was built and this CPU has its four-block instructions
    (one block at a time it is slower than OpenSSL's Poly1305), else None."""
    try:
        from stagec.csrc import _mac
    except ImportError:
        return None
    return _mac if _mac.support() == 2 else None


_LIB, _POLY1305 = _libcrypto()
_GHASH = _ghash()
ALGORITHM = "ghash" if _GHASH is not None else "poly1305" if _LIB is not None else "hmac-sha256"


def payload_key(secret: bytes, nonce: bytes, algorithm: str = ALGORITHM) -> bytes:
    """The one-time 32-byte key of the payload sealed with `nonce` under `algorithm`."""
    label = b"dips-payload-ghash" if algorithm == "ghash" else b"dips-payload-poly1305"
    return hmac.new(secret, label + nonce, hashlib.sha256).digest()


def _address(buffer) -> tuple[int, int]:
    """(address, byte length) of any contiguous buffer, read-only ones included."""
    if isinstance(buffer, np.ndarray):
        if not buffer.flags.c_contiguous:
            raise ValueError("a payload buffer must be contiguous")
        return buffer.ctypes.data, buffer.nbytes
    view = np.frombuffer(buffer, dtype=np.uint8)
    return view.ctypes.data, view.nbytes


class PayloadMac:
    """An incremental payload MAC under one one-time key."""

    def __init__(self, key: bytes, algorithm: str = ALGORITHM):
        self.algorithm = algorithm
        if algorithm == "ghash":
            if _GHASH is None:
                raise ValueError("GHASH needs stagec.csrc._mac and a CPU with AVX-512's VPCLMULQDQ, which this "
                                 "process lacks")
            if len(key) != 32:
                raise ValueError(f"a GHASH payload key is 32 bytes (H and s), not {len(key)}")
            self._ghash, self._pad = _GHASH.Ghash(key[:16]), key[16:]
            self._frames = self._bytes = 0
        elif algorithm == "poly1305":
            if _LIB is None:
                raise ValueError("Poly1305 needs OpenSSL >= 3.0's libcrypto, which this process cannot load")
            self._ctx = _LIB.EVP_MAC_CTX_new(_POLY1305)
            if not self._ctx or _LIB.EVP_MAC_init(self._ctx, key, len(key), None) != 1:
                raise RuntimeError("OpenSSL refused to start a Poly1305 MAC")
        elif algorithm == "hmac-sha256":
            self._hmac = hmac.new(key, digestmod=hashlib.sha256)
        else:
            raise ValueError(f"unknown payload MAC algorithm {algorithm!r} (expected {', '.join(ALGORITHMS)})")

    def __del__(self):
        ctx = getattr(self, "_ctx", None)
        if ctx:
            _LIB.EVP_MAC_CTX_free(ctx)
            self._ctx = None

    def _update_raw(self, address: int, size: int) -> None:
        if size == 0:
            return
        if self.algorithm == "ghash":
            self._ghash.update(address, size)
        elif self.algorithm == "poly1305":
            if _LIB.EVP_MAC_update(self._ctx, address, size) != 1:
                raise RuntimeError("OpenSSL failed a Poly1305 update")
        else:
            self._hmac.update((ctypes.c_char * size).from_address(address))

    def update(self, buffer) -> None:
        address, size = _address(buffer)
        self._update_raw(address, size)

    def frame(self, buffer, into: np.ndarray | None = None) -> None:
        """MAC one frame (its length, then its bytes); with `into`, also copy the bytes
        there chunk by chunk while they are still in cache."""
        address, size = _address(buffer)
        if self.algorithm == "ghash":
            self._frames, self._bytes = self._frames + 1, self._bytes + size
        self.update(size.to_bytes(16, "little"))
        if into is None:
            self._update_raw(address, size)
        else:
            target, room = _address(into)
            if room != size:
                raise ValueError(f"a frame of {size} bytes does not fit a buffer of {room}")
            for offset in range(0, size, CHUNK_BYTES):
                n = min(CHUNK_BYTES, size - offset)
                self._update_raw(address + offset, n)
                ctypes.memmove(target + offset, address + offset, n)  # releases the GIL
        if size % 16:
            self.update(bytes(16 - size % 16))

    def frames(self, buffers: Iterable, into: Sequence[np.ndarray] | None = None) -> PayloadMac:
        for k, buffer in enumerate(buffers):
            self.frame(buffer, None if into is None else into[k])
        return self

    def digest(self) -> bytes:
        if self.algorithm == "hmac-sha256":
            return self._hmac.digest()
        if self.algorithm == "ghash":
            self.update(self._frames.to_bytes(8, "little") + self._bytes.to_bytes(8, "little"))
            return bytes(a ^ b for a, b in zip(self._ghash.digest(), self._pad))
        out, size = ctypes.create_string_buffer(16), ctypes.c_size_t()
        if _LIB.EVP_MAC_final(self._ctx, out, ctypes.byref(size), 16) != 1:
            raise RuntimeError("OpenSSL failed to finish a Poly1305 MAC")
        return out.raw[:size.value]
