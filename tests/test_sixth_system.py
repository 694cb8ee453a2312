"""A sixth system, added as docs/architecture.md says, touches no shared file: a toy system defined here (a
tiny env, one heuristic table, one learner on the project's PPO, a config, an evaluation declared
for the shared layer) is registered with one call and runs `jaxsched train`, `eval` and `report` through
the CLI.

The toy env: each step shows the durations of N candidate jobs (`f32[N]`); the agent runs one and pays
its duration; an episode is T steps of one bank row. `shortest` is optimal, `first` is not, so the trained
PPO must end between them or at `shortest` — the evaluation's paired test says which.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

import jax
import jax.numpy as jnp
import pytest
from flax import struct

from jaxsched import systems as registry
from jaxsched.agents.ppo import PPO, PPOConfig
from jaxsched.cli import main
from jaxsched.core.env import Environment
from jaxsched.core.spaces import Box, Discrete
from jaxsched.experiments.config import ExperimentConfig, SampledEval
from jaxsched.experiments.evaluate import Evaluation, evaluate
from jaxsched.experiments.learner import Learner, run_dir_of, train_all
from jaxsched.experiments.system import Metric, System
from jaxsched.experiments.train import EVAL_FILE, algorithm_programs, episode_summary
from jaxsched.policies import make_heuristic, register_heuristics

N, T, TEST_EPISODES = 4, 8, 6


@struct.dataclass
class ToyObs:
    vec: jax.Array  # f32[N]: the candidates' durations
    mask: jax.Array  # bool[N]: every candidate may run


@struct.dataclass
class ToyState:
    t: jax.Array  # i32: steps taken
    row: jax.Array  # i32: the bank row being played
    cost: jax.Array  # f32: durations paid so far


@struct.dataclass
class ToyParams:
    durations: jax.Array  # f32[R, T, N]: the bank
    rows: jax.Array  # i32[K]: the rows `reset` draws from


class ToyEnv(Environment[ToyState, ToyParams]):
    name = "toy"
    config = ("toy", N, T)  # the static config: hashable

    def episode(self, params, i):
        return params.replace(rows=params.rows[i][None])

    def _obs(self, state, params):
        return ToyObs(params.durations[state.row, jnp.minimum(state.t, T - 1)], jnp.ones((N,), bool))

    def reset_env(self, key, params):
        state = ToyState(jnp.int32(0), jax.random.choice(key, params.rows), jnp.float32(0.0))
        return self._obs(state, params), state

    def step_env(self, key, state, action, params):
        paid = params.durations[state.row, state.t, action]
        state = state.replace(t=state.t + 1, cost=state.cost + paid)
        return self._obs(state, params), state, -paid, state.t >= T, jnp.bool_(False), {}

    def action_mask(self, state, params):
        return jnp.ones((N,), bool)

    def observation_space(self, params):
        return ToyObs(vec=Box(0.0, 10.0, (N,)), mask=Box(0, 1, (N,), jnp.bool_))  # a space per field

    def action_space(self, params):
        return Discrete(N)

    def metrics(self, state, params):
        return {"avg_cost": state.cost / jnp.maximum(state.t, 1)}


HEURISTICS = {
    "shortest": lambda params, obs, key: jnp.argmin(obs.vec),
    "first": lambda params, obs, key: jnp.int32(0),
}


def bank(seed: int, rows: int) -> ToyParams:
    durations = jax.random.uniform(jax.random.key(seed), (rows, T, N), jnp.float32, 1.0, 10.0)
    return ToyParams(durations, jnp.arange(rows, dtype=jnp.int32))


@dataclass(frozen=True)
class ToyEval(SampledEval):
    BASELINES: ClassVar[tuple[str, ...]] = tuple(HEURISTICS)

    baselines: tuple[str, ...] = tuple(HEURISTICS)


def toy_ppo() -> PPOConfig:
    return PPOConfig(num_envs=16, num_steps=8, total_updates=60, updates_per_chunk=20, num_minibatches=2,
                     hidden=(32,), lr=3e-3, ent_coef=0.0)  # fmt: skip


@dataclass(frozen=True)
class ToyConfig(ExperimentConfig):
    KIND: ClassVar[str] = "toy"

    ppo: PPOConfig = field(default_factory=toy_ppo)
    eval: ToyEval = field(default_factory=ToyEval)


def build(cfg: ToyConfig):
    """`(env, train_params, test_params)`: disjoint banks (other seeds)."""
    return ToyEnv(), bank(cfg.seed, 64), bank(cfg.seed + 1000, TEST_EPISODES)


def programs(cfg: ToyConfig, name: str, env):
    return algorithm_programs(("toy", cfg.ppo), lambda env_params: PPO(cfg.ppo, env, env_params))


LEARNER = Learner(
    programs=programs,
    names=lambda cfg: ("ppo",),
    budget=lambda cfg, name: cfg.ppo,
    build=build,
    summary=episode_summary("avg_cost", "avg cost", ""),
    curves=lambda cfg, name: ("avg_cost", "episode_return"),
)


EVALUATION = Evaluation(
    learner=LEARNER,
    labels={"ppo": "ppo"},
    listed_in="names",
    n_test=lambda cfg, test_params: TEST_EPISODES,
    baselines=lambda cfg, env: [(env, {b: make_heuristic(env, b) for b in cfg.eval.baselines}, ())],
    policy=lambda cfg, name, env: (("toy", cfg.ppo), PPO(cfg.ppo, env, None).policy(greedy=True)),
    policy_params=lambda runner: (runner.params, runner.obs_stats),
    metrics=(Metric("avg_cost", "avg cost", ".3f"),),
    title=lambda cfg, trained, episodes: f"{cfg.name} ({trained}): {episodes} held-out rows",
    paired=("avg_cost",),
    best_metric="avg_cost",
    headline="ppo",
)


TOY = System(
    kind="toy",
    title="a toy system: pick the shortest of N jobs",
    paper="(none)",
    config=ToyConfig,
    baselines=tuple(HEURISTICS),
    metrics=(Metric("avg_cost", "avg cost", ".3f"),),
    train=partial(train_all, LEARNER),
    evaluate=partial(evaluate, EVALUATION),
    build=lambda cfg: build(cfg)[:2],
    run_dirs=lambda cfg: {"ppo": run_dir_of(cfg, "ppo")},
)


@pytest.fixture
def toy_system():
    register_heuristics(ToyEnv, lambda env: tuple(HEURISTICS), lambda env, name, **opts: HEURISTICS[name])
    registry.register(TOY)
    yield TOY
    registry.unregister("toy")


def test_a_sixth_system_trains_evaluates_and_reports_through_the_cli(toy_system, tmp_path, capsys):
    cfg_path = tmp_path / "toy.yaml"
    cfg_path.write_text(f"kind: toy\nname: toy_quick\nnum_seeds: 2\nout_dir: {tmp_path / 'runs'}\n")
    assert main(["train", str(cfg_path)]) == 0
    run_dir = tmp_path / "runs" / "toy_quick"
    metrics = [json.loads(line) for line in (run_dir / "ppo" / "metrics.jsonl").read_text().splitlines()]
    assert [m["update"] for m in metrics] == list(range(1, 61)) and len(metrics[0]["avg_cost"]) == 2

    assert main(["eval", str(cfg_path), "--checkpoint", str(run_dir)]) == 0
    res = json.loads((run_dir / EVAL_FILE).read_text())
    shortest, first, ppo = (res[p]["avg_cost"]["mean"] for p in ("shortest", "first", "ppo"))
    assert shortest < first  # the env and its heuristics are what they say
    assert ppo < first  # trained: better than the poor heuristic, paired against the best one
    assert res["ppo"]["avg_cost"]["vs_best"]["against"] == "shortest"
    assert len(res["ppo"]["avg_cost"]["per_episode"]) == TEST_EPISODES  # one pair per held-out row
    assert 1 <= res["ppo"]["avg_cost"]["vs_best"]["n"] <= TEST_EPISODES  # (tied rows carry no rank)

    assert main(["report", str(cfg_path)]) == 0
    out = capsys.readouterr().out
    assert "toy_quick" in out and "ppo" in out


def test_a_registered_kind_must_be_new(toy_system):
    with pytest.raises(ValueError, match="kind 'toy' exists already"):
        registry.register(toy_system)
    with pytest.raises(ValueError, match="kind 'dbf' exists already"):
        registry.register(System(**{**toy_system.__dict__, "kind": "dbf"}))
