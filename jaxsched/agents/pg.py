"""What PPO and MAPPO share: the schedule check, GAE, minibatch epochs, the clipped surrogate and value
loss, value normalisation and the per-update metrics.

Everything here is network- and env-agnostic: the algorithms (`agents.ppo`, `agents.mappo`) build their
losses from these pieces around an injected network, so a fix to the surrogate or to GAE lands in both.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from jaxsched.core.checks import at_least
from jaxsched.core.metrics import episode_mean


def check_schedule(cfg, prefix: str) -> None:
    """Validate the rollout/update schedule fields a PPO-family config shares (`num_envs`, `num_steps`,
    `total_updates`, `updates_per_chunk`, `update_epochs`, `num_minibatches`); errors name `prefix.field`."""
    at_least(cfg, prefix, ("num_envs", "num_steps", "total_updates", "updates_per_chunk", "update_epochs",
                           "num_minibatches"))  # fmt: skip
    if (cfg.num_envs * cfg.num_steps) % cfg.num_minibatches:
        raise ValueError(
            f"{prefix}.num_minibatches ({cfg.num_minibatches}) must divide num_envs × num_steps "
            f"({cfg.num_envs} × {cfg.num_steps})"
        )
    if cfg.total_updates % cfg.updates_per_chunk:
        raise ValueError(
            f"{prefix}.updates_per_chunk ({cfg.updates_per_chunk}) must divide total_updates "
            f"({cfg.total_updates})"
        )


def gae(traj, gamma, lam) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Advantages and returns `[T, B]`. δ_t = r_t + γ·V(s'_t) − V(s_t), with V(s'_t) the value of the
    state the step reached (0 if terminal, the pre-reset state's value if truncated); traces stop at
    episode ends. `traj` is any pytree with `reward`, `value`, `next_value`, `done` `[T, B]`; `gamma` a
    scalar or a per-step `[T, B]` discount."""
    gammas = jnp.broadcast_to(jnp.asarray(gamma, traj.reward.dtype), traj.reward.shape)

    def body(next_adv, x):
        t, g = x
        delta = t.reward + g * t.next_value - t.value
        adv = delta + g * lam * (1.0 - t.done) * next_adv
        return adv, adv

    _, adv = jax.lax.scan(body, jnp.zeros_like(traj.value[0]), (traj, gammas), reverse=True)
    return adv, adv + traj.value


def sgd_epochs(loss, opt, params, opt_state, batch, key, epochs: int, num_minibatches: int):
    """`epochs` passes of minibatch SGD over `batch` (a pytree of `[n, ...]` arrays, shuffled each epoch):
    `loss(params, minibatch) -> (total, aux)`. Returns `((params, opt_state), aux [epochs, minibatches])`."""
    n = jax.tree.leaves(batch)[0].shape[0]

    def epoch(carry, k):
        def minibatch(carry, idx):
            params, opt_state = carry
            grads, aux = jax.grad(loss, has_aux=True)(params, jax.tree.map(lambda x: x[idx], batch))
            updates, opt_state = opt.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), aux

        perm = jax.random.permutation(k, n).reshape(num_minibatches, n // num_minibatches)
        return jax.lax.scan(minibatch, carry, perm)

    return jax.lax.scan(epoch, (params, opt_state), jax.random.split(key, epochs))


def flatten_steps(tree, n: int):
    """`[T, B, ...] -> [T·B, ...]` for every leaf (a rollout as one batch of `n = T·B` samples)."""
    return jax.tree.map(lambda a: a.reshape((n,) + a.shape[2:]), tree)


# ---- the loss pieces ----------------------------------------------------------------------------------
def normalize_advantages(adv: jnp.ndarray, weight: jnp.ndarray | None = None) -> jnp.ndarray:
    """`(adv − mean) / (std + 1e-8)`, the moments over all samples or over those with `weight` 1 (MAPPO's
    decision calls; the others keep a finite value that their zero weight removes)."""
    if weight is None:
        return (adv - adv.mean()) / (adv.std() + 1e-8)
    n = jnp.maximum(weight.sum(), 1.0)
    mean = (adv * weight).sum() / n
    std = jnp.sqrt((((adv - mean) * weight) ** 2).sum() / n) + 1e-8
    return (adv - mean) / std


def clipped_surrogate(ratio: jnp.ndarray, adv: jnp.ndarray, clip_eps) -> jnp.ndarray:
    """PPO's per-sample objective `min(r·A, clip(r, 1 ± ε)·A)` (to be maximised), elementwise."""
    return jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)


def clipped_value_loss(value, old_value, targets, clip_eps) -> jnp.ndarray:
    """PPO's clipped value loss `½·mean(max((V − R)², (V_old + clip(V − V_old, ±ε) − R)²))`."""
    v_clipped = old_value + jnp.clip(value - old_value, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum((value - targets) ** 2, (v_clipped - targets) ** 2).mean()


def ratio_metrics(ratio: jnp.ndarray, clip_eps) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Per-sample `(approx_kl, clipped)`: the `(r − 1) − log r` KL estimate and whether r left 1 ± ε."""
    return (ratio - 1) - jnp.log(ratio), (jnp.abs(ratio - 1) > clip_eps).astype(jnp.float32)


# ---- value normalisation (MAPPO's ValueNorm, Yu et al. 2022) --------------------------------------------
VALUE_NORM_BETA = 0.99  # per update: the statistics follow the returns as the policy improves


def value_moments(stats: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`(mean, std)` of the value normaliser `stats` (`f32[3]`); `(0, 1)` before its first update."""
    seen = stats[0] > 0
    w = jnp.where(seen, stats[0], 1.0)
    mean = stats[1] / w
    std = jnp.sqrt(jnp.maximum(stats[2] / w - mean**2, 1e-4))
    return jnp.where(seen, mean, 0.0), jnp.where(seen, std, 1.0)


def update_value_stats(stats: jnp.ndarray, targets: jnp.ndarray) -> jnp.ndarray:
    """Fold one batch of return targets into the debiased EMA `stats` (`f32[3]`: debias weight, EMA of
    the targets, EMA of their squares)."""
    batch = jnp.stack([jnp.float32(1.0), targets.mean(), jnp.square(targets).mean()])
    return VALUE_NORM_BETA * stats + (1 - VALUE_NORM_BETA) * batch


# ---- per-update metrics ---------------------------------------------------------------------------------
def update_metrics(aux: dict, log: dict, reward: jnp.ndarray, update: jnp.ndarray) -> dict:
    """One update's metrics: the loss terms `aux` (`[epochs, minibatches]`) averaged; the number of
    episodes that ended in the rollout and the means over them of their return, length (when logged) and
    env metrics (`log` from `core.wrappers.LogWrapper`; NaN when none ended: `core.metrics.episode_mean`);
    the mean reward per step; the update count."""
    done = log["returned_episode"]
    metrics = {k: v.mean() for k, v in aux.items()}
    metrics["episodes"] = done.sum()
    metrics["episode_return"] = episode_mean(log["episode_return"], done)
    if "episode_length" in log:
        metrics["episode_length"] = episode_mean(log["episode_length"].astype(jnp.float32), done)
    for k, v in log["episode_metrics"].items():
        metrics[k] = episode_mean(v.astype(jnp.float32), done)
    metrics["reward_per_step"] = reward.mean()
    metrics["update"] = update
    return metrics


def episode_log(info: dict, with_length: bool = False) -> dict:
    """What a rollout step keeps of the `LogWrapper`'s `info` for `update_metrics`."""
    log = {
        "returned_episode": info["returned_episode"],
        "episode_return": info["returned_episode_returns"],
        "episode_metrics": info["returned_episode_metrics"],
    }
    if with_length:
        log["episode_length"] = info["returned_episode_lengths"]
    return log
