"""Imitation warm start before MAPPO: DL²'s offline supervised stage (§2, §5.1.5), for any agent that
names teachers.

DL² first fits its policy to an existing scheduler and then improves it with RL. Here a MAPPO agent can
do the same (`MAPPOConfig.imitation_updates > 0`): roll out a teacher and regress the actors onto the
teacher's action, and the critic onto the teacher's λ-returns. MAPPO then starts from a policy whose
greedy action is the teacher's, with a critic that already knows its values, instead of from a random
policy whose first advantages are noise.

What the teacher and the fit are is the agent's (`agents.das.DASAgent`: heuristics as rank targets, the
Gaussians' means and σ):

    agent.teacher(name) -> label(obs) -> action
    agent.imitation_error(params, obs, carry, label, log_std_target) -> (fit, mean_err)   # one call

and, for an actor whose carry is a history (MAPPO's `sequence_carry`: whole-env minibatches),

    agent.imitation_error_sequence(params, obs, carry, action, start, label, log_std_target)  # [T] calls
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.agents.mappo import gae
from jaxsched.agents.pg import flatten_steps, sgd_epochs, update_value_stats


def imitation_loss(mappo, params, value_stats, batch, value_targets):
    """The agent's `imitation_error` (the fit of its actors to the teacher's label, computed here on each
    observation, so it holds whether the teacher or the learner acted) averaged over the decision calls,
    plus the critic's clipped error to the λ-returns of whoever acted (weighted by `vf_coef`). `batch`
    is a `MAPPOTransition` minibatch of calls `[B]`."""
    cfg = mappo.config
    log_std_target = jnp.log(cfg.imitation_std)
    teacher = mappo.agent.teacher(cfg.imitation_teacher)

    def one(obs, carry):
        return mappo.agent.imitation_error(params["actor"], obs, carry, teacher(obs), log_std_target)

    per_call, mean_err = jax.vmap(one)(batch.obs, batch.carry)
    return _imitation_terms(mappo, params, value_stats, batch, value_targets, per_call, mean_err)


def imitation_loss_by_env(mappo, params, value_stats, batch, value_targets, start):
    """`imitation_loss` of a minibatch of whole envs (`[E, T]`, `start` the carries before the rollout
    `[E]`), through the agent's `imitation_error_sequence` (an actor whose carry is a history: MAPPO's
    `sequence_carry`), which encodes each observation once."""
    cfg = mappo.config
    teacher = jax.vmap(jax.vmap(mappo.agent.teacher(cfg.imitation_teacher)))
    error = jax.vmap(mappo.agent.imitation_error_sequence, in_axes=(None, 0, 0, 0, 0, 0, None))
    per_call, mean_err = error(
        params["actor"], batch.obs, batch.carry, batch.action, start, teacher(batch.obs),
        jnp.log(cfg.imitation_std),
    )  # fmt: skip
    n = value_targets.size
    flat = lambda x: x.reshape((n,) + x.shape[2:])  # noqa: E731
    batch, value_targets, per_call, mean_err = jax.tree.map(flat, (batch, value_targets, per_call, mean_err))
    return _imitation_terms(mappo, params, value_stats, batch, value_targets, per_call, mean_err)


def _imitation_terms(mappo, params, value_stats, batch, value_targets, per_call, mean_err):
    """The loss and its metrics from each call's `(fit f32[B], mean_err f32[B])`."""
    cfg = mappo.config
    d = batch.decision.astype(jnp.float32)
    n = jnp.maximum(d.sum(), 1.0)
    actor = (per_call * d).sum() / n
    critic = mappo.critic_loss(params["critic"], value_stats, batch, value_targets)
    return actor + cfg.vf_coef * critic, {
        "imitation_loss": actor,
        "imitation_mean_mse": (mean_err * d).sum() / n,
        "critic_loss": critic,
    }


def pretrain(mappo, runner):
    """`imitation_updates` rounds of (rollout of `num_envs × num_steps` calls, `update_epochs` ×
    `num_minibatches` Adam steps at `imitation_lr`) from `runner`. The teacher acts in the rollouts of the
    first rounds; in the last `imitation_dagger` fraction the learner acts (sampling its own Gaussians)
    and the teacher only labels what it visits (DAgger, Ross et al. 2011): DAS's RWGP conditions on its
    own past affinities, so a policy fitted only on the teacher's histories drifts when it acts alone.
    Returns the runner with the fitted parameters copied into the rollout target (MAPPO's own optimiser
    state untouched) and the metrics `[imitation_updates]`. Pure and jittable; `vmap` it over seeds with
    `init`."""
    cfg = mappo.config
    label = mappo.agent.teacher(cfg.imitation_teacher)
    no_log_prob = jnp.zeros((len(mappo.agent.learns),), jnp.float32)
    teacher_updates = cfg.imitation_updates - round(cfg.imitation_dagger * cfg.imitation_updates)

    def acting(learner):
        # `learner` is the same for every env and seed (the update index), so the cond stays a branch
        # under vmap: the teacher's rounds skip the policy's forward pass.
        def act(actor_params, obs, carry, key):
            return jax.lax.cond(
                learner, lambda: mappo.act(actor_params, obs, carry, key), lambda: (label(obs), no_log_prob)
            )

        return act

    opt = mappo.optimizer(cfg.imitation_lr)

    def step(carry, u):
        runner, opt_state = carry
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll, k_perm = jax.random.split(key, 3)
        # The critic's values in the rollout come from the target; keep it equal to the trained one.
        runner = runner.replace(target=runner.params)
        start = runner.carry
        runner, traj, _ = mappo.rollout(runner, k_roll, act=acting(u >= teacher_updates))
        _, targets = gae(traj, cfg.gamma, cfg.gae_lambda)
        value_stats = update_value_stats(runner.value_stats, targets)
        if mappo.by_env:  # whole envs with their start carries, as MAPPO's update takes them
            env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
            batch = (*jax.tree.map(env_major, (traj, targets)), start)
            loss = lambda p, b: imitation_loss_by_env(mappo, p, value_stats, *b)  # noqa: E731
        else:
            batch = flatten_steps((traj, targets), cfg.num_envs * cfg.num_steps)
            loss = lambda p, b: imitation_loss(mappo, p, value_stats, *b)  # noqa: E731
        (params, opt_state), aux = sgd_epochs(
            loss, opt, runner.params, opt_state, batch, k_perm, cfg.update_epochs, cfg.num_minibatches
        )
        runner = runner.replace(params=params, value_stats=value_stats, key=jax.random.key_data(key))
        return (runner, opt_state), {k: v.mean() for k, v in aux.items()}

    (runner, _), metrics = jax.lax.scan(
        step, (runner, opt.init(runner.params)), jnp.arange(cfg.imitation_updates)
    )
    return runner.replace(target=runner.params), metrics
