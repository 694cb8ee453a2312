"""`experiments.live`: long silent work (building banks, compiling) gets a start and an end line on stderr;
short work and work that raises print nothing of their own; `enabled=False` prints nothing."""

from __future__ import annotations

import time

import pytest

from jaxsched.experiments import live as live_module
from jaxsched.experiments.live import live


def test_long_work_is_announced_and_timed(capsys, monkeypatch):
    monkeypatch.setattr(live_module, "QUIET_S", 0.05)
    with live("compiling the toy program"):
        time.sleep(0.3)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "compiling the toy program …"  # while it ran (stderr is not a terminal here)
    assert err[1].startswith("compiling the toy program: ") and err[1].endswith(" s")
    assert float(err[1].split(": ")[1][:-2]) >= 0.3


def test_short_failed_or_disabled_work_prints_nothing(capsys, monkeypatch):
    with live("quick"):
        pass
    with live("off", enabled=False):
        time.sleep(0.01)
    monkeypatch.setattr(live_module, "QUIET_S", 0.5)
    with pytest.raises(ValueError), live("broken"):
        raise ValueError("the error is the news")
    time.sleep(0.6)  # the start line's timer was cancelled
    assert capsys.readouterr().err == ""
