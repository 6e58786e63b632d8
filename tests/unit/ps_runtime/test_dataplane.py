"""The data plane's payload MAC and the cluster's data client (issue 19, items 2 and 5):
Poly1305 is the real thing (RFC 8439's test vector), the frame encoding is pinned, the
slave's fused verify-and-copy gives the same tag and the same bytes, a forged or
re-cut payload is refused, and the client reuses a layer's socket and refuses an
answer to someone else's request. No processes: a slave's ROUTER socket in a thread."""

import hashlib
import hmac
import json
import threading

import numpy as np
import pytest
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.dataplane import DataClient, DataError
from stagec.runtime.ps.mac import ALGORITHM, CHUNK_BYTES, PayloadMac, payload_key
from stagec.runtime.ps.wire import LayerSpec

from .util import SECRET

# RFC 8439 §2.5.2: Poly1305 of "Cryptographic Forum Research Group" under this key
RFC_KEY = bytes.fromhex("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b")
RFC_TAG = bytes.fromhex("a8061dc1305136c6c22b8baf0c0127a9")


def test_the_payload_mac_is_poly1305_from_openssl():
    # this machine's CPython links OpenSSL 3: the fast path must be the one in use, or
    # the data plane is back at HMAC-SHA256's speed (bench/dips_dataplane.py)
    assert ALGORITHM == "poly1305"
    mac = PayloadMac(RFC_KEY)
    mac.update(b"Cryptographic Forum Research Group")
    assert mac.digest() == RFC_TAG


def test_payload_key_is_hmac_sha256_of_a_label_and_the_nonce():
    nonce = bytes(range(16))
    assert payload_key(SECRET, nonce) == hmac.new(SECRET, b"dips-payload-poly1305" + nonce, hashlib.sha256).digest()


@pytest.mark.parametrize("algorithm", ["poly1305", "hmac-sha256"])
def test_a_frame_is_macd_as_its_length_block_its_bytes_and_zero_padding(algorithm):
    # b"abc": a 16-byte little-endian length (3), the 3 bytes, 13 zeros to the next block
    encoded = (3).to_bytes(16, "little") + b"abc" + bytes(13)
    expected = PayloadMac(RFC_KEY, algorithm)
    expected.update(encoded)
    assert PayloadMac(RFC_KEY, algorithm).frames([b"abc"]).digest() == expected.digest()
    if algorithm == "hmac-sha256":
        assert expected.digest() == hmac.new(RFC_KEY, encoded, hashlib.sha256).digest()


def test_re_cut_frames_get_another_tag():
    assert PayloadMac(RFC_KEY).frames([b"ab", b"c"]).digest() != PayloadMac(RFC_KEY).frames([b"a", b"bc"]).digest()


def test_verify_and_copy_gives_the_same_tag_and_the_same_bytes():
    # one frame crossing a chunk boundary (CHUNK_BYTES + 12 bytes, not a multiple of 16)
    # and a small one
    big = np.random.default_rng(0).integers(0, 256, CHUNK_BYTES + 12, dtype=np.uint8)
    small = np.arange(5, dtype=np.float32)
    into = [np.empty_like(big), np.empty_like(small)]
    payload = [memoryview(big), memoryview(small).cast("B")]
    fused = PayloadMac(RFC_KEY).frames(payload, into).digest()
    assert fused == PayloadMac(RFC_KEY).frames(payload).digest()
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
    ({"payload_mac": None}, "no poly1305 payload seal"),
    ({"payload_alg": "hmac-sha256"}, "no poly1305 payload seal \\(got 'hmac-sha256'\\)"),
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
    assert head["payload_alg"] == "poly1305"
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


@pytest.mark.parametrize("algorithm", ["poly1305", "hmac-sha256"])
def test_an_empty_frame_is_its_length_block_alone(algorithm):
    expected = PayloadMac(RFC_KEY, algorithm)
    expected.update(bytes(16))  # length 0, no bytes, no padding
    empty = np.empty(0, dtype=np.float32)
    assert PayloadMac(RFC_KEY, algorithm).frames([memoryview(empty).cast("B")], [empty]).digest() == expected.digest()
