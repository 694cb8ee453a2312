"""`jaxsched train` for `kind: das` configs: MAPPO runs per variant with checkpoints, exact resume, and
a greedy evaluation on the held-out episodes paired with the heuristics' (same evaluation keys)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import chex
import numpy as np
import pytest
from golden import check_golden

from jaxsched.cli import main
from jaxsched.experiments.learner import restore_learner, run_dir_of, train_learner
from jaxsched.experiments.train import read_jsonl, read_metrics
from jaxsched.systems.das.config import build_das, load_das_config
from jaxsched.systems.das.select import keep_better, validation_starts
from jaxsched.systems.das.train import LEARNER, evaluated_actor_params, validator

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs" / "das" / "quick.yaml"
SMALLER = [
    "workload.n_jobs=600", "env.episode_jobs=60", "env.max_forward_events=2", "eval.episodes=2",
    "mappo.imitation_updates=2",  # the warm start runs once, before the first chunk, and not on resume
]  # fmt: skip
SELECT = ["eval.select=validation", "eval.validation_episodes=2"]


def quick(out_dir, *extra):
    return load_das_config(QUICK, [*SMALLER, f"out_dir={out_dir}", *extra])


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """DA trained on the quick config, its test actor chosen on validation episodes."""
    cfg = quick(tmp_path_factory.mktemp("das_full"), *SELECT)
    return cfg, train_learner(LEARNER, cfg, "da", progress=False)


def test_train_writes_metrics_checkpoint_curve_and_eval(full_run):
    cfg, run_dir = full_run
    assert run_dir == run_dir_of(cfg, "da") == Path(cfg.out_dir) / cfg.name / "da"
    records = read_metrics(run_dir)
    assert [r["update"] for r in records] == [1, 2, 3, 4]
    assert all(len(r["entropy"]) == cfg.num_seeds for r in records)
    assert (run_dir / "learning_curve.png").stat().st_size > 10_000
    payload = json.loads((run_dir / "eval.json").read_text())
    assert payload["variant"] == "da" and payload["episodes"] == 2 and payload["seeds"] == 2
    jct = np.asarray(payload["results"]["avg_jct_min"]["values"])
    assert jct.shape == (2, 2) and np.all(np.isfinite(jct)) and np.all(jct > 0)
    assert payload["results"]["finished"]["mean"] == 60  # every test job finished
    imitation = [json.loads(line) for line in (run_dir / "imitation.jsonl").read_text().splitlines()]
    assert [r["update"] for r in imitation] == [1, 2]
    assert all(len(r["imitation_loss"]) == cfg.num_seeds for r in imitation)
    assert np.all(np.isfinite([r["imitation_loss"] for r in imitation]))
    golden = {k: [r[k] for r in records] for k in ("episode_return", "entropy")}
    golden |= {"test_avg_jct_min": jct, "imitation_loss": [r["imitation_loss"] for r in imitation]}
    check_golden("das_quick_train", golden, rtol=1e-3)


def test_report_reads_every_variant_of_the_config(full_run, capsys):
    """`jaxsched report CONFIG` (generic): the trained variant's training row (4 of 4 updates, its metrics
    over the last updates) and its held-out results as `eval.json` holds them; an untrained variant of
    the config is listed as such."""
    from jaxsched.experiments.run_report import report
    from jaxsched.systems import get_system

    cfg, run_dir = full_run
    cfg = cfg.replace(agent=dataclasses.replace(cfg.agent, variants=("da", "dl2")))
    out = report(get_system("das"), cfg)
    row = out["da"]["training"]
    assert row["updates"] == 4 and row["env_steps"] == 4 * cfg.mappo.num_envs * cfg.mappo.num_steps
    # 4 updates: the last tenth is the last update, or back to the last one in which an episode ended
    records = read_metrics(run_dir)
    ended = [i for i, r in enumerate(records) if sum(r["episodes"])]
    assert ended, "the quick run should finish episodes"
    tail = records[min(ended[-1], len(records) - 1) :]
    pairs = [(e, v) for r in tail for e, v in zip(r["episodes"], r["avg_jct_min"], strict=True) if e]
    np.testing.assert_allclose(row["avg_jct_min"], sum(e * v for e, v in pairs) / sum(e for e, _ in pairs))
    results = json.loads((run_dir / "eval.json").read_text())["results"]
    jct = results["avg_jct_min"]
    assert out["da"]["eval"]["da"]["avg_jct_min"] == (jct["mean"], jct["std"])
    assert out["dl2"] == {"training": {}}
    printed = capsys.readouterr().out
    assert "not trained" in printed and "da: held-out evaluation" in printed


def test_validation_selection_keeps_each_seeds_best_checkpoint(full_run):
    """`validation.jsonl` has the warm start and every chunk; each seed's selected update is its first
    lowest validation JCT; the saved actor re-validates to exactly that JCT; eval.json names it."""
    cfg, run_dir = full_run
    lines = read_jsonl(run_dir / "validation.jsonl")
    assert [r["update"] for r in lines] == [0, 2, 4]
    jct = np.asarray([r["avg_jct_min"] for r in lines])  # [checkpoints, S]
    assert jct.shape == (3, cfg.num_seeds) and np.all(np.isfinite(jct))
    best = np.asarray([0, 2, 4])[np.argmin(jct, axis=0)]
    assert lines[-1]["best_update"] == best.tolist()
    for r, upto in zip(lines, (1, 2, 3), strict=True):  # the running best after each checkpoint
        assert r["best_update"] == np.asarray([0, 2, 4])[np.argmin(jct[:upto], axis=0)].tolist()
    env, train_params, _, _ = build_das(cfg)
    actor, selection = evaluated_actor_params(cfg, "da", env, train_params)
    assert selection["by"] == "validation" and selection["update"] == best.tolist()
    revalidated = validator(cfg, "da", env, train_params)(actor).mean(axis=1)
    np.testing.assert_allclose(revalidated, jct.min(axis=0), rtol=1e-6)
    assert json.loads((run_dir / "eval.json").read_text())["selection"] == selection


def test_keep_better_picks_per_seed_and_keeps_ties():
    old = {"actor": {"w": np.zeros((3, 2))}, "avg_jct_min": np.array([5.0, 5.0, 5.0]), "update": np.zeros(3)}
    new = keep_better(old, {"w": np.ones((3, 2))}, np.array([4.0, 5.0, 6.0]), update=7)
    np.testing.assert_array_equal(new["actor"]["w"], [[1, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(new["avg_jct_min"], [4, 5, 5])
    np.testing.assert_array_equal(new["update"], [7, 0, 0])


def test_validation_episodes_come_from_the_training_bank():
    cfg = quick("unused", *SELECT)
    _, train_params, _, _ = build_das(cfg)  # 480 training jobs: 8 windows of 60
    np.testing.assert_array_equal(validation_starts(train_params, 60, 3), [0, 240, 420])
    np.testing.assert_array_equal(validation_starts(train_params, 60, 8), np.arange(0, 480, 60))
    with pytest.raises(ValueError, match="eval.validation_episodes: .* 8 episodes"):
        validation_starts(train_params, 60, 9)
    with pytest.raises(ValueError, match="eval.select must be one of last, validation"):
        quick("unused", "eval.select=best")
    assert quick("unused", "eval.greedy=false").eval.greedy is False


def test_resume_after_a_kill_is_exact(full_run, tmp_path):
    """Killed after one chunk and resumed: the same parameters, metrics and validation selection."""
    cfg_full, run_full = full_run
    cfg = quick(tmp_path, *SELECT)
    train_learner(LEARNER, cfg, "da", progress=False, stop_after_chunks=1)
    assert [r["update"] for r in read_metrics(run_dir_of(cfg, "da"))] == [1, 2]
    with pytest.raises(ValueError, match="--resume"):
        train_learner(LEARNER, cfg, "da", progress=False)
    with pytest.raises(ValueError, match=r"differs .* mappo.lr"):
        train_learner(LEARNER, quick(tmp_path, "mappo.lr=1e-3"), "da", resume=True, progress=False)
    train_learner(LEARNER, cfg, "da", resume=True, progress=False)
    env, train_params, _, _ = build_das(cfg)
    resumed = restore_learner(LEARNER, cfg, "da", env, train_params)[0].params["actor"]
    chex.assert_trees_all_equal(
        resumed, restore_learner(LEARNER, cfg_full, "da", env, train_params)[0].params["actor"]
    )
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]  # noqa: E731
    assert strip(read_metrics(run_dir_of(cfg, "da"))) == strip(read_metrics(run_dir_of(cfg_full, "da")))
    run = run_dir_of(cfg, "da")
    assert read_jsonl(run / "validation.jsonl") == read_jsonl(run_full / "validation.jsonl")
    selected, _ = evaluated_actor_params(cfg, "da", env, train_params)
    chex.assert_trees_all_equal(selected, evaluated_actor_params(cfg_full, "da", env, train_params)[0])


def test_eval_checkpoint_reevaluates_the_trained_variants_beside_the_heuristics(full_run, tmp_path, capsys):
    """`jaxsched eval CONFIG --checkpoint RUN_DIR` for DAS: the heuristics and every trained variant in
    the run directory, on the same test episodes and keys; the variant's numbers equal those `train`
    stored (the same selected checkpoints, the same program)."""
    cfg, run_dir = full_run
    stored = json.loads((run_dir / "eval.json").read_text())["results"]
    base = ["eval", str(QUICK), "--checkpoint", str(run_dir.parent)]
    for s in [*SMALLER, *SELECT]:
        base += ["--set", s]
    assert main([*base, "--json", str(tmp_path / "h.json")]) == 0
    out = capsys.readouterr().out
    assert "FIFO-FirstFit" in out and "(da update" in out
    combined = json.loads((tmp_path / "h.json").read_text())  # --json: every policy in that one file
    assert combined["da"]["avg_jct_min"]["values"] == stored["avg_jct_min"]["values"]
    assert len(combined["fifo_firstfit"]["avg_jct_min"]["per_seed"]) == 2  # the heuristics' evaluation seeds
    assert main(base) == 0  # without --json: the variant's own record is rewritten, the same
    again = json.loads((run_dir / "eval.json").read_text())
    assert again["results"]["avg_jct_min"]["values"] == stored["avg_jct_min"]["values"]
    assert again["selection"]["by"] == "validation"
    assert main(["eval", str(QUICK), "--checkpoint", str(tmp_path)]) == 2  # nothing trained there
    assert "no trained learner there" in capsys.readouterr().err


def test_cli_train_das(tmp_path, capsys):
    argv = ["train", str(QUICK), "--quiet", "--out-dir", str(tmp_path)]
    for s in SMALLER:
        argv += ["--set", s]
    assert main(argv) == 0
    assert (tmp_path / "das_quick" / "da" / "eval.json").exists()


def test_table_das_pairs_rows_and_reevaluates_checkpoints(full_run, tmp_path, capsys):
    """`jaxsched table das CONFIG` on the quick config, once `jaxsched eval` has run: the heuristics' and
    the trained variant's rows as eval.json holds them, the load-level re-evaluation from its checkpoint
    (×1 reproduces eval.json exactly), latency rows; `--out-dir` says where the runs are, as for `train`."""
    cfg, run_dir = full_run
    overrides = [a for s in [*SMALLER, *SELECT] for a in ("--set", s)]
    table = ["table", "das", str(QUICK), "--out", str(tmp_path / "t"), *overrides]
    assert main([*table, "--out-dir", str(tmp_path / "elsewhere")]) == 2  # not evaluated there
    assert "no " in capsys.readouterr().err
    assert main(["eval", str(QUICK), "--checkpoint", str(run_dir.parent), *overrides]) == 0
    argv = [*table, "--out-dir", cfg.out_dir, "--loads", "0.5,1", "--latency"]
    assert main(argv) == 0
    assert "DRF-FirstFit" in capsys.readouterr().out
    rec = json.loads((tmp_path / "t" / "table.json").read_text())[cfg.name]
    rows = rec["rows"]
    assert rows["das"] is None and rows["mosa"] is None  # not trained / not evaluated
    stored = json.loads((run_dir / "eval.json").read_text())["results"]["avg_jct_min"]["values"]
    np.testing.assert_allclose(rows["da"]["avg_jct_min"], stored)
    assert np.asarray(rows["fifo_firstfit"]["avg_jct_min"]).shape == (2, 2)
    np.testing.assert_allclose(rec["loads"]["1.0"]["da"]["avg_jct_min"], stored, rtol=1e-6)
    np.testing.assert_allclose(
        rec["loads"]["1.0"]["tetris"]["avg_jct_min"], rows["tetris"]["avg_jct_min"], rtol=1e-6
    )
    assert {r["name"] for r in rec["latency"]} >= {"fifo_firstfit", "da"}
    assert all(r["round_s"] > 0 and r["per_job_s"] <= r["round_s"] for r in rec["latency"])
    assert "Wilcoxon" in (tmp_path / "t" / "table.md").read_text()


def test_significance_picks_the_best_baseline():
    from jaxsched.systems.das.table import significance

    base = np.arange(12, dtype=float).reshape(3, 4) + 100
    rows = {
        "fifo_firstfit": {"avg_jct_min": base + 50, "avg_fee": base},
        "drf_firstfit": {"avg_jct_min": base + 10, "avg_fee": base},
        "rifling": {"avg_jct_min": base + 20, "avg_fee": base + 1},
        "mosa": None,
        "das": {"avg_jct_min": base, "avg_fee": base},
    }
    tests = significance(rows)
    best = [t for t in tests if t["best"]]
    assert {t["versus"] for t in best} == {"drf_firstfit"}
    jct = next(t for t in best if t["metric"] == "avg_jct_min")
    # pairs are the 4 test episodes (each row's mean over its 3 seeds), not the 12 seed × episode cells
    assert jct["diff"] == -10 and jct["w_plus"] == 0 and jct["n"] == 4 and jct["p"] == 2 / 2**4
    assert {t["versus"] for t in tests} == {"drf_firstfit", "rifling"}


def test_claims_verdicts_pair_by_episode():
    from jaxsched.systems.das.table import claims

    rng = np.random.default_rng(0)
    ep = rng.uniform(500, 1500, size=8)  # 8 test episodes
    rows = {
        "fifo_firstfit": {"avg_jct_min": np.tile(ep + 40, (3, 1))},  # repeated per DAS seed
        "das": {"avg_jct_min": ep + rng.normal(0, 1, size=(3, 8))},  # 3 seeds, ~40 below FIFO-FirstFit
        "da_mc": {"avg_jct_min": ep + rng.normal(0, 30, size=(2, 8))},  # 2 seeds: pairs by episode
        "da_rwgp": {"avg_jct_min": (ep - 40)[None]},  # below DA+MC everywhere: the claim reversed
        "da": {"avg_jct_min": np.tile(ep, (1, 1))[:, :6]},  # the first 6 episodes: pairs on those
        "dl2": None,
    }
    got = {(c["lower"], c["higher"]): c for c in claims(rows, "small", n_sim=100)}
    ff = got[("das", "fifo_firstfit")]
    assert ff["verdict"] == "reproduced" and ff["p"] == 2 / 2**8 and ff["pairs"] == 8
    assert ff["diff"] == pytest.approx(-40, abs=1.5)
    assert ff["paper_relative"] == pytest.approx(638.046 / 720.228 - 1)
    assert ff["power"] == 1.0  # 8 pairs with noise ±1 find the paper's −11 % gap every time
    assert got[("da_mc", "da_rwgp")]["verdict"] == "not reproduced"
    assert got[("das", "dl2")]["verdict"] == "not run"
    rwgp_da = got[("da_rwgp", "da")]  # DA+RWGP 40 below DA on each of the 6 episodes they share
    assert rwgp_da["pairs"] == 6 and rwgp_da["p"] == 2 / 2**6 and rwgp_da["verdict"] == "reproduced"
    assert rwgp_da["diff"] == pytest.approx(-40)
    # no significant difference, where 8 pairs with this noise would find the paper's −6 % every time
    assert got[("das", "da_mc")]["p"] >= 0.05 and got[("das", "da_mc")]["power"] == 1.0
    assert got[("das", "da_mc")]["verdict"] == "not reproduced (no difference at power 1.00)"
