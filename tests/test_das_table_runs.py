"""`jaxsched table das --runs`: training seeds run as separate processes are stacked into one table, with
the heuristic rows repeated so that every learned (seed, episode) keeps its paired heuristic value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from jaxsched.systems.das import rows as das_rows
from jaxsched.systems.das import table as das_table
from jaxsched.systems.das.config import load_das_config

QUICK = Path(__file__).resolve().parents[1] / "configs" / "das" / "quick.yaml"


def fake_run(root: Path, cfg, variant: str, seed: int, jct) -> Path:
    """A run directory `root/<name>` whose `variant` was 'trained' with `seed` and scored `jct` [S, E]."""
    run_dir = root / cfg.name
    d = run_dir / variant
    d.mkdir(parents=True)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg.replace(seed=seed).to_dict()))
    jct = np.asarray(jct, float)
    results = {"avg_jct_min": {"values": jct.tolist()}, "avg_fee": {"values": (jct / 10).tolist()}}
    (d / "eval.json").write_text(json.dumps({"results": results}))
    return run_dir


@pytest.fixture
def cfg(tmp_path):
    return load_das_config(QUICK, [f"out_dir={tmp_path / 'main'}", "num_seeds=1"])


def test_runs_stack_by_training_seed_and_repeat_the_heuristics(cfg, tmp_path):
    results = {
        "fifo_firstfit": {"avg_jct_min": {"values": [[10.0, 20.0]]}, "avg_fee": {"values": [[1.0, 2.0]]}}
    }
    fake_run(tmp_path / "main", cfg, "das", 0, [[1, 2]])
    s2 = fake_run(tmp_path / "b", cfg, "das", 2, [[5, 6]])
    s1 = fake_run(tmp_path / "a", cfg, "das", 1, [[3, 4]])
    rows = das_rows.collect_rows(cfg, results, runs=[s2, s1])
    np.testing.assert_array_equal(rows["das"]["avg_jct_min"], [[1, 2], [3, 4], [5, 6]])  # seed order
    np.testing.assert_array_equal(rows["fifo_firstfit"]["avg_jct_min"], [[10, 20]] * 3)
    assert rows["dl2"] is None
    best = [t for t in das_table.significance(rows) if t["best"]]
    assert {t["versus"] for t in best} == {"fifo_firstfit"} and best[0]["n"] == 2  # the 2 episodes, not 3 × 2
    # the heuristics repeat as often as DAS has seeds, not as the most-trained variant has
    for seed, root in ((0, "main"), (1, "a"), (2, "b"), (3, "c")):
        fake_run(tmp_path / root, cfg, "da", seed, [[7, 8]])
    rows = das_rows.collect_rows(cfg, results, runs=[s2, s1, tmp_path / "c" / cfg.name])
    assert rows["da"]["avg_jct_min"].shape == (4, 2) and rows["fifo_firstfit"]["avg_jct_min"].shape == (3, 2)
    # without --runs: the config's own evaluation only (`load_evaluated` read its variants), nothing repeated
    rows = das_rows.collect_rows(cfg, results | {"das": {"avg_jct_min": {"values": [[1, 2]]}}})
    assert rows["fifo_firstfit"]["avg_jct_min"].shape == (1, 2) and rows["das"]["avg_jct_min"].shape == (1, 2)


def test_runs_refuse_a_repeated_seed_or_another_recipe(cfg, tmp_path):
    fake_run(tmp_path / "main", cfg, "das", 0, [[1, 2]])
    same_seed = fake_run(tmp_path / "a", cfg, "das", 0, [[3, 4]])
    with pytest.raises(ValueError, match="seed 0 twice"):
        das_rows.stacked_learned_rows(cfg, [cfg.run_dir, same_seed])
    other = fake_run(tmp_path / "b", cfg.replace(mappo=cfg.mappo.__class__(lr=1e-3)), "das", 1, [[3, 4]])
    with pytest.raises(ValueError, match="mappo.lr"):
        das_rows.stacked_learned_rows(cfg, [cfg.run_dir, other])


def test_runs_cli_errors_name_the_option(tmp_path, capsys):
    from jaxsched.cli import main

    table = ["table", "das", str(QUICK), "--out", str(tmp_path / "t")]
    assert main([*table, "--latency", "--runs", str(tmp_path)]) != 0
    assert "--latency does not depend on the weights" in capsys.readouterr().err
    assert main([*table, "--runs", str(tmp_path / "missing")]) != 0
    assert "--runs: no such run directory" in capsys.readouterr().err
    two = ["table", "das", str(QUICK), str(QUICK), "--out", str(tmp_path)]
    assert main([*two, "--runs", str(tmp_path)]) != 0
    assert "--runs belongs to one config" in capsys.readouterr().err
    assert main([*table, "--planners", "tabu"]) != 0
    assert "--planners: unknown ['tabu']" in capsys.readouterr().err


def test_load_levels_stack_the_runs_by_training_seed(cfg, tmp_path, monkeypatch):
    """App. E over runs: each run's actor is evaluated at each load and the blocks stack in seed order."""
    from jaxsched.systems.das import train as das_train

    heuristic = {"fifo_firstfit": {"avg_jct_min": np.array([[10.0, 20.0]])}}
    monkeypatch.setattr(das_table, "build_for_eval", lambda cfg: (None, None, _Params(), [0, 1]))
    monkeypatch.setattr(das_table, "heuristic_rows", lambda cfg, built, load_scale: heuristic)
    run_seed = {}
    for seed, root in ((0, "main"), (2, "b"), (1, "a")):
        run_seed[fake_run(tmp_path / root, cfg, "das", seed, [[1, 2]])] = seed
    actor_of = lambda rcfg, v, env, p: (run_seed[rcfg.run_dir], {})  # noqa: E731  the run's seed as its actor
    monkeypatch.setattr(das_train, "evaluated_actor_params", actor_of)
    monkeypatch.setattr(
        das_train, "evaluate_learned",
        lambda rcfg, v, actor, env, params, starts: {"avg_jct_min": np.array([[actor, params.load_scale]])},
    )  # fmt: skip
    runs = [tmp_path / "b" / cfg.name, tmp_path / "a" / cfg.name]
    levels = das_table.load_level_rows(cfg, [0.5, 2.0], ["das"], runs=runs)
    np.testing.assert_array_equal(levels[2.0]["das"]["avg_jct_min"], [[0, 2.0], [1, 2.0], [2, 2.0]])
    np.testing.assert_array_equal(levels[0.5]["fifo_firstfit"]["avg_jct_min"], [[10, 20]])


class _Params:
    load_scale = 1.0

    def replace(self, load_scale):
        p = _Params()
        p.load_scale = float(load_scale)
        return p


def test_a_variants_own_record_fills_in_the_configs_evaluation(cfg, tmp_path):
    """`load_evaluated` (what every `jaxsched table` reads): a variant's own `<run dir>/<variant>/eval.json`
    (a record with its `results`) stands for it when the run's eval.json is missing or lacks it."""
    from jaxsched.experiments.evaluate import load_evaluated
    from jaxsched.systems.das import SYSTEM

    overrides = [f"out_dir={tmp_path / 'main'}", "num_seeds=1"]
    with pytest.raises(FileNotFoundError, match="jaxsched eval"):
        load_evaluated(QUICK, SYSTEM, overrides)
    fake_run(tmp_path / "main", cfg, "da", 0, [[1, 2]])
    _, results = load_evaluated(QUICK, SYSTEM, overrides)
    assert list(results) == ["da"] and results["da"]["avg_jct_min"]["values"] == [[1, 2]]
    heuristics = {"fifo_firstfit": {"avg_jct_min": {"values": [[10.0, 20.0]]}}}
    (cfg.run_dir / "eval.json").write_text(json.dumps(heuristics))
    rows = das_rows.collect_rows(cfg, load_evaluated(QUICK, SYSTEM, overrides)[1])
    assert rows["fifo_firstfit"]["avg_jct_min"].tolist() == [[10, 20]] and rows["da"] is not None
    assert rows["das"] is None and rows["mosa"] is None


def test_report_shows_the_heuristics_beside_a_variant_evaluated_alone(cfg, tmp_path):
    """`jaxsched report` for DAS: a variant's own eval.json holds its results alone; the heuristics of the
    config's evaluation (`jaxsched eval`, the same episodes and keys) are shown beside it."""
    from jaxsched.experiments.run_report import report
    from jaxsched.systems.das import SYSTEM

    run_dir = fake_run(tmp_path / "main", cfg, "da", 0, [[1, 2]])
    record = {"update": 1, "env_steps": 64, "wall_s": 1.0, "episodes": [1], "episode_return": [-1.0],
              "avg_jct_min": [3.0], "avg_fee": [0.3]}  # fmt: skip
    (run_dir / "da" / "metrics.jsonl").write_text(json.dumps(record) + "\n")
    jct = lambda m: {"avg_jct_min": {"mean": m, "std": 0.0}}  # noqa: E731
    (run_dir / "da" / "eval.json").write_text(json.dumps({"variant": "da", "results": jct(1.0)}))
    (run_dir / "eval.json").write_text(json.dumps({"da": jct(1.5), "fifo_firstfit": jct(15.0)}))
    rows = report(SYSTEM, cfg)["da"]["eval"]
    assert set(rows) == {"da", "fifo_firstfit"} and rows["fifo_firstfit"]["avg_jct_min"][0] == 15.0
    assert rows["da"]["avg_jct_min"][0] == 1.0  # the variant's own record, not the combined file's
