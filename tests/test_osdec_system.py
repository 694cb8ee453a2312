"""The OSDEC system end to end (`kind: osdec`): the shipped configs load, config errors name the field, and
a tiny run through `jaxsched train` / `eval` writes the learner's run and an eval.json with the metrics and
the paired test against the best baseline, while a run stopped after one chunk and resumed ends at bitwise
the same parameters and metrics."""

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
from jaxsched.experiments.train import checkpoint_manager, read_metrics
from jaxsched.systems import get_system, load_run_config
from jaxsched.systems.osdec.config import OSDECConfig, build_osdec
from jaxsched.systems.osdec.table import osdec_table
from jaxsched.systems.osdec.train import LEARNER

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs/osdec/quick.yaml"
TINY = {
    "name": "tiny",
    "workload": {"horizon": 12, "train_episodes": 4, "test_episodes": 3},
    "agent": {"learners": ["osdec", "reinforce"], "embed": 8, "ff": 8},
    "ppo": {"num_envs": 4, "num_steps": 12, "total_updates": 2, "updates_per_chunk": 1, "num_minibatches": 2},
    "eval": {"episodes": 3, "baselines": ["fifo", "sjf"]},
}


def _quick_dict(**sections) -> dict:
    return config_with(QUICK, **sections)


def test_shipped_configs_load():
    system, cfg = load_run_config(QUICK)
    assert system is get_system("osdec") and isinstance(cfg, OSDECConfig)
    assert cfg.workload.preset == "core2" and cfg.agent.learners == ("osdec", "ppo_mlp")
    assert cfg.ppo.group_lrs[2] == ("aux", 1e-2, 1e-3)
    table1 = load_run_config(ROOT / "configs/osdec/table1.yaml")[1]
    assert len(table1.agent.learners) == 7 and not table1.workload.realtime
    assert (table1.ppo.steps_per_update, table1.ppo.minibatch_size) == (2048, 64)  # Table 3
    assert load_run_config(ROOT / "configs/osdec/realtime.yaml")[1].workload.realtime
    env, train, test = build_osdec(cfg)
    assert train.bank.capacity.shape == (64, 24) and test.bank.capacity.shape == (16, 24)
    assert not np.array_equal(train.bank.capacity[:16], test.bank.capacity)  # unseen test episodes


@pytest.mark.parametrize(
    "sections,message",
    [
        ({"workload": {"test_seed": 0}}, "workload.test_seed must differ from workload.bank_seed"),
        ({"workload": {"preset": "core9"}}, "workload.preset must be one of default, core1"),
        ({"workload": {"horizon": 8}}, r"workload.horizon \(8\) must exceed max_lead \+ max_window"),
        ({"agent": {"learners": ["osdec", "dqn"]}}, "agent.learners: unknown learner .dqn.; choose"),
        ({"agent": {"learners": []}}, "agent.learners must list at least one of osdec"),
        ({"env": {"running_slots": 0}}, "env.running_slots must be >= 1"),
        ({"eval": {"baselines": ["lifo"]}}, "eval.baselines: unknown heuristic .lifo.; choose from fifo"),
        ({"ppo": {"normalize_obs": True}}, "ppo.normalize_obs must be false"),
        ({"ppo": {"group_lrs": [["policy", 1e-3]]}}, r"ppo.group_lrs\[0\] must be a list \[a string, a"),
    ],
)
def test_config_errors_name_the_field(tmp_path, sections, message):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_quick_dict(**sections)))
    with pytest.raises(ValueError, match=message):
        load_run_config(path)


def test_train_eval_and_an_exact_resume(tmp_path):
    d = _quick_dict(**TINY) | {"out_dir": str(tmp_path / "runs")}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(d))
    assert main(["train", str(path), "--quiet"]) == 0
    run = tmp_path / "runs/tiny"
    records = read_metrics(run / "osdec")
    assert [r["update"] for r in records] == [1, 2] and len(records[0]["approx_kl"]) == 2
    assert {"total_reward", "utilization", "aux_loss", "aux_capacity", "approx_kl"} <= set(records[0])
    # REINFORCE: one full-batch step per batch, so every gradient is taken at ratio 1 (nothing clips, no
    # KL), where PPO's later epochs and minibatches are taken off-policy
    reinforce = read_metrics(run / "reinforce")
    assert all(v == 0.0 for r in reinforce for key in ("clip_frac", "approx_kl") for v in r[key])
    assert any(v != 0.0 for r in records for v in r["approx_kl"])

    assert main(["eval", str(path), "--checkpoint", str(run)]) == 0
    out = json.loads((run / "eval.json").read_text())
    assert set(out) == {"osdec", "reinforce", "fifo", "sjf"}
    for policy, res in out.items():
        for key in ("total_reward", "utilization", "delay_penalty", "violation", "expired"):
            assert np.isfinite(res[key]["mean"]), (policy, key)
    assert len(out["osdec"]["total_reward"]["per_seed"]) == 2
    assert len(out["osdec"]["total_reward"]["per_episode"]) == 3
    assert out["osdec"]["total_reward"]["vs_best"]["against"] in ("fifo", "sjf")

    _table(tmp_path, path, d, out)

    cfg = config_from_dict(OSDECConfig, d | {"out_dir": str(tmp_path / "resumed")})
    train_learner(LEARNER, cfg, "osdec", progress=False, stop_after_chunks=1)
    train_learner(LEARNER, cfg, "osdec", resume=True, progress=False)

    def final(root):
        mngr = checkpoint_manager(root / "tiny/osdec", read_only=True)
        state = mngr.restore(mngr.latest_step())
        mngr.close()
        return state

    def plain(x):
        return jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x

    full, resumed = final(tmp_path / "runs"), final(tmp_path / "resumed")
    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(np.asarray(plain(a)), np.asarray(plain(b)))
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_s"} for r in rs]  # noqa: E731
    assert strip(read_metrics(run / "osdec")) == strip(read_metrics(tmp_path / "resumed/tiny/osdec"))


def _table(tmp_path, path, d, out):
    """`jaxsched table osdec` over the trained config and a real-time twin evaluated without a checkpoint
    (its baselines' rows alone): Tables 1, 2 and 4 with the paper's numbers, and the episode figure, whose
    FIFO replay earns exactly what the evaluation recorded for that episode."""
    rt = d | {"name": "tiny_rt", "workload": d["workload"] | {"realtime": True}}
    rt_path = tmp_path / "tiny_rt.yaml"
    rt_path.write_text(yaml.safe_dump(rt))
    assert main(["eval", str(rt_path)]) == 0
    table = tmp_path / "table"
    assert main(["table", "osdec", str(path), str(rt_path), "--out", str(table), "--episode", "1"]) == 0
    text = (table / "table.md").read_text()
    for heading in ("## Table 1", "## Table 2", "## Table 4", "## One episode"):
        assert heading in text, heading
    table1 = text.split("## Table 1")[1].split("## Table 2")[0]
    rows = {line.split(" | ")[0][2:]: line for line in table1.splitlines() if line.startswith("| ")}
    assert "(3,408.8)" in rows["FIFO"] and "(3,475.4)" in rows["OSDEC"]  # Table 1's paper numbers beside ours
    assert "vs fifo" in rows["OSDEC"] or "vs sjf" in rows["OSDEC"]
    numbers = json.loads((table / "table.json").read_text())
    assert numbers["table2"]["rows"]["fifo"]["realtime"] is not None
    assert numbers["table2"]["rows"]["osdec"]["realtime"] is None  # the twin trained nothing
    assert list(numbers["table4"]) == ["core2"]  # the tiny config's preset
    # the replay is the evaluated episode: its reward, and its running cores over its capacity
    np.testing.assert_allclose(
        numbers["episode"]["fifo"]["total_reward"], out["fifo"]["total_reward"]["per_episode"][1], rtol=1e-6
    )
    trace = json.loads((table / "episode.json").read_text())["fifo"]
    np.testing.assert_allclose(
        np.sum(trace["busy"]) / np.sum(trace["capacity"]),
        out["fifo"]["capacity_share"]["per_episode"][1],
        rtol=1e-5,
    )
    # the ratios printed are ours, from the evaluations
    ratio = out["osdec"]["total_reward"]["mean"] / out["fifo"]["total_reward"]["mean"]
    assert f"×{ratio:.3f} (×1.020)" in rows["OSDEC"]  # the paper's: 3475.37 / 3408.82
    rt = json.loads((tmp_path / "runs/tiny_rt/eval.json").read_text())["fifo"]["utilization"]["mean"]
    table2 = text.split("## Table 2")[1].split("## Table 4")[0]
    fifo2 = next(line for line in table2.splitlines() if line.startswith("| FIFO"))
    assert f"×{rt / out['fifo']['utilization']['mean']:.3f} (×0.955)" in fifo2  # 3449.22 / 3611.01
    assert np.isfinite(numbers["episode"]["osdec"]["total_reward"])
    assert (table / "episode.png").stat().st_size > 10_000
    never = tmp_path / "never.yaml"
    never.write_text(yaml.safe_dump(d | {"name": "never"}))
    with pytest.raises(FileNotFoundError, match="never.yaml: no .*never/eval.json; run `jaxsched train"):
        osdec_table([never], table)
