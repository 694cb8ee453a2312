"""`jaxsched table dag` on a tiny run of the quick config (full and no_idle; 2 updates): Table 1 holds
eval.json's numbers beside the paper's and a dash for the variant the run lacks (no_features); the
figures' re-evaluation at the config's own load and job count gives back eval.json's average JCTs; Fig.
5's SJF at another job count (a padded bank) equals a direct evaluation at that count; the PNGs are
written; and a config without an eval.json is a one-line error naming the file and the command to run.

The tiny config is `test_dag_system.TINY` with its variants (the same programs: in one process the two
files share them, across processes the compilation cache does)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import yaml
from test_dag_system import TINY, _quick_dict

from jaxsched.cli import main
from jaxsched.experiments.config import config_from_dict
from jaxsched.experiments.evaluate import Replay
from jaxsched.systems.dag.config import DAGSystemConfig, build_params, make_env
from jaxsched.systems.dag.evaluation import EVALUATION
from jaxsched.systems.dag.table import PAPER_TABLE1
from jaxsched.workloads import dag_gen
from jaxsched.workloads.dag_bank import MAX_TIME_MS, pad_bank

VARIANTS = ["full", "no_idle"]  # test_dag_system's: no_features is the missing variant


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The tiny config trained (three variants) and evaluated: `(config path, config dict, eval.json)`."""
    root = tmp_path_factory.mktemp("dag_table")
    d = _quick_dict(**TINY) | {"out_dir": str(root / "runs")}
    d["agent"]["variants"] = VARIANTS
    path = root / "tiny.yaml"
    path.write_text(yaml.safe_dump(d))
    assert main(["train", str(path), "--quiet"]) == 0
    assert main(["eval", str(path), "--checkpoint", str(root / "runs/tiny")]) == 0
    return path, d, json.loads((root / "runs/tiny/eval.json").read_text())


@pytest.fixture(scope="module")
def table(run, tmp_path_factory):
    """`jaxsched table dag` with tiny sweeps: `(table.md, table.json, out dir)`."""
    path, _, _ = run
    out = tmp_path_factory.mktemp("dag_table_out")
    argv = ["table", "dag", str(path), "--out", str(out), "--loads", "0.8", "--jobs", "6,12"]
    assert main(argv + ["--mus", "50", "--rates", "0.8"]) == 0
    return (out / "table.md").read_text(), json.loads((out / "table.json").read_text()), out


def test_table1_holds_eval_json_and_the_paper(run, table):
    _, _, ev = run
    text, numbers, _ = table
    row = next(line for line in text.splitlines() if line.startswith("| synthetic | tiny |"))
    for variant, paper in zip(VARIANTS, (46.3, 53.5), strict=True):
        m, s = ev[variant]["avg_jct"]["mean"], ev[variant]["avg_jct"]["std"]
        assert f"| {m:,.1f} ± {s:,.1f} ({paper:g}) |" in row, variant
        assert numbers["table1"]["tiny"]["avg_jct"][variant]["mean"] == m
    assert numbers["table1"]["tiny"]["paper"] == PAPER_TABLE1["synthetic"]
    assert PAPER_TABLE1["synthetic"] == {"full": 46.3, "no_features": 52.7, "no_idle": 53.5}
    full = ev["full"]["avg_jct"]
    ratio = ev["no_idle"]["avg_jct"]["mean"] / full["mean"]
    assert f"×{ratio:.3f} (×{53.5 / 46.3:.3f})" in row
    test = full["vs_no_idle"]
    assert f"{test['p']:.3g} (n = {test['n']})" in row
    assert numbers["table1"]["tiny"]["wilcoxon_full_vs"]["no_idle"]["p"] == test["p"]
    # The variant the run lacks: a dash beside the paper's value, no ratio, no test.
    assert "| — (52.7) |" in row and "| — (×1.138) |" in row and row.endswith("| — |")
    assert "no_features" not in numbers["table1"]["tiny"]["avg_jct"]
    best = min(("fifo", "sjf"), key=lambda b: ev[b]["avg_jct"]["mean"])
    assert numbers["table1"]["tiny"]["best_heuristic"]["name"] == best
    assert f"| {best} {ev[best]['avg_jct']['mean']:,.1f} ± " in row
    assert "Measured on " in text and numbers["machine"]["cpu"]


def test_figures_at_the_configs_own_workload_give_back_eval_json(run, table):
    """Load 0.8 and 12 jobs are the config's own: the regenerated banks are its test bank, so every
    policy's average JCT is eval.json's (the same episodes, keys and parameters)."""
    _, _, ev = run
    text, numbers, out = table
    for policy in ("full", "no_idle", "fifo"):
        got = numbers["fig4"]["0.8"][policy]["avg_jct"]["mean"]
        assert got == pytest.approx(ev[policy]["avg_jct"]["mean"], rel=1e-6), policy
    for policy in ("full", "no_idle", "sjf"):
        for key in ("avg_jct", "makespan"):
            got = numbers["fig5"]["12"][policy][key]
            assert got["mean"] == pytest.approx(ev[policy][key]["mean"], rel=1e-6), (policy, key)
            assert got["std"] == pytest.approx(ev[policy][key]["std"], rel=1e-5, abs=1e-6)
    jct = np.load(out / "fig4_jct.npz")
    assert jct["load0.8_full"].size == 2 * 2 * 12  # every job of 2 seeds × 2 episodes finished
    assert np.mean(jct["load0.8_fifo"]) == pytest.approx(ev["fifo"]["avg_jct"]["mean"], rel=1e-5)
    fig6 = numbers["fig6"]
    assert set(fig6) == {"mu", "rate"} and fig6["mu"]["50"]["idle_per_delayed"]["mean"] >= 0
    for section in ("## Table 1", "## Fig. 4", "## Fig. 5", "## Fig. 6"):
        assert section in text
    for png in ("fig4", "fig5", "fig6"):
        assert (out / f"{png}.png").stat().st_size > 0


def test_fig5_sjf_equals_a_direct_run_at_that_job_count(run, table):
    """6 jobs per episode: the table plays the bank padded to 12; a direct evaluation plays it as built."""
    _, d, _ = run
    _, numbers, _ = table
    cfg = config_from_dict(DAGSystemConfig, d)
    cfg = cfg.replace(workload=dataclasses.replace(cfg.workload, jobs_per_episode=6))
    params = build_params(cfg, make_env(cfg), "test")
    assert params.bank.max_jobs == 6
    replay = Replay.of(EVALUATION, cfg)
    assert len(replay.episodes) == 2
    results, _ = replay.run(params, baselines=("sjf",))
    for key in ("avg_jct", "makespan"):
        assert numbers["fig5"]["6"]["sjf"][key]["mean"] == pytest.approx(
            results["sjf"][key]["mean"], rel=1e-6
        )
    assert results["sjf"]["avg_jct"]["mean"] != pytest.approx(numbers["fig5"]["12"]["sjf"]["avg_jct"]["mean"])


def test_fig4_pools_finished_jobs_only():
    """Fig. 4's CDF pools per-job JCTs (ms → s) over runs and episodes, leaving out the −1 of jobs that did
    not finish or are padding (a truncated episode, a bank padded to more jobs)."""
    from jaxsched.systems.dag.table import _jcts

    jct = np.array([[[3_000, -1, 1_500], [-1, -1, 250]]], np.int32)  # [runs, episodes, N]
    np.testing.assert_array_equal(_jcts(jct), [0.25, 1.5, 3.0])


def test_a_config_without_eval_json_is_a_one_line_error(tmp_path, capsys):
    d = _quick_dict(**TINY) | {"out_dir": str(tmp_path / "runs")}
    path = tmp_path / "untrained.yaml"
    path.write_text(yaml.safe_dump(d))
    assert main(["table", "dag", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(tmp_path / "runs/tiny/eval.json") in err and f"jaxsched eval {path} --checkpoint" in err
    assert not (tmp_path / "out").exists()


def test_pad_bank_keeps_the_episodes_and_refuses_to_shrink():
    bank = dag_gen.synthetic_bank(2, 3, seed=0, n_executors=4, load=0.8)
    padded = pad_bank(bank, 5, 10)
    assert padded.template.shape == (2, 5) and padded.n_stages.shape == (10,) and padded.max_jobs == 5
    np.testing.assert_array_equal(np.asarray(padded.template[:, :3]), np.asarray(bank.template))
    np.testing.assert_array_equal(np.asarray(padded.arrival[:, :3]), np.asarray(bank.arrival))
    assert (np.asarray(padded.template[:, 3:]) == -1).all()
    assert (np.asarray(padded.arrival[:, 3:]) == MAX_TIME_MS).all()
    np.testing.assert_array_equal(np.asarray(padded.n_jobs), [3, 3])
    np.testing.assert_array_equal(np.asarray(padded.duration[:6]), np.asarray(bank.duration))
    with pytest.raises(ValueError, match=r"pad_bank: the bank has 3 jobs per episode and 6 templates"):
        pad_bank(bank, 2)
