"""The idle-slot DAG system's learners: one policy-gradient run per variant of `agent.variants`, declared
for the shared training path (`experiments.learner`).

    jaxsched train configs/dag/quick.yaml          # every variant, in turn → out_dir/name/<variant>/
    train_learner(LEARNER, cfg, "full")            # one learner

A variant's run directory holds `config.yaml`, `metrics.jsonl` (one line per update, one value per seed:
the REINFORCE losses, the rollout `return` and, over the rollouts that ended in the update, the env's
episode metrics — `avg_jct`, `makespan`, `idle_per_selection` ... — and `episode_return`),
`checkpoints/` (the vmapped `ReinforceRunner` after each chunk: network, Adam state, key and update count,
so `--resume` continues bit-exactly) and `learning_curve.png`. Seeds are `vmap`ped in one program; the
seeds are the same for every variant (paired). Programs are cached per (REINFORCE config, env config,
agent section, variant), so a second run of the same shapes, a resume included, does not compile again.
"""

from __future__ import annotations

from jaxsched.agents.reinforce import Reinforce
from jaxsched.experiments.learner import Learner
from jaxsched.experiments.train import episode_summary, seed_programs
from jaxsched.systems.dag.config import DAGSystemConfig, build_dag

CURVE_METRICS = ("avg_jct", "episode_return", "idle_per_selection", "entropy")


def reinforce_for(cfg: DAGSystemConfig, variant: str, env) -> Reinforce:
    """The policy-gradient learner of `variant` (its injected network) on `env`."""
    return Reinforce(cfg.reinforce, env, cfg.agent.network(variant, env.config))


def programs(cfg: DAGSystemConfig, variant: str, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis."""
    alg = reinforce_for(cfg, variant, env)
    cache_key = ("dag", cfg.reinforce, env.config, cfg.agent.hidden, cfg.agent.levels, variant)
    return seed_programs(cache_key, alg.init, alg.train_chunk, map_init=False)


LEARNER = Learner(
    programs=programs,
    names=lambda cfg: cfg.agent.variants,
    budget=lambda cfg, variant: cfg.reinforce,
    build=build_dag,
    summary=episode_summary("avg_jct", "avg JCT", "s", fmt=",.1f"),
    curves=lambda cfg, variant: CURVE_METRICS,
    may_grow=("agent.variants",),  # a variant's training does not depend on the others listed
)
