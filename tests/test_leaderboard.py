"""`jaxsched leaderboard`: a policy written in a file outside the package (`file.py:function`) and a
heuristic scored beside the paper preset's baselines on its held-out test episodes; the user policy's score
equals its episodes played one by one; ranks follow the means; JSON and PNG written; bad policies are one
line with exit 2."""

from __future__ import annotations

import json

import jax
import numpy as np

from jaxsched.cli import main
from jaxsched.experiments.evaluate import run_episode
from jaxsched.experiments.leaderboard import preset_path
from jaxsched.systems import get_system, load_run_config

USER_POLICY = '''
import jax.numpy as jnp


def first_fit(params, obs, key):
    """The first window slot whose job fits now, else Fwd (the last action)."""
    return jnp.argmax(obs.mask).astype(jnp.int32)
'''


def test_a_policy_from_outside_the_package_on_the_dbf_preset(tmp_path, capsys):
    module = tmp_path / "my_policies.py"
    module.write_text(USER_POLICY)
    out = tmp_path / "board"
    args = ["leaderboard", "--systems", "dbf", "--episodes", "4", "--out", str(out), "--quiet"]
    assert main([*args, "--policy", f"{module}:first_fit", "--policy", "f1"]) == 0
    printed = capsys.readouterr().out
    assert "| dbf | avg wait (s) ↓ | 1 |" in printed and "first_fit (user)" in printed
    board = json.loads((out / "leaderboard.json").read_text())
    (block,) = board["systems"]
    rows = {r["policy"]: r for r in block["rows"]}
    assert {r["kind"] for r in rows.values()} == {"baseline", "heuristic", "user"}
    assert set(rows) == {"fcfs", "lcfs", "sjf", "fcfs_easy", "lcfs_easy", "sjf_easy", "f1", "first_fit"}
    means = [r["mean"] for r in block["rows"]]
    assert means == sorted(means) and [r["rank"] for r in block["rows"]] == list(range(1, 9))
    assert (out / "leaderboard.png").stat().st_size > 10_000 and board["cpu"]

    # the user policy's score, its four test episodes played one at a time
    system = get_system("dbf")
    ev, cfg = system.evaluation, load_run_config(preset_path(system))[1]
    env, _, test = ev.learner.build(cfg)[:3]
    idx = ev.episodes(cfg, ev.n_test(cfg, test), 4)
    keys = ev.keys(cfg, len(idx))
    ns: dict = {}
    exec(USER_POLICY, ns)
    play = jax.jit(lambda params, key: run_episode(env, params, ns["first_fit"], None, key))
    waits = [float(play(env.episode(test, int(i)), k)["avg_wait"]) for i, k in zip(idx, keys, strict=True)]
    np.testing.assert_allclose(rows["first_fit"]["mean"], np.mean(waits), rtol=1e-6)
    np.testing.assert_allclose(rows["first_fit"]["std"], np.std(waits), rtol=1e-5)


def test_bad_policies_are_one_line(tmp_path, capsys):
    for spec, message in [
        ("no_such_heuristic", "--policy 'no_such_heuristic': not a heuristic of dbf"),
        ("no_such_module_xyz:f", "--policy 'no_such_module_xyz:f': cannot import no_such_module_xyz"),
        (f"{tmp_path / 'missing.py'}:f", "no file"),
    ]:
        assert main(["leaderboard", "--systems", "dbf", "--policy", spec, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert main(["leaderboard", "--systems", "hpc", "--quiet"]) == 2
    assert "unknown system 'hpc'" in capsys.readouterr().err


def test_the_readmes_leaderboard_is_the_stored_record():
    """The README's leaderboard rows are `docs/results/leaderboard/leaderboard.json`'s order and means."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    board = json.loads((root / "docs/results/leaderboard/leaderboard.json").read_text())
    readme = (root / "README.md").read_text().split("## Leaderboard", 1)[1].split("\n## ", 1)[0]
    cells = [r.split(" | ") for r in readme.splitlines() if r.startswith("| ")]
    rows = {c[0].lstrip("| "): c[2].rstrip(" |") for c in cells}
    for block in board["systems"]:
        shown = [item.rsplit(" ", 1) for item in rows[block["system"]].split(", ")[:4]]
        for (name, value), row in zip(shown, block["rows"], strict=False):
            assert name == row["policy"] and float(value.replace(",", "")) == round(
                row["mean"], 0 if abs(block["rows"][0]["mean"]) >= 100 else 2
            ), (block["system"], name)
