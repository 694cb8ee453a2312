"""Configs (strict YAML), chunked training with checkpoints and exact resume, held-out evaluation, the
`train`/`eval` CLI and the plots, on a tiny config (a few seconds once compiled)."""

import glob
import json
import re
from pathlib import Path

import chex
import jax
import numpy as np
import pytest
import yaml
from golden import check_golden

from jaxsched.cli import main
from jaxsched.experiments.config import apply_overrides, load_yaml
from jaxsched.experiments.learner import learner_template, train_learner
from jaxsched.experiments.plots import plot_split_sweep
from jaxsched.experiments.train import checkpoint_manager, read_metrics, restore_runner
from jaxsched.systems.das.config import load_das_config
from jaxsched.systems.dbf import SYSTEM as DBF
from jaxsched.systems.dbf.config import DBFConfig, build_run
from jaxsched.systems.dbf.config import dbf_config_from_dict as config_from_dict
from jaxsched.systems.dbf.config import load_dbf_config as load_config
from jaxsched.systems.dbf.train import AGENT, LEARNER

ROOT = Path(__file__).resolve().parents[1]

TINY = {
    "kind": "dbf",
    "name": "tiny",
    "seed": 0,
    "num_seeds": 2,
    "env": {"n_cores": 16, "window": 4, "tail": 1, "queue_capacity": 64, "episode_jobs": 32},
    "workload": {"train_episodes": 8, "test_episodes": 8, "jobs_per_episode": 80},
    "ppo": {
        "hidden": [32],
        "num_envs": 8,
        "num_steps": 16,
        "num_minibatches": 4,
        "update_epochs": 2,
        "total_updates": 6,
        "updates_per_chunk": 2,
    },
    "eval": {"episodes": 4, "baselines": ["fcfs", "sjf_easy"], "baseline_window": 8},
}


def tiny(out_dir, **top) -> DBFConfig:
    return config_from_dict({**TINY, "out_dir": str(out_dir), **top})


def write_yaml(path: Path, d: dict) -> Path:
    path.write_text(yaml.safe_dump(d))
    return path


# ---- configs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "d,dotted,hint",
    [
        ({"ppo": {"learning_rat": 1}}, "ppo.learning_rat", "ppo.lr"),
        ({"ppo": {"learning_rate": 1}}, "ppo.learning_rate", "ppo.lr"),
        ({"env": {"n_core": 1}}, "env.n_core", "env.n_cores"),
        ({"workload": {"jobs_per_episod": 1}}, "workload.jobs_per_episod", "workload.jobs_per_episode"),
        ({"num_seed": 1}, "num_seed", "num_seeds"),
    ],
)
def test_unknown_key_names_the_dotted_key_and_suggests_one(tmp_path, d, dotted, hint):
    path = write_yaml(tmp_path / "x.yaml", d)
    with pytest.raises(ValueError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: unknown key '{dotted}' (did you mean '{hint}'?)"


@pytest.mark.parametrize(
    "d,expect",
    [
        ({"env": {"n_cores": "many"}}, "env.n_cores must be an integer, got 'many'"),
        ({"num_seeds": 2.5}, "num_seeds must be an integer"),
        ({"eval": {"greedy": "yes"}}, "eval.greedy must be true/false"),
        ({"ppo": {"hidden": [64, "wide"]}}, r"ppo.hidden\[1\] must be an integer"),
        ({"ppo": {"lr": "fast"}}, "ppo.lr must be a number"),
        ({"env": {"max_steps": [1]}}, "env.max_steps must be an integer or null"),
        ({"ppo": "fast"}, "'ppo' must be a mapping"),
        ({"ppo": {"num_minibatches": 7}}, r"ppo.num_minibatches \(7\) must divide"),
        ({"env": {"tail": 11}}, r"env.tail must be in 0..10"),
        ({"workload": {"source": "swf"}}, "workload.path is required"),
        ({"eval": {"baselines": ["fcfs", "sjff"]}}, "unknown heuristic 'sjff'"),
    ],
)
def test_bad_values_name_the_key(d, expect):
    with pytest.raises(ValueError, match=expect):
        config_from_dict(d)


def test_yaml_floats_and_round_trip(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "r.yaml", {**TINY, "ppo": {**TINY["ppo"], "lr": "3e-4"}}))
    assert cfg.ppo.lr == 3e-4 and cfg.ppo.hidden == (32,) and cfg.name == "tiny"
    assert config_from_dict(cfg.to_dict()) == cfg
    assert config_from_dict(yaml.safe_load(yaml.safe_dump(cfg.to_dict()))) == cfg
    assert config_from_dict({}) == DBFConfig()  # every default is valid (the paper's)
    assert load_config(write_yaml(tmp_path / "named_by_file.yaml", {"kind": "dbf"})).name == "named_by_file"


def test_relative_workload_path_resolves_beside_the_config(tmp_path, monkeypatch):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "trace.swf").write_text("")
    d = {"workload": {"source": "swf", "path": "trace.swf"}}
    monkeypatch.chdir(tmp_path)
    assert load_config(write_yaml(tmp_path / "cfg" / "a.yaml", d)).workload.path == str(
        tmp_path / "cfg" / "trace.swf"
    )
    d["workload"]["path"] = "elsewhere.swf"  # not beside the config: relative to the cwd
    assert load_config(write_yaml(tmp_path / "cfg" / "b.yaml", d)).workload.path == str(
        tmp_path / "elsewhere.swf"
    )


@pytest.mark.parametrize(
    "text,line,key,first",
    [
        ("seed: 0\nenv:\n  tail: 1\n  window: 4\n  tail: 2\n", 5, "'tail'", 3),  # nested
        ("seed: 0\nname: a\nseed: 1\n", 3, "'seed'", 1),  # top level
        ("ppo: {hidden: [32], lr: 0.1, lr: 0.2}\n", 1, "'lr'", 1),  # flow mapping, one line
    ],
)
def test_duplicate_yaml_key_names_the_file_key_and_lines(tmp_path, text, line, key, first):
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: line {line}: duplicate key {key} (first at line {first})"
    assert yaml.safe_load(text) is not None  # plain PyYAML takes it silently: the strict loader must not


def test_duplicate_yaml_key_in_a_das_config_and_the_cli(tmp_path, capsys):
    path = tmp_path / "das.yaml"
    path.write_text("kind: das\ncluster:\n  size: small\n  size: large\n")
    with pytest.raises(
        ValueError, match=rf"^{re.escape(str(path))}: line 4: duplicate key 'size' \(first at line 3\)$"
    ):
        load_das_config(path)
    assert main(["train", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 4: duplicate key 'size' (first at line 3)" in err and err.count("\n") == 1


def test_yaml_merge_keys_may_be_overridden_and_syntax_errors_are_one_line(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("x: &base {tail: 1, window: 4}\nenv:\n  <<: *base\n  tail: 2\n")
    assert load_yaml(path)["env"] == {"tail": 2, "window": 4}  # YAML's rule: an explicit key wins
    path.write_text("env: {tail: 1\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: not valid YAML: .*line 1") as err:
        load_config(path)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "overrides,expect",
    [
        (
            ["ppo.hidden=[32]", "ppo.hidden=[64]"],
            "override 'ppo.hidden=[64]': key 'ppo.hidden' is already set",
        ),
        (["env={tail: 1}", "env.tail=2"], "override 'env.tail=2': key 'env.tail' is already set by 'env="),
        (
            ["env.tail=2", "env={tail: 1}"],
            "override 'env={tail: 1}': key 'env' is already set by 'env.tail=2'",
        ),
        (["env={tail: 1, tail: 2}"], "override 'env={tail: 1, tail: 2}': line 1: duplicate key 'tail'"),
    ],
)
def test_overrides_reject_a_key_given_twice(overrides, expect):
    with pytest.raises(ValueError, match=re.escape(expect)):
        apply_overrides({}, overrides)


def test_shipped_configs_load():
    paths = sorted(glob.glob(str(ROOT / "configs" / "dbf" / "*.yaml")))
    names = {Path(p).stem for p in paths}
    assert {"quick", "m10_9_1", "m10_10_0", "m8", "m16", "m20", "m32", "m64"} <= names
    for p in paths:
        assert Path(p).read_text().startswith("#"), f"{p} needs a comment header"
        cfg = load_config(p)
        if Path(p).stem == "quick":
            assert cfg.ppo.total_updates * cfg.ppo.steps_per_update <= 50_000
            continue
        # cpu_* are the documented CPU-budget variants: the paper's setting but a [256, 256] network;
        # cpu_inspector_* are the SchedInspector baseline (its own small actor and critic)
        paper_hidden = (256, 256) if Path(p).stem.startswith("cpu_") else (1024, 512, 256)
        if Path(p).stem.startswith("cpu_inspector_"):
            paper_hidden = (64, 64)
            assert cfg.agent.network == "inspector" and cfg.env.window == cfg.eval.baseline_window
            assert cfg.eval.baselines == (cfg.agent.inspector_base,)
        assert (cfg.env.n_cores, cfg.env.episode_jobs, cfg.ppo.hidden) == (256, 1000, paper_hidden)
        assert (cfg.ppo.lr, cfg.ppo.clip_eps, cfg.ppo.gamma, cfg.ppo.minibatch_size) == (3e-4, 0.2, 0.99, 128)
    assert load_config(ROOT / "configs/dbf/m10_9_1.yaml").env.tail == 1
    assert load_config(ROOT / "configs/dbf/m64.yaml", ["env.tail=5"]).env.tail == 5


def test_train_and_test_params_share_runtime_norm(tmp_path):
    env, train, test, ppo = build_run(tiny(tmp_path))
    assert float(train.runtime_norm) == float(test.runtime_norm)
    assert int(train.bank.submit.shape[0]) == int(test.bank.submit.shape[0]) == 8 * 80
    assert env.config.window_head == 3 and env.config.window_tail == 1 and ppo.hidden == (32,)


# ---- training, resume, evaluation ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    cfg = tiny(tmp_path_factory.mktemp("full"))
    return cfg, train_learner(LEARNER, cfg, AGENT, progress=False)


def _final_state(cfg: DBFConfig):
    env, train, _, _ = build_run(cfg)
    mngr = checkpoint_manager(cfg.run_dir, read_only=True)
    state = restore_runner(mngr, mngr.latest_step(), learner_template(LEARNER, cfg, AGENT, env, train))
    mngr.close()
    return state


def _without_wall(records):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


def test_train_run_writes_metrics_checkpoint_and_curve(full_run):
    cfg, run_dir = full_run
    assert run_dir == cfg.run_dir
    assert config_from_dict(yaml.safe_load((run_dir / "config.yaml").read_text())) == cfg
    records = read_metrics(run_dir)
    assert [r["update"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r["env_steps"] for r in records] == [128 * u for u in range(1, 7)]
    for r in records:
        for k in ("episodes", "episode_return", "avg_wait", "utilization", "entropy", "approx_kl"):
            assert isinstance(r[k], list) and len(r[k]) == 2, k
    assert sum(sum(r["episodes"]) for r in records) > 0
    empty = [(r, s) for r in records for s in range(2) if r["episodes"][s] == 0]
    assert empty, "the tiny run should have updates in which a seed finished no episode"
    for r, s in empty:  # no episode finished: no episode metric (null), not 0
        assert r["episode_return"][s] is None and r["avg_wait"][s] is None and r["entropy"][s] is not None
    assert sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit()) == [4, 6]
    assert (run_dir / "learning_curve.png").stat().st_size > 10_000
    state = _final_state(cfg)
    assert state.update.tolist() == [6, 6]
    leaves = jax.tree.leaves(state.params)
    assert all(x.shape[0] == 2 for x in leaves)
    assert any((x[0] != x[1]).any() for x in leaves)  # the two seeds differ
    keys = ("episodes", "episode_return", "avg_wait", "entropy", "critic_loss")
    check_golden("dbf_tiny_train", {k: [r[k] for r in records] for k in keys}, rtol=1e-3)


def test_resume_after_a_kill_is_exact(full_run, tmp_path):
    cfg_full, full_dir = full_run
    cfg = tiny(tmp_path)
    train_learner(LEARNER, cfg, AGENT, progress=False, stop_after_chunks=1)
    assert [r["update"] for r in read_metrics(cfg.run_dir)] == [1, 2]
    assert not (cfg.run_dir / "learning_curve.png").exists()
    # killed after writing the next chunk's metrics but before its checkpoint, mid-line
    with (cfg.run_dir / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"update": 3, "env_steps": 384, "wall_s": 0.0}) + '\n{"update": 4, "env')
    with pytest.raises(ValueError, match="--resume"):
        train_learner(LEARNER, cfg, AGENT, progress=False)
    train_learner(LEARNER, cfg, AGENT, resume=True, progress=False)
    chex.assert_trees_all_equal(_final_state(cfg), _final_state(cfg_full))
    assert _without_wall(read_metrics(cfg.run_dir)) == _without_wall(read_metrics(full_dir))
    with pytest.raises(ValueError, match=r"differs .* ppo.lr"):
        other_lr = cfg.replace(ppo=cfg.ppo.__class__(**{**cfg.ppo.to_dict(), "lr": 1e-3}))
        train_learner(LEARNER, other_lr, AGENT, resume=True)


def test_eval_run_writes_agent_and_baselines(full_run, tmp_path):
    cfg, run_dir = full_run
    out = tmp_path / "eval.json"
    results = DBF.evaluate(cfg, run_dir, episodes=3, json_path=out)
    saved = json.loads(out.read_text())
    assert set(saved) == {"agent", "fcfs", "sjf_easy"} == set(results)
    for metric in ("avg_wait", "avg_queue_len", "utilization", "avg_job_load", "avg_bsld"):
        assert len(saved["agent"][metric]["per_seed"]) == 2
        assert {"mean", "std", "per_seed"} <= set(saved["fcfs"][metric])
    assert saved["agent"]["placed"]["mean"] > 0
    means = {f"{p}.{m}": saved[p][m]["mean"] for p in saved for m in ("avg_wait", "avg_bsld", "utilization")}
    check_golden("dbf_tiny_eval", means, rtol=1e-3)


def test_validation_selection_keeps_each_seeds_best_checkpoint(full_run, tmp_path):
    """`eval.select: validation` (the shared `experiments.select`, as DAS has it): the same training as
    without it; every checkpoint's policy validated on episodes of the training bank (the score of the
    last is the validator's on the last checkpoint); per seed the first best kept; the evaluation sees
    those updates."""
    from jaxsched.systems.dbf.evaluation import restore
    from jaxsched.systems.dbf.train import validator

    cfg_full, full_dir = full_run
    cfg = tiny(tmp_path, eval={**TINY["eval"], "select": "validation", "validation_episodes": 2})
    train_learner(LEARNER, cfg, AGENT, progress=False)
    assert _without_wall(read_metrics(cfg.run_dir)) == _without_wall(read_metrics(full_dir))
    lines = [json.loads(x) for x in (cfg.run_dir / "validation.jsonl").read_text().splitlines()]
    assert [r["update"] for r in lines] == [0, 2, 4, 6]
    env, train, _, _ = build_run(cfg)
    state = _final_state(cfg_full)
    last = validator(cfg, env, train)((state.params, state.obs_stats)).mean(axis=1)
    np.testing.assert_allclose(lines[-1]["avg_wait"], last, rtol=1e-5)
    waits = np.array([r["avg_wait"] for r in lines])  # [checkpoints, seeds]
    best = [lines[i]["update"] for i in waits.argmin(axis=0)]  # argmin: the first of equal scores
    assert lines[-1]["best_update"] == best
    _, selection = restore(cfg, AGENT, env, train)
    assert selection["by"] == "validation" and selection["update"] == best
    assert DBF.evaluate(cfg, cfg.run_dir, episodes=2, json_path=tmp_path / "e.json")["agent"]["avg_wait"]


def test_weighted_episode_mean_by_hand():
    """The progress line's and `jaxsched report`'s training means: each update's per-seed mean weighted
    by the episodes that ended in it (a seed with none contributes nothing, its null included)."""
    from jaxsched.experiments.train import weighted_episode_mean

    records = [{"episodes": [2, 0], "x": [10.0, None]}, {"episodes": [1, 1], "x": [40.0, 4.0]}]
    assert weighted_episode_mean(records, "x") == (2 * 10.0 + 40.0 + 4.0) / 4
    assert np.isnan(weighted_episode_mean([{"episodes": [0, 0], "x": [None, None]}], "x"))


def assert_tensorboard_holds_the_run(run_dir, records):
    """TensorBoard's own reader parses `run_dir/tensorboard` back: every metric's seed mean at every
    update, the run's `ppo.lr` (its config.yaml) as a hyper-parameter, the learning curve as an image."""
    lr = yaml.safe_load((run_dir / "config.yaml").read_text())["ppo"]["lr"]
    from tensorboard.backend.event_processing import event_accumulator as ea  # a dev dependency
    from tensorboard.plugins.hparams import plugin_data_pb2

    acc = ea.EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    for key in ("loss", "avg_bsld", "episode_return"):
        if key not in records[0]:
            continue
        got = {e.step: e.value for e in acc.Scalars(f"{key}/mean")}
        want = {r["update"]: np.mean([v for v in r[key] if v is not None]) for r in records
                if any(v is not None for v in r[key])}  # fmt: skip
        assert set(got) == set(want) and all(np.isclose(got[u], want[u], rtol=1e-6) for u in want), key
    content = acc.SummaryMetadata("_hparams_/session_start_info").plugin_data.content
    hparams = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
    assert hparams["ppo.lr"].number_value == lr and hparams["name"].string_value == run_dir.name
    (image,) = acc.Images("learning_curve")
    assert image.width > 100 and image.height > 100


def test_cli_train_and_eval(tmp_path, capsys):
    path = write_yaml(tmp_path / "tiny.yaml", {**TINY, "out_dir": str(tmp_path / "runs")})
    assert main(["train", str(path), "--quiet", "--logger", "tensorboard"]) == 0
    run_dir = tmp_path / "runs" / "tiny"
    assert (run_dir / "learning_curve.png").exists() and len(read_metrics(run_dir)) == 6
    assert_tensorboard_holds_the_run(run_dir, read_metrics(run_dir))
    assert main(["train", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxsched train: error: ") and "--resume" in err and err.count("\n") == 1
    assert main(["train", str(path), "--quiet", "--resume"]) == 0  # already complete: nothing to do
    assert main(["eval", str(path), "--checkpoint", str(run_dir), "--episodes", "2"]) == 0
    assert (run_dir / "eval.json").exists()
    baselines = tmp_path / "baselines.json"
    assert main(["eval", str(path), "--episodes", "2", "--json", str(baselines)]) == 0  # no checkpoint
    assert set(json.loads(baselines.read_text())) == {"fcfs", "sjf_easy"}
    capsys.readouterr()
    (run_dir / "learning_curve.png").unlink()
    assert main(["report", str(path)]) == 0  # the generic run report, as for every system
    out = capsys.readouterr().out
    assert "tiny (dbf): training" in out and "held-out evaluation" in out
    assert all(name in out for name in ("agent", "fcfs", "sjf_easy"))
    assert (run_dir / "learning_curve.png").exists()  # redrawn from metrics.jsonl
    bad = write_yaml(tmp_path / "bad.yaml", {**TINY, "ppo": {"learning_rat": 1}})
    assert main(["train", str(bad)]) == 2
    assert "unknown key 'ppo.learning_rat' (did you mean 'ppo.lr'?)" in capsys.readouterr().err


def test_every_verb_finds_runs_by_out_dir_and_says_where_it_looked(tmp_path, capsys, monkeypatch):
    """One `--out-dir` (and `--name`) for train, eval, report and table; a verb that finds no run names
    where it looked and exits non-zero; `--resume` with nothing to resume is an error, not a fresh run;
    Ctrl-C is one line naming the last checkpoint and the command that continues."""
    import jaxsched.experiments.learner as learner_module

    path = write_yaml(tmp_path / "tiny.yaml", TINY)  # out_dir: the default, runs/ (not used here)
    where = ["--out-dir", str(tmp_path / "sweep"), "--name", "a"]
    assert main(["train", str(path), "--quiet", "--resume", *where]) == 2
    err = capsys.readouterr().err
    assert f"--resume: no run to resume in {tmp_path / 'sweep' / 'a'}" in err and err.count("\n") == 1
    assert not (tmp_path / "sweep").exists()  # nothing started
    assert main(["report", str(path), *where]) == 2
    err = capsys.readouterr().err
    assert "no run of a has trained yet" in err and str(tmp_path / "sweep" / "a" / "metrics.jsonl") in err

    real = learner_module.train_chunks

    def killed(*args, **kwargs):  # one chunk (metrics and checkpoint written), then Ctrl-C
        real(*args, **{**kwargs, "stop_after_chunks": 1})
        raise KeyboardInterrupt

    monkeypatch.setattr(learner_module, "train_chunks", killed)
    assert main(["train", str(path), "--quiet", *where]) == 130
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "interrupted; last checkpoint: " in err
    assert f"{tmp_path / 'sweep' / 'a'} at update 2" in err
    assert err.endswith(f"continue with: jaxsched train {path} --quiet {' '.join(where)} --resume")
    monkeypatch.undo()
    assert main(["train", str(path), "--quiet", "--resume", *where]) == 0  # what the line says works
    assert main(["eval", str(path), "--checkpoint", "--episodes", "2", *where]) == 0  # the config's own run
    assert set(json.loads((tmp_path / "sweep" / "a" / "eval.json").read_text())) == {
        "agent",
        "fcfs",
        "sjf_easy",
    }
    capsys.readouterr()
    assert main(["report", str(path), *where]) == 0
    assert "a (dbf): training" in capsys.readouterr().out


def test_plot_split_sweep(tmp_path):
    results = {
        (m, t): {"avg_wait": (1000.0 + 10 * t, 50.0), "avg_queue_len": (5.0 - 0.1 * t, 0.5)}
        for m in (8, 10)
        for t in range(0, m + 1, 2)
    }
    out = plot_split_sweep(results, tmp_path / "sweep.png")
    assert out.stat().st_size > 10_000
