"""Why a DAS learner does or does not move: what one rollout of its current policy says (issue: the learned
rows stay at their initialisation).

    stats = jax.jit(jax.vmap(lambda r, k: rollout_diagnostics(mappo, r, k)))(runner, keys)   # per seed

Over the decision calls of one `MAPPO.rollout` (the acting, target actor; nothing is trained):
- `adv_abs`, `adv_std`: the mean |GAE advantage| and its std before the per-batch normalisation — the
  signal PPO scales to unit size; `return_std`: the std of the value targets;
- `explained_var`: 1 − Var(target − value) / Var(target) of the critic;
- `prio_std`, `aff_std`: the ordering agent's and the placement agent's mean σ (visible jobs; placement
  groups) — 0 for a fixed (heuristic) half;
- `order_differs`: the share of calls whose sampled priorities put the visible jobs in another order than
  the greedy means; `place_differs`: the share where some visible job's highest-affinity machine differs.
  A policy whose samples never change the order or the placement gives PPO nothing to compare.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.agents.mappo import gae

DIAGNOSTICS = ("adv_abs", "adv_std", "return_std", "explained_var", "prio_std", "aff_std", "order_differs",
               "place_differs")  # fmt: skip


def _order(priority: jax.Array, mask: jax.Array) -> jax.Array:
    """`i32[N]`: the visible jobs by descending priority, the hidden ones last (in slot order)."""
    return jnp.argsort(jnp.where(mask, -priority, jnp.inf), stable=True)


def call_differences(pol, obs, action) -> tuple[jax.Array, jax.Array]:
    """`(order differs, placement differs)` of one call: the sampled `action` against the means of `pol`
    (a `DASPolicy`) over the visible jobs `obs.job_mask`."""
    mask = obs.job_mask
    visible = jnp.arange(mask.shape[0]) < mask.sum()
    order = jnp.any((_order(action.priority, mask) != _order(pol.prio_mu, mask)) & visible)
    place = jnp.any((jnp.argmax(action.affinity, -1) != jnp.argmax(pol.aff_mu, -1)) & mask)
    return order, place


def rollout_diagnostics(mappo, runner, key: jax.Array) -> dict[str, jax.Array]:
    """The module docstring's statistics of one seed's `runner` (a `MAPPORunner`) over one rollout."""
    cfg, agent = mappo.config, mappo.agent
    _, traj, _ = mappo.rollout(runner, key)
    adv, targets = gae(traj, cfg.gamma, cfg.gae_lambda)
    d = traj.decision.astype(jnp.float32)  # [T, E]
    n = jnp.maximum(d.sum(), 1.0)

    def mean(x):
        return (x * d).sum() / n

    def var(x):
        return mean((x - mean(x)) ** 2)

    dist = jax.vmap(jax.vmap(agent.distribution, (None, 0, 0)), (None, 0, 0))
    pol = dist(runner.target["actor"], traj.obs, traj.carry)  # DASPolicy [T, E, ...]
    diff = jax.vmap(jax.vmap(call_differences))(pol, traj.obs, traj.action)
    mask = traj.obs.job_mask.astype(jnp.float32)  # [T, E, N]
    prio_std = (pol.prio_std * mask).sum(-1) / jnp.maximum(mask.sum(-1), 1.0)
    place = pol.place_mask.astype(jnp.float32)
    aff_std = (pol.aff_std * place).sum(-1) / jnp.maximum(place.sum(-1), 1.0)
    return {
        "adv_abs": mean(jnp.abs(adv)),
        "adv_std": jnp.sqrt(var(adv)),
        "return_std": jnp.sqrt(var(targets)),
        "explained_var": 1.0 - var(targets - traj.value) / jnp.maximum(var(targets), 1e-12),
        "prio_std": mean(prio_std),
        "aff_std": mean(aff_std),
        "order_differs": mean(diff[0].astype(jnp.float32)),
        "place_differs": mean(diff[1].astype(jnp.float32)),
    }
