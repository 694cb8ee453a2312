"""The DAS heuristics evaluation from a `kind: das` config: config errors name the key, and
`jaxsched eval` prints and writes the Table-1-style results for every policy, seed and test episode."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from golden import check_golden

from jaxsched.cli import main
from jaxsched.systems import load_run_config
from jaxsched.systems.das.config import das_config_from_dict, load_das_config

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs" / "das" / "quick.yaml"


def test_shipped_das_configs_load():
    for path in sorted((ROOT / "configs" / "das").glob("*.yaml")):
        assert load_run_config(path)[0].kind == "das"
        cfg = load_das_config(path)
        assert cfg.num_seeds >= (1 if path.stem.endswith("small_cpu") else 2)  # CPU: a process per seed
        assert cfg.cluster.machines in (8, 16, 32)
    for size, m in (("small", 8), ("medium", 16), ("large", 32)):
        cfg = load_das_config(ROOT / "configs" / "das" / f"heuristics_{size}.yaml")
        assert cfg.cluster.machines == m and cfg.num_seeds >= 3 and len(cfg.eval.policies) == 5
        assert cfg.workload.n_jobs == 20_000 and cfg.env.episode_jobs == 1000
        # The training configs of Table 1: every learned row, the paper's networks, 3 seeds.
        train = load_das_config(ROOT / "configs" / "das" / f"{size}.yaml")
        assert train.cluster.machines == m and train.num_seeds == 3
        assert set(train.agent.variants) == {"das", "da", "da_mc", "da_rwgp", "dl2", "rifling"}
        assert (train.agent.hidden, train.agent.heads, train.agent.tau) == (64, 4, 8)


@pytest.mark.parametrize(
    "d, message",
    [
        ({"cluster": {"sise": "small"}}, "cluster.size"),
        ({"cluster": {"size": "huge"}}, "cluster.size"),
        ({"env": {"n_slots": "many"}}, "env.n_slots"),
        ({"eval": {"policies": ["fifo_bestfit"]}}, "fifo_bestfit"),
        ({"workload": {"source": "pai"}}, "workload.job_csv"),
        ({"kind": "dbf"}, "kind"),
        ({"num_seeds": 0}, "num_seeds"),
    ],
)
def test_config_errors_name_the_key(d, message):
    with pytest.raises(ValueError, match=message):
        das_config_from_dict({"kind": "das", **d})


def test_eval_cli_writes_every_policy(tmp_path, capsys):
    out = tmp_path / "eval.json"
    argv = ["eval", str(QUICK), "--set", "workload.n_jobs=600", "--set", "env.episode_jobs=60",
            "--episodes", "2", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "JCT (min)" in printed and "FIFO-FirstFit" in printed and "Tetris" in printed
    results = json.loads(out.read_text())  # {policy: {metric: {mean, std, per_seed, per_episode, values}}}
    assert set(results) == {"fifo_firstfit", "fifo_loadbalance", "drf_firstfit", "drf_loadbalance", "tetris",
                            "random"}  # fmt: skip
    for metrics in results.values():
        jct, fee = metrics["avg_jct_min"], metrics["avg_fee"]
        assert np.isfinite(jct["mean"]) and jct["mean"] > 0 and len(jct["per_seed"]) == 2
        assert np.asarray(jct["values"]).shape == (2, 2)  # [seed, episode]: 2 seeds × the 2 episodes asked
        assert np.isfinite(fee["mean"]) and fee["mean"] > 0
        # JCT = wait + duration for every finished job, so the averages add up too.
        wait, dur = metrics["avg_wait_min"]["mean"], metrics["avg_duration_min"]["mean"]
        assert jct["mean"] == pytest.approx(wait + dur, rel=1e-4)
        assert metrics["finished"]["mean"] == 60
    golden = {f"{p}.{m}": results[p][m]["per_seed"] for p in results for m in ("avg_jct_min", "avg_fee")}
    check_golden("das_quick_heuristics", golden, rtol=1e-6)


def test_eval_cli_bad_config_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: das\ncluster: {size: tiny}\n")
    assert main(["eval", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "cluster.size" in err and "\n" not in err


def test_a_cluster_too_small_for_its_jobs_is_refused_or_counted(capsys):
    """One machine (8 GPUs) cannot hold 17 % of the PAI-like jobs: refused, naming the fields; allowed
    by `workload.max_dropped_frac`, the pruned jobs are counted aloud. The paper's clusters drop none."""
    from jaxsched.systems.das.config import build_das

    d = {"cluster": {"n_machines": 1}, "workload": {"n_jobs": 2000}, "env": {"episode_jobs": 100}}
    refused = r"343 of 2,000 jobs \(17.2%\) .*cluster.n_machines = 1.*workload.max_dropped_frac"
    with pytest.raises(ValueError, match=refused):
        build_das(das_config_from_dict(d))
    d["workload"]["max_dropped_frac"] = 0.2
    env, train, test, _ = build_das(das_config_from_dict(d))
    assert "343 of 2,000 jobs (17.2%)" in capsys.readouterr().out
    assert train.bank.num_jobs + test.bank.num_jobs == 2000 - 343
    build_das(das_config_from_dict({**d, "cluster": {"size": "small"}}))
    assert capsys.readouterr().out == ""  # nothing dropped, nothing said


def test_a_planner_plays_the_test_episodes_with_the_evaluation_keys(tmp_path):
    """`rows.evaluate_planner` (MOSA here): its record holds, for each (seed, episode), what one direct run
    of the planner gives on that test episode with that seed's evaluation key."""
    import jax

    from jaxsched.policies.metaheuristics import make_mosa, run_planner_episode
    from jaxsched.systems.das.episodes import build_for_eval, seed_keys
    from jaxsched.systems.das.rows import evaluate_planner

    cfg = load_das_config(QUICK, ["workload.n_jobs=600", "env.episode_jobs=60", f"out_dir={tmp_path}"])
    record = json.loads(evaluate_planner(cfg, "mosa", episodes=2, seeds=1).read_text())
    assert record["planner"] == "mosa" and record["episodes"] == 2 and record["seeds"] == 1
    values = np.asarray(record["results"]["avg_jct_min"]["values"])  # [seed, episode]
    assert values.shape == (1, 2) and np.all(values > 0)
    env, _, test_params, starts = build_for_eval(cfg)
    params = test_params.replace(starts=jax.numpy.asarray(starts, jax.numpy.int32))
    key = seed_keys(cfg.eval.seed, cfg.num_seeds, 2)[0, 1]
    direct = run_planner_episode(env, env.episode(params, 1), make_mosa(env, test_params), key)
    np.testing.assert_allclose(values[0, 1], float(direct["avg_jct_min"]), rtol=1e-6)
