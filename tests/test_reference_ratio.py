"""`benchmarks/reference_ratio.py`'s players: each plays its plain-Python reference through whole episodes
of its system's preset (here the quick ones) with valid random actions, so the reference's decisions/s is
a rate over real episodes, not over errors or an episode that ends at once; and the stored records'
ratios are their two rates."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import jaxsched

ROOT = Path(__file__).resolve().parents[1]
QUICK = {"dbf": "dbf-quick", "das": "das-quick", "sced2": "sced2-quick", "dag": "dag-quick",
         "osdec": "osdec-quick"}  # fmt: skip


def _benchmark():
    spec = importlib.util.spec_from_file_location(
        "reference_ratio", ROOT / "benchmarks" / "reference_ratio.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("system", list(QUICK))
def test_a_player_finishes_its_reference_episodes(system):
    bench = _benchmark()
    env, params = jaxsched.make(QUICK[system])
    player = bench.PLAYERS[system](env, params)
    rng = np.random.default_rng(0)
    for _ in range(2):  # two episodes, the second after a reset from the same player
        player.reset(rng)
        steps = 0
        while not player.step(rng):
            steps += 1
            assert steps < 50_000, f"{system}: an episode did not end within 50,000 decisions"
        assert steps > 0, f"{system}: an episode ended at its first decision"
        if system == "das":
            assert player.ref.over()  # every episode job finished, not a truncation
        if system == "dag":
            assert all(player.ref.finished)
    assert getattr(player.ref, "invalid", 0) == 0  # every action was valid
    (run,) = bench.reference_runs(player, seconds=0.05, repeats=1)
    assert run["decisions"] > 0 and run["seconds"] >= 0.05


RUNS = sorted((ROOT / "docs/results/envs").glob("reference_ratio_cpu_*.json"))  # runs of one command


def test_stored_records_cover_every_system_and_their_ratios_are_their_rates():
    assert len(RUNS) >= 2  # the ratio moves between runs: the page shows more than one
    for records in (json.loads(f.read_text()) for f in RUNS):
        assert [r["env"] for r in records] == list(QUICK)
        _check_rates(records)


def _check_rates(records):
    for r in records:
        assert r["batch"] == 1024 and r["jax_env"]["batch"] == 1024
        runs = r["reference_runs"]
        assert r["reference_decisions_per_s"] == np.median([x["decisions"] / x["seconds"] for x in runs])
        assert r["ratio"] == r["jax_decisions_per_s"] / r["reference_decisions_per_s"]
        assert r["jax_decisions_per_s"] == r["jax_env"]["decisions_per_s"]


def test_the_results_page_shows_the_records_table():
    runs = [json.loads(f.read_text()) for f in RUNS]
    assert _benchmark().table(runs) in (ROOT / "docs/results/reference_ratio.md").read_text()
