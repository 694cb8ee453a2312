"""The SCED² system end to end (`kind: sced2`): config errors that name the field, bad traces and
impossible configs as one CLI line with exit 2, the CSV source cut into episodes, and a tiny training run
through `jaxsched train` / `eval` / `table sced2` whose DQN resume is exact."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
import yaml

from jaxsched.cli import main
from jaxsched.experiments.config import config_from_dict
from jaxsched.experiments.learner import train_learner
from jaxsched.systems.sced2.config import SCED2Config, build_sced2
from jaxsched.systems.sced2.train import LEARNER

TINY = {
    "kind": "sced2",
    "name": "tiny",
    "num_seeds": 2,
    "env": {"n_servers": 2, "gpus_per_server": 4, "window": 3, "n_levels": 2},
    "workload": {
        "multi_gpu_sizes": [2, 4],
        "multi_gpu_weights": [0.5, 0.5],
        "arrival_scale": 4.0,
        "train_episodes": 3,
        "test_episodes": 2,
        "jobs_per_episode": 12,
    },  # fmt: skip
    "dqn": {
        "num_envs": 4,
        "rollout_steps": 4,
        "grad_steps": 1,
        "total_updates": 6,
        "updates_per_chunk": 2,
        "buffer_size": 256,
        "batch_size": 8,
        "learning_starts": 16,
        "target_every": 4,
    },  # fmt: skip
    "agent": {"server_hidden": [8], "job_hidden": [16], "head_hidden": 16},
    "eval": {"baselines": ["fifo", "sif"]},
}


def _config(**sections) -> SCED2Config:
    d = json.loads(json.dumps(TINY))
    for key, value in sections.items():
        d.setdefault(key, {}).update(value) if isinstance(value, dict) else d.__setitem__(key, value)
    return config_from_dict(SCED2Config, d)


@pytest.mark.parametrize(
    "sections,message",
    [
        ({"env": {"window": 0}}, r"env.window must be >= 1, got 0"),
        ({"env": {"n_levels": 4}}, r"env.n_levels \(4\) exceeds the 2 locality level\(s\) a 2 × 4 cluster"),
        ({"workload": {"multi_gpu_sizes": [2, 16]}}, r"workload.multi_gpu_sizes: a 16-GPU job is wider"),
        ({"workload": {"multi_gpu_weights": [0.5]}}, r"workload.multi_gpu_weights must have one weight per"),
        ({"workload": {"single_gpu_share": 1.5}}, r"workload.single_gpu_share must be in \[0, 1\]"),
        ({"workload": {"source": "csv"}}, r"workload.path is required"),
        ({"agent": {"networks": ["cnn"]}}, r"agent.networks: unknown network 'cnn'; choose from shared, mlp"),
        ({"eval": {"baselines": ["tetris"]}}, r"eval.baselines: unknown heuristic 'tetris'"),
        ({"eval": {"headline": "queue", "baseline_windows": ["window"]}}, r"eval.headline must be one of"),
        ({"dqn": {"learning_starts": 4}}, r"dqn.learning_starts must be >= 8"),
    ],
)
def test_config_errors_name_the_field(sections, message):
    with pytest.raises(ValueError, match=message):
        _config(**sections)


def _write(tmp_path, d, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(d))
    return str(path)


@pytest.mark.parametrize(
    "csv,message",
    [
        ("submit,gpus,duration,model\n0,1,10,vgg16\n5,x,10,vgg16\n", r"line 3: gpus is not a number"),
        ("submit,gpus,duration,model\n0,1,10,vgg16\n5,9,10,vgg16\n", r"job 1 asks for 9 GPUs, more than"),
        # an unknown model is dropped by the default map (and counted): here, every job
        ("submit,gpus,duration,model\n0,1,10,lenet\n", r"no jobs \(only a header, or every job dropped"),
        ("a,b\n1,2\n", r"neither a Tiresias-style DLT trace"),
    ],
)
def test_a_bad_trace_is_one_line_and_exit_2(tmp_path, capsys, csv, message):
    trace = tmp_path / "trace.csv"
    trace.write_text(csv)
    d = json.loads(json.dumps(TINY)) | {"out_dir": str(tmp_path / "runs")}
    d["workload"] = {"source": "csv", "path": str(trace), "train_episodes": 1, "test_episodes": 1,
                     "jobs_per_episode": 1}  # fmt: skip
    assert main(["train", _write(tmp_path, d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxsched train: error: ") and err.count("\n") == 1, err
    assert __import__("re").search(message, err), err


def test_an_impossible_config_is_one_line_and_exit_2(tmp_path, capsys):
    d = json.loads(json.dumps(TINY)) | {"out_dir": str(tmp_path / "runs")}
    d["env"] = d["env"] | {"n_levels": 5}
    assert main(["train", _write(tmp_path, d)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "env.n_levels (5) exceeds" in err, err


def test_csv_source_cuts_consecutive_episodes_on_their_own_timelines(tmp_path):
    rows = "\n".join(f"{100 + 7 * i},{1 + i % 2},{30 + i},transformer" for i in range(10))
    trace = tmp_path / "trace.csv"
    trace.write_text("submit,gpus,duration,model\n" + rows + "\n")
    cfg = _config(workload={"source": "csv", "path": str(trace), "train_episodes": 2, "test_episodes": 1,
                            "jobs_per_episode": 3})  # fmt: skip
    _, train, test = build_sced2(cfg)
    np.testing.assert_array_equal(np.asarray(train.submit), [0, 7, 14, 0, 7, 14])
    np.testing.assert_array_equal(np.asarray(train.ideal), [30, 31, 32, 33, 34, 35])
    np.testing.assert_array_equal(np.asarray(test.ideal), [36, 37, 38])
    np.testing.assert_array_equal(np.asarray(train.starts), [0, 3])
    short = _config(workload={"source": "csv", "path": str(trace), "train_episodes": 3, "test_episodes": 1,
                              "jobs_per_episode": 3})  # fmt: skip
    with pytest.raises(ValueError, match="has 10 jobs, fewer than .* = 12"):
        build_sced2(short)


def test_train_eval_and_an_exact_resume(tmp_path, capsys):
    """`jaxsched train` / `eval` on the tiny config write the run and an eval.json holding the agent (2
    seeds × 2 test episodes, with a paired test against the best baseline) and both baseline windows; a
    run killed after one chunk and resumed ends with the same parameters, replay buffer and metrics."""
    d = json.loads(json.dumps(TINY)) | {"out_dir": str(tmp_path / "runs")}
    path = _write(tmp_path, d)
    assert main(["train", path]) == 0
    assert main(["eval", path]) == 0  # the baselines alone
    assert set(json.loads((tmp_path / "runs/tiny/eval.json").read_text())) == {
        "fifo",
        "sif",
        "fifo@queue",
        "sif@queue",
    }
    assert main(["eval", path, "--checkpoint", str(tmp_path / "runs/tiny")]) == 0
    out = json.loads((tmp_path / "runs/tiny/shared/eval.json").read_text())
    assert set(out) == {"sced2", "fifo", "sif", "fifo@queue", "sif@queue"}
    assert len(out["sced2"]["avg_effectiveness"]["per_seed"]) == 2
    assert len(out["sced2"]["avg_jct"]["per_episode"]) == 2
    test = out["sced2"]["makespan"]["vs_best"]
    assert test["against"] in ("fifo", "sif")  # the best of the headline (J-window) baselines
    want = out[test["against"]]["makespan"]["mean"] / out["sced2"]["makespan"]["mean"]
    assert test["ratio"] == pytest.approx(want)
    for res in out.values():
        assert 0 < res["avg_effectiveness"]["mean"] <= 1
    # The paper figures: at factor 1, Fig. 8 re-evaluates the very test episodes eval.json holds.
    assert main(["table", "sced2", path, "--out", str(tmp_path / "table"), "--intervals", "1,2"]) == 0
    text = (tmp_path / "table/table.md").read_text()
    for section in ("Fig. 7", "Fig. 8", "Fig. 9", "Fig. 10", "Table III"):
        assert f"## {section}" in text
    for png in ("fig7_avg_effectiveness", "fig8", "fig9", "fig10"):
        assert (tmp_path / f"table/{png}.png").stat().st_size > 0
    fig8 = json.loads((tmp_path / "table/fig8.json").read_text())["avg_effectiveness"]
    for policy in ("sced2", "fifo", "sif"):
        assert fig8[policy][0] == pytest.approx(out[policy]["avg_effectiveness"]["mean"], rel=1e-6)

    cfg = _config(out_dir=str(tmp_path / "resumed"))
    assert train_learner(LEARNER, cfg, "shared", progress=False, stop_after_chunks=1) is not None
    train_learner(LEARNER, cfg, "shared", resume=True, progress=False)
    from jaxsched.experiments.train import checkpoint_manager, read_metrics

    def final(root):
        mngr = checkpoint_manager(root / "tiny/shared", read_only=True)
        state = mngr.restore(mngr.latest_step())
        mngr.close()
        return state

    full, resumed = final(tmp_path / "runs"), final(tmp_path / "resumed")
    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]  # noqa: E731
    assert strip(read_metrics(tmp_path / "runs/tiny/shared")) == strip(
        read_metrics(tmp_path / "resumed/tiny/shared")
    )
