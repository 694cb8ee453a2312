"""OSDEC's learners: one PPO run per learner of `agent.learners`, declared for the shared training path
(`experiments.learner`).

    jaxsched train configs/osdec/quick.yaml        # every learner, in turn → out_dir/name/<learner>/
    train_learner(LEARNER, cfg, "osdec")           # one learner

A learner's run directory holds `config.yaml`, `metrics.jsonl` (one line per update, one value per seed:
PPO's losses, the approximate KL, the auxiliary tasks' errors and the env's episode metrics —
`total_reward`, `utilization`, `delay`, `violation` ...), `checkpoints/` (the vmapped PPO runner after each
chunk, so `--resume` continues bit-exactly) and `learning_curve.png`. Seeds are `vmap`ped in one program,
the same seeds for every learner (paired); programs are cached per (PPO config, env config, agent section,
learner).
"""

from __future__ import annotations

from jaxsched.agents.ppo import PPO
from jaxsched.experiments.learner import Learner
from jaxsched.experiments.train import algorithm_programs, episode_summary
from jaxsched.systems.osdec.config import OSDECConfig, build_osdec

CURVE_METRICS = ("total_reward", "utilization", "approx_kl")  # and `aux_loss` for a learner with the module
CURVE_LABELS = {"utilization": "utilisation (core·steps started, per episode)"}  # Σ c·d, not a fraction


def ppo_for(cfg: OSDECConfig, learner: str, env, env_params) -> PPO:
    """The PPO of `learner` (its injected network and its PPO overrides, `config.LEARNER_PPO`) on `env`."""
    return PPO(cfg.agent.ppo_config(cfg.ppo, learner), env, env_params, cfg.agent.network(learner))


def programs(cfg: OSDECConfig, learner: str, env):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis."""
    cache_key = ("osdec", cfg.ppo, env.config, cfg.agent, learner)
    return algorithm_programs(cache_key, lambda env_params: ppo_for(cfg, learner, env, env_params))


def curves(cfg: OSDECConfig, learner: str) -> tuple[str, ...]:
    return CURVE_METRICS + (("aux_loss",) if cfg.agent.net_config(learner).uses_aux else ())


LEARNER = Learner(
    programs=programs,
    names=lambda cfg: cfg.agent.learners,
    budget=lambda cfg, learner: cfg.ppo,
    build=build_osdec,
    summary=episode_summary("utilization", "utilization", "core-steps", fmt=",.1f"),
    curves=curves,
    labels=CURVE_LABELS,
    may_grow=("agent.learners",),  # a learner's training does not depend on the others listed
)
