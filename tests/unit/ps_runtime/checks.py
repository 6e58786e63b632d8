"""What every finished run must satisfy (issue 19, "Done when"): the committed versions
in the master's log are 1..N, each exactly once; the slaves' final parameters and
momentum equal a single-process re-computation of the logged rounds bit for bit — so
no outer update was lost, applied twice, or partly applied by an aborted round."""

import numpy as np

from stagec.runtime.ps.replay import final_parameters, replay


def check_run(sup) -> dict:
    state = sup.master_state()
    assert state.get("finished"), f"training did not finish: {state}"
    log = state["log"]
    committed = [e["version"] for e in log if e.get("committed")]
    assert committed == list(range(1, state["version"] + 1)), committed
    replayed = replay(sup.dep, log)
    params, momentum = final_parameters(sup.dep, state["version"])
    assert replayed.version == state["version"]
    assert sorted(params) == sorted(replayed.params)
    for name in replayed.params:
        assert np.array_equal(params[name], replayed.params[name]), name
        assert np.array_equal(momentum[name], replayed.momentum[name]), name
    for s in range(sup.dep.plan.num_slaves):
        assert not list(sup.dep.path(f"slave{s}").glob("*.pending.npz")), "a pending update was left behind"
    return state
