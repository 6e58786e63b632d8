"""Authentication and message checks (issue 19, item 5): a client without the shared
secret is refused and logged, a replayed message is refused, and a message whose
sizes, shapes or dtypes are wrong is refused before anything is applied."""

import json
import time

import grpc
import numpy as np
import pytest
import zmq

from stagec.runtime.ps.auth import AuthError, Authenticator
from stagec.runtime.ps.control import ControlClient
from stagec.runtime.ps.dataplane import DataClient, DataError
from stagec.runtime.ps.wire import LayerSpec, WireError, check_tensors, encode_header, group_by_layer

from .util import SECRET, tiny_deployment


def test_a_tampered_or_replayed_control_message_is_refused():
    auth = Authenticator(SECRET)
    sealed = auth.seal({"op": "hello", "cluster": 0})
    assert Authenticator(SECRET).open(sealed, "peer")["cluster"] == 0
    with pytest.raises(AuthError, match="unauthenticated"):
        Authenticator(b"other").open(sealed, "peer")
    with pytest.raises(AuthError, match="unauthenticated"):
        auth.open(sealed[:-2] + b"9}", "peer")
    receiver = Authenticator(SECRET)
    receiver.open(sealed, "peer")
    with pytest.raises(AuthError, match="replayed"):
        receiver.open(sealed, "peer")


def test_a_data_payload_that_does_not_match_its_mac_is_refused():
    auth = Authenticator(SECRET)
    frames = auth.frames({"kind": "push"}, [b"\x00" * 8])
    header, payload = auth.open_header(frames, "peer")
    auth.check_payload(header, payload, "peer")
    with pytest.raises(AuthError, match="does not match"):
        auth.check_payload(header, [b"\x01" * 8], "peer")


SPEC = LayerSpec(("a.weight", "b.weight"), ("float32", "float32"), ((2, 3), (4,)))


def header_of(spec):
    return {"tensors": encode_header(spec)}


@pytest.mark.parametrize("spec, payload, message", [
    (LayerSpec(("a.weight", "b.weight"), ("float32", "float32"), ((3, 2), (4,))), [b"0" * 24, b"0" * 16],
     "shape \\[3, 2\\], expected \\[2, 3\\]"),
    (LayerSpec(("a.weight", "b.weight"), ("float16", "float32"), ((2, 3), (4,))), [b"0" * 12, b"0" * 16],
     "dtype float16, expected float32"),
    (SPEC, [b"0" * 20, b"0" * 16], "20 bytes, expected 24"),  # 2 x 3 float32 = 24 bytes
    (LayerSpec(("a.weight", "c.weight"), ("float32", "float32"), ((2, 3), (4,))), [b"0" * 24, b"0" * 16],
     "expected tensor 'b.weight'"),
    (SPEC, [b"0" * 24], "expected 2 tensors"),
])
def test_sizes_shapes_dtypes_and_names_are_checked(spec, payload, message):
    with pytest.raises(WireError, match=message):
        check_tensors(header_of(spec), payload, SPEC)


def test_a_correct_message_passes_the_checks():
    check_tensors(header_of(SPEC), [b"0" * 24, b"0" * 16], SPEC)


def wait_until(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_live_roles_refuse_intruders_and_malformed_pushes(tmp_path, supervisors):
    dep = tiny_deployment(tmp_path)
    sup = supervisors(dep, roles=False)
    sup.spawn("master")
    for s in range(dep.plan.num_slaves):
        sup.spawn("slave", s)
    wait_until(lambda: sup.status().get("slaves") == [0, 1])
    master_log = lambda: dep.path("logs", "master.log").read_text()  # noqa: E731
    slave_log = lambda: dep.path("logs", "slave0.log").read_text()  # noqa: E731

    # control flow: a client with another secret is refused and logged
    intruder = ControlClient(dep.master_address, Authenticator(b"not-the-secret"))
    assert intruder.call("push_request", cluster=0, tokens=10 ** 9, base_version=0) is None
    wait_until(lambda: "refused an unauthenticated control message" in master_log())
    # ... and a replayed message of a client that has the secret
    channel = grpc.insecure_channel(dep.master_address)
    call = channel.unary_unary("/dips.Master/Call")
    sealed = Authenticator(SECRET).seal({"op": "status"})
    call(sealed, timeout=5)
    with pytest.raises(grpc.RpcError) as replay:
        call(sealed, timeout=5)
    assert replay.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()

    with np.load(dep.path("init.npz")) as init:
        groups = group_by_layer({k: init[k] for k in init.files}, dep.plan.layers)
    specs = [LayerSpec.of(g) for g in groups]
    client = ControlClient(dep.master_address, Authenticator(SECRET))
    push = client.call("push_request", cluster=0, tokens=1024, base_version=0, loss=0.0)["push"]
    header = {"push": push, "cluster": 0, "base_version": 0}

    # data flow: a push signed with another secret is refused and logged
    with pytest.raises(DataError):
        DataClient(Authenticator(b"not-the-secret"), dep.layer_address, specs, 2.0).push_layer(0, groups[0], header)
    wait_until(lambda: "refused a data message on layer 0: unauthenticated data message" in slave_log())

    # the secret, but a tensor of the wrong size (the header says the right shape)
    ours = DataClient(Authenticator(SECRET), dep.layer_address, specs, 2.0)
    name = specs[0].names[0]
    short = {**groups[0], name: groups[0][name].ravel()[:-1].copy()}
    with pytest.raises(DataError, match="bytes, expected"):
        ours.push_layer(0, short, header)
    # the secret, but a header that declares another shape
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(dep.layer_address(0))
    tensors = encode_header(specs[0])
    tensors[0] = {**tensors[0], "shape": [1, *tensors[0]["shape"]]}
    auth = Authenticator(SECRET)
    sock.send_multipart(auth.frames({**header, "kind": "push", "layer": 0, "tensors": tensors},
                                    [groups[0][n].tobytes() for n in specs[0].names]))
    assert sock.poll(5000)
    reply, _ = auth.open_header(sock.recv_multipart(), "slave")
    assert not reply["ok"] and "shape" in reply["error"]
    # the secret and a correct header, but a payload changed after it was sealed: the
    # slave's consumer checks the Poly1305 tag while copying into a pool buffer, and
    # refuses it (answering our request) without keeping the buffer
    frames = auth.frames({**header, "kind": "push", "layer": 0, "tensors": encode_header(specs[0])},
                         [groups[0][n].tobytes() for n in specs[0].names])
    frames[2] = bytes([frames[2][0] ^ 1]) + frames[2][1:]
    sock.send_multipart(frames)
    assert sock.poll(5000)
    reply, _ = auth.open_header(sock.recv_multipart(), "slave")
    assert not reply["ok"] and "does not match its MAC" in reply["error"]
    assert reply["request"] == json.loads(frames[0])["nonce"]
    wait_until(lambda: "refused a data message with a forged payload" in slave_log())
    sock.close()

    # nothing was applied: the master has no layer of the push, the version is 0 and no
    # slave wrote a snapshot
    assert client.call("push_prepare", push=push)["vote"] == "wait"
    assert client.call("status")["version"] == 0
    assert not any(list(dep.path(f"slave{s}").glob("v*.npz")) for s in range(dep.plan.num_slaves))
    # and the same push, correct, is accepted (the refusals were for cause)
    ours.push_layer(0, groups[0], header)
    assert json.loads(dep.path("status.json").read_text())["version"] == 0
