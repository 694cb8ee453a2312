"""SchedInspector's accept/skip actor (Zhang, Dai, Xie, HPDC '22; the Deep Back-Filling paper's §IV-B4
baseline) as a network PPO takes by injection, over the HPC env's own actions.

A base heuristic (`policies.hpc.make_priority_policy`, e.g. SJF with EASY back-filling) proposes an action;
the inspector either accepts it or skips, and a skip is the env's Fwd (time moves to the next arrival or
completion). So the policy is a categorical over the env's M + 1 actions with mass on two of them: the
base's choice (logit 0) and Fwd (logit = the actor's skip score); when the base itself forwards there is
nothing to inspect and Fwd has probability 1. PPO, its masks and its log-ratios stay the generic ones.

The actor reads SchedInspector's features of the proposed job (its build_observation), from what the HPC
observation shows:
  * the proposed slot's five `vec` features (present, cores/N, requested time/runtime_norm, wait/wait_norm,
    can run now): the job's wait, run time and size, and "can schedule now";
  * the share of free cores (the original's free nodes / nodes);
  * the queue's bounded-slowdown pressure, Σ over the window of 600 / max(requested time, 10) (the
    original's Δbsld of one 600 s skip, over its whole queue) / (60·M), clipped at 1.
Not kept: the job's accumulated skip time (the env does not track skips per job). The critic is an MLP
on the whole observation vector, like DBF's (the original's critic reads its 128-job sequence instead).

What else differs from the original: a skip is the env's Fwd, to the next arrival or completion, where
the original also stops after 600 s; the objective is the env's `reward: bsld` (the waiting part of the
bounded slowdown, paid as jobs wait; `envs.hpc.HPCConfig`) rather than the episode's bounded slowdown as a
ratio to the base heuristic's on the same jobs; episodes are the DBF env's (1,000 placed jobs, arrivals
continuing), the paper's "online" test, not 128-job batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsched.nn.mlp import MASKED_LOGIT, MLP

SKIP_S = 600.0  # the original's skip unit (its SKIP_TIME), for the pressure feature
N_FEATURES = 7


def inspector_features(obs, proposed: jax.Array) -> jax.Array:
    """`f32[7]`: the features of one observation (`envs.hpc.HPCObs`) and the base's `proposed` action
    (a slot in 0..M−1, or Fwd = M)."""
    n, m = obs.sigma.shape[-1], obs.cores.shape[-1]
    slot = jnp.clip(proposed, 0, m - 1)
    job = jax.lax.dynamic_slice(obs.vec, (n + 5 * slot,), (5,))
    free = jnp.mean(obs.sigma == 0)
    present = obs.cores > 0
    pressure = jnp.sum(jnp.where(present, SKIP_S / jnp.maximum(obs.req_time, 10), 0.0)) / (60.0 * m)
    return jnp.concatenate([job, jnp.stack([free, jnp.minimum(pressure, 1.0)])]).astype(jnp.float32)


class _InspectorModule(nn.Module):
    hidden: Sequence[int]
    act: str

    def setup(self):
        self.actor = MLP(self.hidden, 1, self.act, 0.01)  # small init: P(skip) starts at ≈ 1/2
        self.critic = MLP(self.hidden, 1, self.act, 1.0)

    def __call__(self, features, vec):
        return jnp.squeeze(self.actor(features), -1), jnp.squeeze(self.critic(vec), -1)

    def value(self, vec):
        return jnp.squeeze(self.critic(vec), -1)


class InspectorActorCritic:
    """The PPO network (`agents.ppo` interface): `apply(params, obs [B]) -> (logits [B, M+1], value [B])`
    with the logits of the module docstring (one observation without the batch axis gives `[M+1]`, `[]`).
    `base(params, obs, key) -> action` is the inspected heuristic, one observation at a time
    (deterministic: it gets no key)."""

    def __init__(self, base: Callable, n_actions: int, hidden: Sequence[int] = (64, 64), act: str = "tanh"):
        self.base = base
        self.fwd = n_actions - 1
        self.module = _InspectorModule(tuple(hidden), act)

    def init(self, key, obs):
        return self.module.init(
            key, jnp.zeros((N_FEATURES,), jnp.float32), jnp.zeros_like(obs.vec, jnp.float32)
        )

    def proposals(self, obs) -> jax.Array:
        """`i32[B]`: the base heuristic's action for each observation of the batch."""
        return jax.vmap(lambda o: self.base(None, o, None))(obs)

    def apply(self, params, obs):
        if obs.t.ndim == 0:  # one observation (PPO's evaluation policy)
            logits, value = self.apply(params, jax.tree.map(lambda a: a[None], obs))
            return logits[0], value[0]
        proposed = self.proposals(obs)
        skip, value = self.module.apply(params, jax.vmap(inspector_features)(obs, proposed), obs.vec)
        rows = jnp.arange(proposed.shape[0])
        logits = jnp.full((proposed.shape[0], self.fwd + 1), MASKED_LOGIT, jnp.float32)
        # When the base itself forwards, Fwd is the only action left (probability 1, log-prob 0).
        logits = logits.at[rows, self.fwd].set(skip).at[rows, proposed].set(0.0)
        return logits, value

    def value(self, params, obs):
        return self.module.apply(params, obs.vec, method=_InspectorModule.value)
