"""Rank 0's step reports reach the launcher even when an abort cuts mpiexec's relay of
its stdout short (runtime/exec/status.py `report`, launch.py `lost_reports`)."""

import json

from stagec.runtime.exec.launch import lost_reports
from stagec.runtime.exec.status import PREFIX, REPORTS, read_reports, report


def test_a_report_goes_to_stdout_and_to_the_run_directory(tmp_path, capsys):
    report(str(tmp_path), step=1, loss=2.5, seconds=0.1)
    report(str(tmp_path), done=True)
    out = capsys.readouterr().out.splitlines()
    assert [json.loads(line[len(PREFIX):]) for line in out] == read_reports(str(tmp_path)) == [
        {"step": 1, "loss": 2.5, "seconds": 0.1}, {"done": True}]


def test_a_rank_0_on_another_host_reports_on_stdout_only(tmp_path, capsys):
    report(str(tmp_path / "not here"), step=1, loss=2.5, seconds=0.1)
    assert capsys.readouterr().out.startswith(PREFIX)
    assert not (tmp_path / "not here").exists() and read_reports(str(tmp_path / "not here")) == []


def test_the_reports_the_relay_lost_are_recovered_from_the_file(tmp_path, capsys):
    for step in (1, 2, 3):
        report(str(tmp_path), step=step, loss=1.0 / step, seconds=0.1)
    relayed = [json.loads(line[len(PREFIX):]) for line in capsys.readouterr().out.splitlines()][:1]
    with open(tmp_path / REPORTS, "a") as f:
        f.write('{"step": 4, "lo')  # rank 0 killed while writing: the line is left out
    assert [r["step"] for r in lost_reports(relayed, str(tmp_path))] == [2, 3]
    assert lost_reports([], str(tmp_path / "no file")) == []
