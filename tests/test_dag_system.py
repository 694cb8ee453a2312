"""The idle-slot DAG system end to end (`kind: dag`): the shipped configs load, config errors name the
field, and a tiny run of the quick config through `jaxsched train` / `eval` writes the variants' runs and
an eval.json with the metrics, the paired tests (full vs no_idle, vs the best baseline) and the per-job
JCTs, while a run stopped after one chunk and resumed ends at bitwise the same parameters and metrics."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml
from config_edit import config_with

from jaxsched.cli import main
from jaxsched.experiments.config import config_from_dict
from jaxsched.experiments.learner import train_learner
from jaxsched.systems import get_system, load_run_config
from jaxsched.systems.dag.config import DAGSystemConfig, build_dag
from jaxsched.systems.dag.train import LEARNER

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs/dag/quick.yaml"
# The quick config cut to a few seconds of running: the compile dominates, and the programs of one variant
# are shared by the run, its evaluation and the resumed run (`train.programs` caches them per shapes).
TINY = {
    "name": "tiny",
    "workload": {"train_episodes": 2, "test_episodes": 2, "jobs_per_episode": 12},
    "reinforce": {
        "num_sequences": 2,
        "rollouts": 2,
        "num_steps": 24,
        "total_updates": 2,
        "updates_per_chunk": 1,
    },
    "eval": {"episodes": 2, "baselines": ["fifo", "sjf"]},
}


def _quick_dict(**sections) -> dict:
    return config_with(QUICK, **sections)


def test_shipped_configs_load():
    system, cfg = load_run_config(QUICK)
    assert system is get_system("dag") and isinstance(cfg, DAGSystemConfig)
    assert (cfg.env.n_executors, cfg.env.max_slots, cfg.env.max_stages) == (10, 8, 5)
    assert cfg.workload.source == "synthetic" and cfg.workload.jobs_per_episode == 40
    assert cfg.agent.variants == ("full", "no_idle") and cfg.num_seeds == 2
    assert (cfg.reinforce.curriculum_start_s, cfg.reinforce.curriculum_end_s) == (30.0, 100.0)
    decima = load_run_config(ROOT / "configs/dag/decima.yaml")[1]
    assert decima.env.task_waves and decima.workload.source == "tpch" and decima.env.n_executors == 50
    for name in ("synthetic", "mixed", "tpch_like"):
        _, other = load_run_config(ROOT / f"configs/dag/{name}.yaml")
        assert other.workload.source == name and other.workload.test_seed != other.workload.bank_seed
        if other.agent.levels is not None:  # message passing reaches the roots of both banks' DAGs
            _, *banks = build_dag(other)
            assert max(int(b.bank.height.max()) for b in banks) == other.agent.levels
    env, train, test = build_dag(cfg)
    assert train.bank.arrival.shape == (8, 40) and test.bank.arrival.shape == (4, 40)
    assert not np.array_equal(np.asarray(train.bank.arrival[0]), np.asarray(test.bank.arrival[0]))
    from jaxsched.systems.dag.table import PAPER_TABLE1

    assert PAPER_TABLE1["synthetic"] == {"full": 46.3, "no_features": 52.7, "no_idle": 53.5}
    assert PAPER_TABLE1["mixed"] == {"full": 69.4, "no_features": 75.2, "no_idle": 74.5}


@pytest.mark.parametrize(
    "sections,message",
    [
        ({"env": {"n_executors": 0}}, r"env.n_executors must be >= 1, got 0"),
        ({"env": {"max_stages": 40}}, r"env.max_stages must be <= 31"),
        ({"env": {"moving_delay": -1}}, r"env.moving_delay must be in \[0, 1e8\) ms"),
        ({"workload": {"source": "alibaba"}}, r"workload.source must be one of synthetic, tpch_like"),
        ({"workload": {"synth_max_stages": 6}}, r"workload.synth_max_stages \(6\) exceeds env.max_stages"),
        ({"workload": {"long_fraction": 1.5}}, r"workload.long_fraction must be in \[0, 1\]"),
        ({"workload": {"test_seed": 0}}, r"workload.test_seed must differ from workload.bank_seed"),
        ({"workload": {"source": "tpch"}}, r"workload.tpch_npz is required"),
        (
            {"workload": {"tpch_npz": "x.npz"}},
            r"workload.tpch_npz is only read by the sources tpch and mixed",
        ),
        ({"workload": {"source": "mixed", "max_tasks": 4}}, r"workload.max_tasks: the mixed source draws"),
        ({"workload": {"load": None}}, r"workload.load is required \(> 0\) for workload.source 'synthetic'"),
        (
            {"agent": {"variants": ["full", "greedy"]}},
            r"agent.variants: unknown variant 'greedy'; choose from full,",
        ),
        ({"agent": {"variants": ["full", "full"]}}, r"agent.variants has duplicates"),
        ({"reinforce": {"updates_per_chunk": 3}}, r"reinforce.updates_per_chunk \(3\) must divide"),
        ({"eval": {"baselines": ["tetris"]}}, r"eval.baselines: unknown heuristic 'tetris'"),
        ({"env": {"task_waves": True}}, r"env.task_waves samples decima-sim's .* needs workload.source tpch"),
    ],
)
def test_config_errors_name_the_field(sections, message):
    with pytest.raises(ValueError, match=message):
        config_from_dict(DAGSystemConfig, _quick_dict(**sections))


def test_too_few_message_passing_levels_name_the_field():
    """The quick banks' deepest DAG has height 4: 3 rounds would leave its root without its leaves."""
    cfg = config_from_dict(DAGSystemConfig, _quick_dict(agent={"levels": 3}))
    with pytest.raises(ValueError, match=r"agent.levels \(3\) is below the height of the train bank"):
        build_dag(cfg)
    build_dag(config_from_dict(DAGSystemConfig, _quick_dict(agent={"levels": 4})))


def test_heuristics_play_each_held_out_episode_of_the_bank():
    """`play_baselines` plays held-out episode e of the bank (its jobs and arrivals) with key e: equal, per
    episode, to a direct run on a bank holding only that episode's rows — and the episodes differ."""
    import jaxsched
    from jaxsched.experiments.evaluate import play_baselines, run_episode
    from jaxsched.policies.dag import make_heuristic
    from jaxsched.systems.dag.evaluation import EVALUATION

    env, params = jaxsched.make("dag-quick")
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    cfg = config_from_dict(DAGSystemConfig, _quick_dict(eval={"baselines": ["fifo"]}))
    got = play_baselines(EVALUATION, cfg, env, params, np.arange(3), keys)["fifo"]["avg_jct"][0]  # [episodes]
    fifo = make_heuristic(env, "fifo")
    direct = jax.jit(lambda p, k: run_episode(env, p, fifo, None, k)["avg_jct"])
    b = params.bank
    want = []
    for e in range(3):
        rows = dict(template=b.template[e : e + 1], arrival=b.arrival[e : e + 1], n_jobs=b.n_jobs[e : e + 1])
        want.append(float(direct(params.replace(bank=b.replace(**rows)), keys[e])))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(set(want)) == 3


def test_an_unknown_key_names_it(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_quick_dict(agent={"variant": ["full"]})))
    with pytest.raises(ValueError, match=r"unknown key 'agent.variant' \(did you mean 'agent.variants'\?\)"):
        load_run_config(path)


def test_train_eval_and_an_exact_resume(tmp_path):
    """`jaxsched train` / `eval` on the tiny quick config: both variants' runs, the baselines alone, then
    every variant with the baselines (2 seeds × 2 test episodes, paired tests, per-job JCTs in the .npz);
    a run stopped after its first chunk and resumed ends with the same parameters and metrics."""
    d = _quick_dict(**TINY) | {"out_dir": str(tmp_path / "runs")}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(d))
    assert main(["train", str(path), "--quiet"]) == 0
    run = tmp_path / "runs/tiny"
    records = [json.loads(line) for line in (run / "full/metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in records] == [1, 2] and len(records[0]["return"]) == 2
    assert {"avg_jct", "episode_return", "idle_per_selection", "entropy"} <= set(records[0])

    assert main(["eval", str(path)]) == 0  # the baselines alone
    assert set(json.loads((run / "eval.json").read_text())) == {"fifo", "sjf"}
    assert main(["eval", str(path), "--checkpoint", str(run)]) == 0
    out = json.loads((run / "eval.json").read_text())
    assert set(out) == {"full", "no_idle", "fifo", "sjf"}
    for policy, res in out.items():
        for key in ("avg_jct", "makespan", "idle_per_selection", "idle_per_delayed", "unfinished"):
            assert np.isfinite(res[key]["mean"]), (policy, key)
        assert res["unfinished"]["mean"] == 0 and res["avg_jct"]["mean"] > 0
    assert len(out["full"]["avg_jct"]["per_seed"]) == 2 and len(out["full"]["avg_jct"]["per_episode"]) == 2
    assert out["no_idle"]["idle_per_selection"]["mean"] == 0  # the ablation never delays a stage
    assert out["full"]["avg_jct"]["vs_no_idle"]["against"] == "no_idle"
    best = min(("fifo", "sjf"), key=lambda b: out[b]["avg_jct"]["mean"])  # the lowest average JCT
    assert out["no_idle"]["makespan"]["vs_best"]["against"] == best
    assert set(json.loads((run / "no_idle/eval.json").read_text())) == {"no_idle", "fifo", "sjf"}
    assert main(["eval", str(path), "--checkpoint", str(run / "no_idle")]) == 0  # one variant's folder
    assert set(json.loads((run / "eval.json").read_text())) == set(out)  # the combined file is kept
    jct = np.load(run / "eval_jct.npz")
    assert jct["full"].shape == (2, 2, 12) and jct["fifo"].shape == (1, 2, 12)
    assert (jct["full"] >= 0).all()  # every job finished: the per-job JCTs average to the episode's
    np.testing.assert_allclose(
        (jct["full"].mean(axis=2) / 1000.0).mean(axis=1), out["full"]["avg_jct"]["per_seed"], rtol=1e-5
    )

    cfg = config_from_dict(DAGSystemConfig, d | {"out_dir": str(tmp_path / "resumed")})
    train_learner(LEARNER, cfg, "full", progress=False, stop_after_chunks=1)
    assert len((tmp_path / "resumed/tiny/full/metrics.jsonl").read_text().splitlines()) == 1
    train_learner(LEARNER, cfg, "full", resume=True, progress=False)
    from jaxsched.experiments.train import checkpoint_manager, read_metrics

    def final(root):
        mngr = checkpoint_manager(root / "tiny/full", read_only=True)
        state = mngr.restore(mngr.latest_step())
        mngr.close()
        return state

    full, resumed = final(tmp_path / "runs"), final(tmp_path / "resumed")

    def plain(x):  # the runner's PRNG key as its raw data
        return jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x

    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(np.asarray(plain(a)), np.asarray(plain(b)))
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]  # noqa: E731
    assert strip(read_metrics(run / "full")) == strip(read_metrics(tmp_path / "resumed/tiny/full"))
