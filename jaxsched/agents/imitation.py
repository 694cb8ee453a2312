"""Imitation warm start for the DAS family of agents: DL²'s offline supervised stage (§2, §5.1.5).

DL² first fits its policy to an existing scheduler and then improves it with RL. Here every learned agent
can do the same before MAPPO (`MAPPOConfig.imitation_updates > 0`): roll out a heuristic teacher (e.g.
FIFO-FirstFit) and regress the actors' Gaussian means onto the teacher's action, written as *rank
targets* (below), and their σ onto a small exploration spread; the critic fits the teacher's λ-returns.
MAPPO then starts from a policy whose greedy action is the teacher's, with a critic that already knows
its values, instead of from a random policy whose first advantages are noise.

Rank targets: the env only uses the order of the priorities and, per job, of the affinities
(`GPUCloudEnv` ranks them), so a teacher's scores are replaced by evenly spaced values in (−1, 1) in the
same order — `1 − 2 (r + ½) / K` for the r-th highest of K valid entries — which the tanh heads can reach
and which act exactly like the teacher (`test_rank_targets_act_like_the_teacher`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsched.agents.mappo import gae, update_value_stats
from jaxsched.agents.ppo import sgd_epochs
from jaxsched.core.placement import descending_rank
from jaxsched.core.wrappers import masked_mean
from jaxsched.envs.gpu_cloud import GPUCloudAction, GPUCloudObs
from jaxsched.policies.gpu_cloud import make_heuristic


def rank_targets(scores: jax.Array, mask: jax.Array) -> jax.Array:
    """`f32[..., K]`: the valid entries' scores replaced by `1 − 2 (r + ½) / K_valid` (r = descending
    rank, ties to the lower index as in the env); padded entries are 0. `mask: bool[..., K]`."""
    rank = descending_rank(jnp.where(mask, scores, -jnp.inf))
    k = jnp.maximum(mask.sum(axis=-1, keepdims=True), 1)
    return jnp.where(mask, 1.0 - 2.0 * (rank + 0.5) / k, 0.0)


def teacher_action(teacher: str):
    """`act(obs) -> GPUCloudAction`: the heuristic `teacher`'s action as rank targets (one env)."""
    policy = make_heuristic(teacher)

    def act(obs: GPUCloudObs) -> GPUCloudAction:
        a = policy(None, obs, None)
        every_machine = jnp.ones(a.affinity.shape, bool)
        return GPUCloudAction(
            priority=rank_targets(a.priority, obs.job_mask), affinity=rank_targets(a.affinity, every_machine)
        )

    return act


def imitation_loss(mappo, params, value_stats, batch, value_targets):
    """Mean squared error of the learned (greedy) means to the teacher's rank targets, plus
    `(log σ − log imitation_std)²` for every learned Gaussian, plus the critic's squared error to the
    λ-returns of whoever acted (weighted by `vf_coef`). `batch` is a `MAPPOTransition` minibatch; the
    labels are the teacher's action on each observation (computed here, so they hold whether the
    teacher or the learner acted); non-decision calls carry no actor term."""
    cfg = mappo.config
    agent = cfg.agent
    log_std_target = jnp.log(cfg.imitation_std)
    teacher = teacher_action(cfg.imitation_teacher)

    def one(obs, history):
        label = teacher(obs)  # the teacher's action on this observation, whoever acted
        priority, affinity = label.priority, label.affinity
        pol = mappo.distribution(params["actor"], obs, history)
        mean_err, std_err = jnp.float32(0.0), jnp.float32(0.0)
        if agent.learns_ordering:
            mask = obs.job_mask
            mean_err += masked_mean(jnp.square(pol.prio_mu - priority), mask)
            std_err += masked_mean(jnp.square(jnp.log(pol.prio_std) - log_std_target), mask)
        if agent.learns_placement:
            rows = pol.place_mask
            every = jnp.broadcast_to(rows[:, None], affinity.shape)
            aff_mu = pol.aff_mu
            if agent.placement == "rwgp":
                # The greedy RWGP's history holds its own means, so its posterior mean is its prior mean
                # (tests/test_imitation.py::test_greedy_rwgp_posterior_mean_is_its_prior_mean): fit the
                # prior, the mean with the history cleared. The σ stays the posterior's (with no history
                # it is the kernel's constant 1), hence the second pass.
                aff_mu = mappo.distribution(params["actor"], obs, history.clear()).aff_mu
            mean_err += masked_mean(jnp.square(aff_mu - affinity), every)
            std_err += masked_mean(jnp.square(jnp.log(pol.aff_std) - log_std_target), rows)
        return mean_err + std_err, mean_err

    per_call, mean_err = jax.vmap(one)(batch.obs, batch.history)
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
    and the teacher only labels what it visits (DAgger, Ross et al. 2011): the RWGP conditions on its own
    past affinities, so a policy fitted only on the teacher's histories drifts when it acts alone.
    Returns the runner with the fitted parameters copied into the rollout target (MAPPO's own optimiser
    state untouched) and the metrics `[imitation_updates]`. Pure and jittable; `vmap` it over seeds with
    `init`."""
    cfg = mappo.config
    act_teacher = teacher_action(cfg.imitation_teacher)
    teacher_updates = cfg.imitation_updates - round(cfg.imitation_dagger * cfg.imitation_updates)

    def acting(learner):
        # `learner` is the same for every env and seed (the update index), so the cond stays a branch
        # under vmap: the teacher's rounds skip the policy's forward pass.
        def act(actor_params, obs, history, key):
            return jax.lax.cond(
                learner,
                lambda: mappo.act(actor_params, obs, history, key),
                lambda: (act_teacher(obs), jnp.zeros((2,), jnp.float32)),
            )

        return act

    opt = mappo.optimizer(cfg.imitation_lr)

    def step(carry, u):
        runner, opt_state = carry
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll, k_perm = jax.random.split(key, 3)
        # The critic's values in the rollout come from the target; keep it equal to the trained one.
        runner = runner.replace(target=runner.params)
        runner, traj, _ = mappo.rollout(runner, k_roll, act=acting(u >= teacher_updates))
        _, targets = gae(traj, cfg.gamma, cfg.gae_lambda)
        value_stats = update_value_stats(runner.value_stats, targets)
        n = cfg.num_envs * cfg.num_steps
        flat = jax.tree.map(lambda a: a.reshape((n,) + a.shape[2:]), (traj, targets))
        loss = lambda p, b: imitation_loss(mappo, p, value_stats, *b)  # noqa: E731
        (params, opt_state), aux = sgd_epochs(
            loss, opt, runner.params, opt_state, flat, k_perm, cfg.update_epochs, cfg.num_minibatches
        )
        runner = runner.replace(params=params, value_stats=value_stats, key=jax.random.key_data(key))
        return (runner, opt_state), {k: v.mean() for k, v in aux.items()}

    (runner, _), metrics = jax.lax.scan(
        step, (runner, opt.init(runner.params)), jnp.arange(cfg.imitation_updates)
    )
    return runner.replace(target=runner.params), metrics
