"""Fixtures that start Di-PS roles as real processes and always end their process
groups, so no test leaves an orphan behind."""

import pytest

from stagec.runtime.ps.launcher import Supervisor, prepare

from .util import SECRET


@pytest.fixture
def supervisors():
    started: list[Supervisor] = []

    def start(dep, roles: bool = True, secret: bytes = SECRET) -> Supervisor:
        prepare(dep)
        sup = Supervisor(dep, secret)
        started.append(sup)
        if roles:
            sup.start()
        return sup

    yield start
    for sup in started:
        sup.stop()
