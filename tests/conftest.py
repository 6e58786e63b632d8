"""Suite-wide hooks: every Chakra emission a test makes is held against the recorded
trace facts (tests/trace_facts.py)."""

from __future__ import annotations

import pytest

from tests.trace_facts import Recorder

_RECORDER = Recorder()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    _RECORDER.enter(item.nodeid)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _RECORDER.enter(item.nodeid)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    # a module-scoped fixture is set up by whichever test needs it first: name it by
    # itself so that its key does not depend on which tests run
    previous = _RECORDER.key
    if fixturedef.scope != "function":
        param = getattr(request, "param", None)
        _RECORDER.enter(f"{request.node.nodeid}::{fixturedef.argname}[{param}]")
    yield
    _RECORDER.enter(previous)


@pytest.fixture(autouse=True, scope="session")
def _trace_facts():
    from stagec.runtime.chakra import emit

    original = emit.build_programs

    def recorded(*args, **kwargs):
        result = original(*args, **kwargs)
        _RECORDER.check(result[0])
        return result

    emit.build_programs = recorded
    yield
    emit.build_programs = original
    _RECORDER.save()
