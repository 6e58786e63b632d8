"""The data plane's payload MAC and the cluster's data client (issue 19, items 2 and 5):
Poly1305 is the real thing (RFC 8439's test vector), GHASH is GCM's (against OpenSSL's
AES-GCM on random inputs), the one in use is the fastest this machine runs, the frame
encoding is pinned, the
slave's fused verify-and-copy gives the same tag and the same bytes, a forged or
re-cut payload is refused, and the client reuses a layer's socket and refuses an
answer to someone else's request. No processes: a slave's ROUTER socket in a thread."""

import ctypes
import hashlib
import hmac
import json
import threading

import numpy as np
import pytest
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.dataplane import DataClient, DataError
from stagec.runtime.ps.mac import _LIB, ALGORITHM, CHUNK_BYTES, PayloadMac, payload_key
from stagec.runtime.ps.wire import LayerSpec

from .util import SECRET

# RFC 8439 §2.5.2: Poly1305 of "Cryptographic Forum Research Group" under this key
RFC_KEY = bytes.fromhex("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b")
RFC_TAG = bytes.fromhex("a8061dc1305136c6c22b8baf0c0127a9")


def _wide_ghash() -> bool:
    try:
        from stagec.csrc import _mac
    except ImportError:
        return False
    return _mac.support() == 2


WIDE_GHASH = _wide_ghash()
ALGORITHMS = ["ghash", "poly1305", "hmac-sha256"] if WIDE_GHASH else ["poly1305", "hmac-sha256"]


def test_the_payload_mac_is_the_fastest_this_machine_runs():
    # this machine's CPython links OpenSSL 3 and its CPU has VPCLMULQDQ: the fast path
    # must be the one in use, or the data plane is slower (bench/dips_dataplane.py)
    assert ALGORITHM == ("ghash" if WIDE_GHASH else "poly1305")


def test_poly1305_is_openssls():
    mac = PayloadMac(RFC_KEY, "poly1305")
    mac.update(b"Cryptographic Forum Research Group")
    assert mac.digest() == RFC_TAG


def _openssl(name: str, *argtypes, restype=ctypes.c_int):
    function = getattr(_LIB, name)
    function.restype, function.argtypes = restype, list(argtypes)
    return function


def _aes_gcm_tag_and_keys(key: bytes, iv: bytes, aad: bytes) -> tuple[bytes, bytes, bytes]:
    """OpenSSL's AES-128-GCM over `aad` alone (GMAC): (tag, H = AES_K(0), AES_K(J0))."""
    new = _openssl("EVP_CIPHER_CTX_new", restype=ctypes.c_void_p)
    free = _openssl("EVP_CIPHER_CTX_free", ctypes.c_void_p, restype=None)
    init = _openssl("EVP_EncryptInit_ex", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                    ctypes.c_char_p)
    update = _openssl("EVP_EncryptUpdate", ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                      ctypes.c_char_p, ctypes.c_int)
    final = _openssl("EVP_EncryptFinal_ex", ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int))
    ctrl = _openssl("EVP_CIPHER_CTX_ctrl", ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
    gcm = _openssl("EVP_aes_128_gcm", restype=ctypes.c_void_p)()
    ecb = _openssl("EVP_aes_128_ecb", restype=ctypes.c_void_p)()
    out, n = ctypes.create_string_buffer(max(32, len(aad) + 32)), ctypes.c_int()
    ctx = new()
    try:
        assert init(ctx, gcm, None, key, iv) == 1
        if aad:
            assert update(ctx, None, ctypes.byref(n), aad, len(aad)) == 1
        assert final(ctx, out, ctypes.byref(n)) == 1
        tag = ctypes.create_string_buffer(16)
        assert ctrl(ctx, 0x10, 16, tag) == 1  # EVP_CTRL_GCM_GET_TAG
    finally:
        free(ctx)
    blocks = {}
    for name, block in (("h", bytes(16)), ("j0", iv + b"\0\0\0\1")):
        ctx = new()
        try:
            assert init(ctx, ecb, None, key, None) == 1
            assert update(ctx, out, ctypes.byref(n), block, 16) == 1 and n.value == 16
            blocks[name] = out.raw[:16]
        finally:
            free(ctx)
    return tag.raw, blocks["h"], blocks["j0"]


@pytest.mark.skipif(not WIDE_GHASH, reason="this CPU has no AVX-512 VPCLMULQDQ, so the data plane uses Poly1305")
@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 511, 512, 513, 4096 + 5, 65536 + 7, (1 << 20) + 3])
def test_ghash_is_gcms_against_openssl_aes_gcm(size):
    # GMAC(K, IV, A) = GHASH_H(A, zero padding, GCM's length block) XOR AES_K(J0), H = AES_K(0):
    # our GHASH, fed in uneven pieces across its 32-block loop, must give OpenSSL's tag
    from stagec.csrc import _mac

    rng = np.random.default_rng(size)
    key, iv, aad = rng.bytes(16), rng.bytes(12), rng.bytes(size)
    tag, h, j0 = _aes_gcm_tag_and_keys(key, iv, aad)
    data = np.frombuffer(aad + bytes(-size % 16) + (8 * size).to_bytes(8, "big") + bytes(8), np.uint8)
    ghash = _mac.Ghash(h)
    cuts = [0, *sorted(rng.integers(0, data.nbytes, 4)), data.nbytes]
    for lo, hi in zip(cuts, cuts[1:]):
        ghash.update(data.ctypes.data + int(lo), int(hi - lo))
    assert bytes(a ^ b for a, b in zip(ghash.digest(), j0)) == tag


@pytest.mark.skipif(not WIDE_GHASH, reason="this CPU has no AVX-512 VPCLMULQDQ, so the data plane uses Poly1305")
def test_ghash_tags_an_empty_frame_in_front():
    # GHASH alone ignores zero blocks in front, and an empty frame is one (its length
    # block): the closing block of counts tells [b"", b"abc"] from [b"abc"]
    tag = PayloadMac(RFC_KEY, "ghash").frames([b"abc"]).digest()
    assert PayloadMac(RFC_KEY, "ghash").frames([b"", b"abc"]).digest() != tag
    assert PayloadMac(RFC_KEY, "ghash").frames([b"abc"]).digest() == tag


@pytest.mark.skipif(not WIDE_GHASH, reason="this CPU has no AVX-512 VPCLMULQDQ, so the data plane uses Poly1305")
def test_ghash_macs_the_frames_then_their_counts_and_adds_the_pad():
    from stagec.csrc import _mac

    # [b"abc", b""]: each frame's length block, bytes and zero padding, then a block of
    # the frame count and the byte count (64-bit little-endian each); XOR s
    encoded = np.frombuffer((3).to_bytes(16, "little") + b"abc" + bytes(13) + bytes(16)
                            + (2).to_bytes(8, "little") + (3).to_bytes(8, "little"), np.uint8)
    ghash = _mac.Ghash(RFC_KEY[:16])
    ghash.update(encoded.ctypes.data, encoded.nbytes)
    expected = bytes(a ^ b for a, b in zip(ghash.digest(), RFC_KEY[16:]))
    assert PayloadMac(RFC_KEY, "ghash").frames([b"abc", b""]).digest() == expected


def test_the_ghash_key_is_refused_where_it_cannot_run_or_has_the_wrong_size():
    if not WIDE_GHASH:
        with pytest.raises(ValueError, match="VPCLMULQDQ"):
            PayloadMac(RFC_KEY, "ghash")
    else:
        with pytest.raises(ValueError, match="32 bytes"):
            PayloadMac(RFC_KEY[:16], "ghash")


def test_payload_key_is_hmac_sha256_of_a_label_and_the_nonce():
    nonce = bytes(range(16))
    for algorithm, label in (("poly1305", b"dips-payload-poly1305"), ("hmac-sha256", b"dips-payload-poly1305"),
                             ("ghash", b"dips-payload-ghash")):
        assert payload_key(SECRET, nonce, algorithm) == hmac.new(SECRET, label + nonce, hashlib.sha256).digest()


@pytest.mark.parametrize("algorithm", ["poly1305", "hmac-sha256"])  # GHASH: the test above
def test_a_frame_is_macd_as_its_length_block_its_bytes_and_zero_padding(algorithm):
    # b"abc": a 16-byte little-endian length (3), the 3 bytes, 13 zeros to the next block
    encoded = (3).to_bytes(16, "little") + b"abc" + bytes(13)
    expected = PayloadMac(RFC_KEY, algorithm)
    expected.update(encoded)
    assert PayloadMac(RFC_KEY, algorithm).frames([b"abc"]).digest() == expected.digest()
    if algorithm == "hmac-sha256":
        assert expected.digest() == hmac.new(RFC_KEY, encoded, hashlib.sha256).digest()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_re_cut_frames_get_another_tag(algorithm):
    assert PayloadMac(RFC_KEY, algorithm).frames([b"ab", b"c"]).digest() != PayloadMac(
        RFC_KEY, algorithm).frames([b"a", b"bc"]).digest()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_verify_and_copy_gives_the_same_tag_and_the_same_bytes(algorithm):
    # one frame crossing a chunk boundary (CHUNK_BYTES + 12 bytes, not a multiple of 16)
    # and a small one
    big = np.random.default_rng(0).integers(0, 256, CHUNK_BYTES + 12, dtype=np.uint8)
    small = np.arange(5, dtype=np.float32)
    into = [np.empty_like(big), np.empty_like(small)]
    payload = [memoryview(big), memoryview(small).cast("B")]
    fused = PayloadMac(RFC_KEY, algorithm).frames(payload, into).digest()
    assert fused == PayloadMac(RFC_KEY, algorithm).frames(payload).digest()
    assert np.array_equal(into[0], big) and np.array_equal(into[1], small)
    with pytest.raises(ValueError, match="does not fit"):
        PayloadMac(RFC_KEY).frame(small, into=np.empty(4, np.float32))


def sealed_push(auth, payload):
    header, frames = auth.open_header(auth.frames({"kind": "push"}, payload), "peer")
    return header, frames


def test_a_forged_payload_is_refused_and_its_pool_buffer_left_unused():
    auth = Authenticator(SECRET)
    good = np.arange(8, dtype=np.float32)
    header, _ = sealed_push(auth, [memoryview(good).cast("B")])
    into = [np.empty_like(good)]
    auth.check_payload(header, [memoryview(good).cast("B")], "peer", into=into)
    assert np.array_equal(into[0], good)
    forged = good.copy()
    forged[3] += 1
    with pytest.raises(AuthError, match="does not match its MAC"):
        auth.check_payload(header, [memoryview(forged).cast("B")], "peer", into=[np.empty_like(good)])


@pytest.mark.parametrize("change, message", [
    ({"payload_mac": None}, f"no {ALGORITHM} payload seal"),
    ({"payload_alg": "hmac-sha256"}, f"no {ALGORITHM} payload seal \\(got 'hmac-sha256'\\)"),
    ({"payload_nonce": "zz"}, "malformed payload nonce"),
    ({"payload_nonce": "00" * 16}, "does not match its MAC"),  # another nonce: another one-time key
])
def test_a_seal_that_is_missing_or_altered_is_refused(change, message):
    auth = Authenticator(SECRET)
    header, payload = sealed_push(auth, [b"\x00" * 32])
    with pytest.raises(AuthError, match=message):
        auth.check_payload({**header, **change}, payload, "peer")


def test_a_seal_made_with_another_secret_is_refused():
    header, payload = sealed_push(Authenticator(b"not-the-secret"), [b"\x00" * 32])
    with pytest.raises(AuthError, match="does not match its MAC"):
        Authenticator(SECRET).check_payload(header, payload, "peer")


class FakeSlave:
    """A ROUTER socket that answers every push with `answer(header)`; it records the
    peer identity and the layer of each request."""

    def __init__(self, answer=lambda header: {"ok": True, "request": header["nonce"]}):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.auth, self.answer, self.seen = Authenticator(SECRET), answer, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            if not self.sock.poll(20):
                continue
            ident, *frames = self.sock.recv_multipart()
            header, payload = self.auth.open_header(frames, "client")
            self.auth.check_payload(header, payload, "client")
            self.seen.append((ident, header["layer"]))
            self.sock.send_multipart([ident, *self.auth.frames(self.answer(header), [])])

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close(linger=0)
        self.ctx.term()


SPECS = [LayerSpec((f"l{i}.w",), ("float32",), ((64,),)) for i in range(3)]
TENSORS = [{f"l{i}.w": np.full(64, i, dtype=np.float32)} for i in range(3)]


@pytest.mark.parametrize("window", [1, 3])
def test_a_push_sends_every_layer_and_reuses_each_layers_socket(window):
    slave = FakeSlave()
    client = DataClient(Authenticator(SECRET), lambda layer: f"tcp://127.0.0.1:{slave.port}", SPECS, 5.0, window)
    try:
        client.push(range(3), TENSORS, {"push": "p1"})
        client.push(range(3), TENSORS, {"push": "p2"})
    finally:
        client.close()
        slave.close()
    assert sorted(layer for _, layer in slave.seen) == [0, 0, 1, 1, 2, 2]
    # 3 layers, one kept socket (peer identity) each, used by both pushes
    identity = {}
    for ident, layer in slave.seen:
        assert identity.setdefault(layer, ident) == ident
    assert len(set(identity.values())) == 3


def test_an_answer_to_another_request_is_refused():
    slave = FakeSlave(answer=lambda header: {"ok": True, "request": "someone-else"})
    client = DataClient(Authenticator(SECRET), lambda layer: f"tcp://127.0.0.1:{slave.port}", SPECS, 5.0)
    try:
        with pytest.raises(DataError, match="does not answer our request"):
            client.push_layer(0, TENSORS[0], {"push": "p1"})
    finally:
        client.close()
        slave.close()


def test_a_window_must_hold_a_layer():
    with pytest.raises(ValueError, match="window of 0 layers"):
        DataClient(Authenticator(SECRET), str, SPECS, window=0)


def test_the_header_of_a_push_names_its_seal():
    auth = Authenticator(SECRET)
    head = json.loads(auth.frames({"kind": "push"}, [b"x"])[0])
    assert head["payload_alg"] == ALGORITHM
    assert len(bytes.fromhex(head["payload_nonce"])) == 16 and len(bytes.fromhex(head["payload_mac"])) == 16


def test_the_hmac_sha256_fallback_seals_and_verifies_and_is_not_taken_for_poly1305():
    # what a process without OpenSSL >= 3.0 would run: the same seal, another algorithm
    slow = Authenticator(SECRET, payload_alg="hmac-sha256")
    header, payload = sealed_push(slow, [b"\x07" * 40])
    slow.check_payload(header, payload, "peer")
    assert header["payload_alg"] == "hmac-sha256" and len(bytes.fromhex(header["payload_mac"])) == 32
    with pytest.raises(AuthError, match="got 'hmac-sha256'"):
        Authenticator(SECRET).check_payload(header, payload, "peer")
    with pytest.raises(ValueError, match="unknown payload MAC algorithm 'md5'"):
        Authenticator(SECRET, payload_alg="md5")


@pytest.mark.parametrize("algorithm", ["poly1305", "hmac-sha256"])  # GHASH: test_ghash_macs_the_frames_...
def test_an_empty_frame_is_its_length_block_alone(algorithm):
    expected = PayloadMac(RFC_KEY, algorithm)
    expected.update(bytes(16))  # length 0, no bytes, no padding
    empty = np.empty(0, dtype=np.float32)
    assert PayloadMac(RFC_KEY, algorithm).frames([memoryview(empty).cast("B")], [empty]).digest() == expected.digest()
