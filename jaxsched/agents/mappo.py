"""MAPPO for the Dual-Agent Scheduler (Xing et al., KDD'23, §4.3, App. C–D), PureJaxRL-style.

Two actors — the ordering agent (Gaussian priorities) and the placement agent (Gaussian affinities, RWGP
or MLP) — share one `DASActor` parameter tree; a centralized critic `V(global state)` has its own. Each
update: a rollout of `num_steps` calls × `num_envs` envs (`lax.scan` of the vmapped env) with the
*target* actor (θ_old), GAE, then `update_epochs` passes over shuffled minibatches of the loss: one clipped
surrogate per agent (each with its own ratio, as in MAPPO), entropy, and value loss; the target actor
and critic are copied from the trained ones every `target_interval` updates (the paper's copy interval
z = 2). Seeds `vmap` over `init`/`train_chunk`.

The RWGP history (last τ decisions: observations and sampled affinities) is carried per env through the
rollout, stored with every transition and fed again in the update, so the GP is recomputed with the
current parameters; it is cleared at episode ends.

Non-decision calls (an env with `max_forward_events` continuing a forward, `obs.decision` False) are
continuations: their actions are ignored by the env, they add no policy or entropy term, the history is
not pushed, and GAE does not discount across them (γ = 1), so returns are those of the decision process.

The critic learns standardised returns (MAPPO's value normalisation, `value_norm`), and the actors can
start from a fit to a heuristic teacher (`imitation_updates`, `agents.imitation`: DL²'s supervised stage).

Deviations (also in docs/design_notes.md): PPO updates after fixed batched rollouts rather than after each
timestep (Algorithm 1); the critic is a state-value V(s) rather than Q(s, a) (see `nn.das.CentralCritic`);
gradients are clipped per network (actor, critic) rather than jointly. The learned baselines DL² and
RIFLING train with the same code: their fixed half (σ = 0) has no ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxsched.agents.das import DASActor, DASAgentConfig, DASPolicy, empty_history
from jaxsched.agents.ppo import check_schedule, sgd_epochs
from jaxsched.agents.ppo import gae as ppo_gae
from jaxsched.core.wrappers import LogWrapper, episode_mean
from jaxsched.envs.gpu_cloud import GPUCloudAction, GPUCloudObs
from jaxsched.nn.das import CentralCritic, masked_normal_entropy, masked_normal_log_prob
from jaxsched.nn.rwgp import RWGPHistory
from jaxsched.policies.gpu_cloud import HEURISTICS

LR_GRID = (1e-4, 5e-5, 1e-5, 5e-6, 1e-6)  # App. D


@dataclass(frozen=True)
class MAPPOConfig:
    """Static MAPPO settings; defaults are the paper's (App. D: γ 0.98, entropy 0.03, clip 0.2, z = 2)."""

    agent: DASAgentConfig = field(default_factory=DASAgentConfig)
    num_envs: int = 16
    num_steps: int = 64
    total_updates: int = 100
    updates_per_chunk: int = 10
    update_epochs: int = 4
    num_minibatches: int = 4
    critic_hidden: tuple[int, ...] = (256, 256)
    lr: float = 1e-4
    gamma: float = 0.98
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.03
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_interval: int = 2
    # MAPPO's value normalisation (Yu et al. 2022): the critic predicts returns standardised by running
    # statistics of the GAE targets. Without it a tanh critic whose outputs start near 0 needs ~|V|/lr Adam
    # steps to reach returns of −50…−500 (the JCT reward), and the advantages stay the raw returns. Off by
    # default: from scratch on the tiny cluster (lr 1e-3) it made DA worse (357 against 302 min); the
    # warm-started recipe of configs/das/small.yaml turns it on.
    value_norm: bool = False
    # Imitation warm start (agents.imitation; DL²'s supervised stage): 0 = start MAPPO from scratch.
    imitation_updates: int = 0
    imitation_teacher: str = "fifo_firstfit"
    imitation_lr: float = 1e-3
    imitation_std: float = 0.1  # the σ the learned Gaussians are fitted to
    imitation_dagger: float = 0.5  # fraction of the imitation updates in which the learner acts

    def __post_init__(self):
        object.__setattr__(self, "critic_hidden", tuple(int(h) for h in self.critic_hidden))
        check_schedule(self, "mappo")
        if self.target_interval < 1:
            raise ValueError(f"mappo.target_interval must be >= 1, got {self.target_interval}")
        if not 0 <= self.imitation_dagger <= 1:
            raise ValueError(f"mappo.imitation_dagger must be in [0, 1], got {self.imitation_dagger}")
        if self.imitation_updates < 0:
            raise ValueError(f"mappo.imitation_updates must be >= 0, got {self.imitation_updates}")
        if self.imitation_teacher not in HEURISTICS:
            raise ValueError(
                f"mappo.imitation_teacher must be one of {', '.join(HEURISTICS)}, "
                f"got {self.imitation_teacher!r}"
            )
        for name in ("lr", "clip_eps", "max_grad_norm", "imitation_lr", "imitation_std"):
            if not getattr(self, name) > 0:
                raise ValueError(f"mappo.{name} must be > 0, got {getattr(self, name)}")
        for name in ("gamma", "gae_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"mappo.{name} must be in [0, 1], got {getattr(self, name)}")

    @property
    def minibatch_size(self) -> int:
        return self.num_envs * self.num_steps // self.num_minibatches


@struct.dataclass
class MAPPORunner:
    params: Any  # {"actor": ..., "critic": ...} being trained
    target: Any  # θ_old, φ_old: what rollouts act with (copied every `target_interval` updates)
    opt_state: Any
    env_state: Any  # LogState of [num_envs] envs
    obs: Any  # GPUCloudObs [num_envs, ...]
    history: RWGPHistory  # [num_envs, τ, ...]
    value_stats: jnp.ndarray  # f32[3] value normalisation: (debias weight, EMA of targets, EMA of squares)
    key: jnp.ndarray  # raw key data
    update: jnp.ndarray  # i32


@struct.dataclass
class MAPPOTransition:
    obs: GPUCloudObs  # [B, ...] (agents read jobs, job_mask, machines, global_state, decision)
    history: RWGPHistory  # [B, τ, ...] what the placement agent conditioned on
    priority: jnp.ndarray  # f32[B, N]
    affinity: jnp.ndarray  # f32[B, N, M]
    log_prob: jnp.ndarray  # f32[B, 2] log-prob of each agent's action (target actor)
    value: jnp.ndarray  # f32[B]
    reward: jnp.ndarray  # f32[B]
    decision: jnp.ndarray  # bool[B] the env used the action
    done: jnp.ndarray  # bool[B]
    next_value: jnp.ndarray  # f32[B] V of the pre-reset next state (0 after termination)


VALUE_NORM_BETA = 0.99  # per update: the statistics follow the returns as the policy improves


def value_moments(stats: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`(mean, std)` of the value normaliser `stats` (`f32[3]`); `(0, 1)` before its first update."""
    seen = stats[0] > 0
    w = jnp.where(seen, stats[0], 1.0)
    mean = stats[1] / w
    std = jnp.sqrt(jnp.maximum(stats[2] / w - mean**2, 1e-4))
    return jnp.where(seen, mean, 0.0), jnp.where(seen, std, 1.0)


def update_value_stats(stats: jnp.ndarray, targets: jnp.ndarray) -> jnp.ndarray:
    """Fold one batch of return targets into the debiased EMA `stats` (MAPPO's ValueNorm)."""
    batch = jnp.stack([jnp.float32(1.0), targets.mean(), jnp.square(targets).mean()])
    return VALUE_NORM_BETA * stats + (1 - VALUE_NORM_BETA) * batch


def gae(traj: MAPPOTransition, gamma, lam):
    """Advantages and returns `[T, B]`; a non-decision call is a continuation (no discount)."""
    return ppo_gae(traj, jnp.where(traj.decision, gamma, 1.0), lam)


class MAPPO:
    """MAPPO over the GPU-cloud env; see the module docstring."""

    def __init__(self, config: MAPPOConfig, env, env_params):
        self.config = config
        self.env = LogWrapper(env)
        self.base_env = env
        self.env_params = env_params
        self.actor = DASActor(config.agent)
        self.critic = CentralCritic(config.critic_hidden)

    # ---- pieces ----------------------------------------------------------------------------------
    def optimizer(self, lr: float | None = None) -> optax.GradientTransformation:
        """Adam (at `lr`, default `config.lr`) with the gradient norm clipped per network: one global
        clip would let the critic's gradient (which grows with the return's scale) shrink the actors'
        steps."""
        cfg = self.config
        lr = cfg.lr if lr is None else lr
        one = lambda: optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5))  # noqa: E731
        return optax.multi_transform(
            {"actor": one(), "critic": one()},
            lambda params: {k: jax.tree.map(lambda _, k=k: k, v) for k, v in params.items()},
        )

    def value(self, critic_params, value_stats, global_state):
        """V(s) in return units for one state: the critic's output, de-standardised when `value_norm`."""
        v = self.critic.apply(critic_params, global_state)
        if not self.config.value_norm:
            return v
        mean, std = value_moments(value_stats)
        return v * std + mean

    def critic_loss(self, critic_params, value_stats, batch: MAPPOTransition, targets):
        """PPO's clipped value loss, in the standardised units when `value_norm` (so that its weight
        against the actor does not depend on the return's scale)."""
        cfg = self.config
        mean, std = value_moments(value_stats) if cfg.value_norm else (0.0, 1.0)
        value = jax.vmap(lambda g: self.critic.apply(critic_params, g))(batch.obs.global_state)
        old, targets = (batch.value - mean) / std, (targets - mean) / std
        v_clipped = old + jnp.clip(value - old, -cfg.clip_eps, cfg.clip_eps)
        return 0.5 * jnp.maximum((value - targets) ** 2, (v_clipped - targets) ** 2).mean()

    def _history0(self):
        c = self.base_env.config
        return empty_history(self.config.agent, c.n_slots, c.n_machines)

    def distribution(self, actor_params, obs: GPUCloudObs, history: RWGPHistory) -> DASPolicy:
        """Both agents' Gaussians for one env."""
        return self.actor.apply(actor_params, obs, history)

    def _log_prob(self, pol: DASPolicy, obs: GPUCloudObs, priority, affinity):
        """`f32[2]`: the log-densities of the two agents' actions — the ordering agent's priorities of
        the valid slots, the placement agent's affinity rows of the placement groups (each once); 0 for
        a fixed (heuristic) half. Kept apart so that each agent has its own PPO ratio (MAPPO)."""
        agent = self.config.agent
        lp_order, lp_place = jnp.float32(0.0), jnp.float32(0.0)
        if agent.learns_ordering:
            lp_order = masked_normal_log_prob(pol.prio_mu, pol.prio_std, priority, obs.job_mask)
        if agent.learns_placement:
            lp_place = masked_normal_log_prob(pol.aff_mu, pol.aff_std, affinity, pol.place_mask)
        return jnp.stack([lp_order, lp_place])

    def log_prob_entropy(self, actor_params, obs, history, priority, affinity):
        """Per-agent log-probs `f32[2]` of (priority, affinity), and the entropy *per action dimension*
        (mean over the learned Gaussians: 1 per valid slot for the ordering, M per placement group), for
        one env. Per dimension, so that the entropy weight does not scale with the number of visible jobs
        and machines."""
        agent = self.config.agent
        pol = self.distribution(actor_params, obs, history)
        ent, dims = jnp.float32(0.0), jnp.float32(0.0)
        if agent.learns_ordering:
            ent += masked_normal_entropy(pol.prio_mu, pol.prio_std, obs.job_mask)
            dims += obs.job_mask.sum()
        if agent.learns_placement:
            ent += masked_normal_entropy(pol.aff_mu, pol.aff_std, pol.place_mask)
            dims += pol.place_mask.sum() * pol.aff_mu.shape[-1]
        return self._log_prob(pol, obs, priority, affinity), ent / jnp.maximum(dims, 1)

    # ---- public API ------------------------------------------------------------------------------
    def init(self, key: jax.Array) -> MAPPORunner:
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        obs, env_state = jax.vmap(self.env.reset, in_axes=(0, None))(
            jax.random.split(k_env, self.config.num_envs), self.env_params
        )
        one_obs = jax.tree.map(lambda x: x[0], obs)
        params = {
            "actor": self.actor.init(k_actor, one_obs, self._history0()),
            "critic": self.critic.init(k_critic, one_obs.global_state),
        }
        history = jax.vmap(lambda _: self._history0())(jnp.arange(self.config.num_envs))
        return MAPPORunner(
            params=params,
            target=params,
            opt_state=self.optimizer().init(params),
            env_state=env_state,
            obs=obs,
            history=history,
            value_stats=jnp.zeros((3,), jnp.float32),
            key=jax.random.key_data(k_run),
            update=jnp.int32(0),
        )

    def act(self, actor_params, obs, history, key, greedy: bool = False):
        """Sample (or take the means of) both actions for one env: `(GPUCloudAction, log_prob f32[2])`
        (per agent, see `_log_prob`). A fixed
        half (σ = 0) is its heuristic's action; affinity noise is shared within a placement group."""
        pol = self.distribution(actor_params, obs, history)
        prio, aff = pol.prio_mu, pol.aff_mu
        if not greedy:
            k1, k2 = jax.random.split(key)
            prio = prio + pol.prio_std * jax.random.normal(k1, prio.shape)
            aff = aff + pol.aff_std[:, None] * jax.random.normal(k2, aff.shape)[pol.groups]
        return GPUCloudAction(priority=prio, affinity=aff), self._log_prob(pol, obs, prio, aff)

    @staticmethod
    def advance_history(history: RWGPHistory, obs: GPUCloudObs, affinity, decision, done) -> RWGPHistory:
        """Push a decision into one env's history; clear it when the episode ended."""
        pushed = history.push(obs.jobs, obs.job_mask, obs.machines, affinity)
        history = jax.tree.map(lambda a, b: jnp.where(decision, a, b), pushed, history)
        return jax.tree.map(lambda a, b: jnp.where(done, a, b), history.clear(), history)

    def rollout(self, runner: MAPPORunner, key: jax.Array, act=None):
        """`num_steps` vmapped env calls acting with the target actor, or with `act(actor_params, obs,
        history, key) -> (GPUCloudAction, log_prob f32[2])` for one env (the imitation teacher)."""
        cfg = self.config
        step = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        act = jax.vmap(self.act if act is None else act, in_axes=(None, 0, 0, 0))
        value = jax.vmap(lambda p, g: self.value(p, runner.value_stats, g), in_axes=(None, 0))
        target = runner.target

        def body(carry, k):
            env_state, obs, history = carry
            k_act, k_step = jax.random.split(k)
            action, log_prob = act(target["actor"], obs, history, jax.random.split(k_act, cfg.num_envs))
            v = value(target["critic"], obs.global_state)
            obs2, env_state2, reward, terminated, truncated, info = step(
                jax.random.split(k_step, cfg.num_envs), env_state, action, self.env_params
            )
            done = terminated | truncated
            v_final = value(target["critic"], info["final_observation"].global_state)
            tr = MAPPOTransition(
                obs=obs, history=history, priority=action.priority, affinity=action.affinity,
                log_prob=log_prob, value=v, reward=reward, decision=obs.decision, done=done,
                next_value=jnp.where(terminated, 0.0, v_final),
            )  # fmt: skip
            history2 = jax.vmap(self.advance_history)(history, obs, action.affinity, obs.decision, done)
            log = {
                "returned_episode": info["returned_episode"],
                "episode_return": info["returned_episode_returns"],
                "episode_metrics": info["returned_episode_metrics"],
            }
            return (env_state2, obs2, history2), (tr, log)

        carry = (runner.env_state, runner.obs, runner.history)
        (env_state, obs, history), (traj, log) = jax.lax.scan(
            body, carry, jax.random.split(key, cfg.num_steps)
        )
        return runner.replace(env_state=env_state, obs=obs, history=history), traj, log

    def loss(self, params, value_stats, batch: MAPPOTransition, adv, targets):
        cfg = self.config
        lp, ent = jax.vmap(self.log_prob_entropy, in_axes=(None, 0, 0, 0, 0))(
            params["actor"], batch.obs, batch.history, batch.priority, batch.affinity
        )
        d = batch.decision.astype(jnp.float32)
        n = jnp.maximum(d.sum(), 1.0)
        mean_adv = (adv * d).sum() / n
        std_adv = jnp.sqrt((((adv - mean_adv) * d) ** 2).sum() / n) + 1e-8
        norm_adv = (adv - mean_adv) / std_adv
        # The log-ratio is bounded so that a sample far in a narrow Gaussian's tail cannot overflow exp
        # (the clipped surrogate ignores such ratios anyway).
        ratio = jnp.exp(jnp.clip(jnp.where(batch.decision[:, None], lp - batch.log_prob, 0.0), -20.0, 20.0))
        adv2 = norm_adv[:, None]
        surrogate = jnp.minimum(ratio * adv2, jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv2)
        # MAPPO: each agent's clipped surrogate with its own ratio, summed over the learning agents.
        agent = cfg.agent
        learns = jnp.array([agent.learns_ordering, agent.learns_placement], jnp.float32)
        actor = -((surrogate * d[:, None]).sum(axis=0) * learns).sum() / n
        entropy = (ent * d).sum() / n
        critic = self.critic_loss(params["critic"], value_stats, batch, targets)
        total = actor + cfg.vf_coef * critic - cfg.ent_coef * entropy
        aux = {
            "actor_loss": actor,
            "critic_loss": critic,
            "entropy": entropy,
            "approx_kl": ((((ratio - 1) - jnp.log(ratio)) * d[:, None]).sum(axis=0) * learns).sum() / n,
            "clip_frac": (((jnp.abs(ratio - 1) > cfg.clip_eps) * d[:, None]).sum(axis=0) * learns).sum()
            / (n * learns.sum()),
        }
        return total, aux

    def update_step(self, runner: MAPPORunner) -> tuple[MAPPORunner, dict]:
        cfg = self.config
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll, k_perm = jax.random.split(key, 3)
        runner, traj, log = self.rollout(runner, k_roll)
        adv, targets = gae(traj, cfg.gamma, cfg.gae_lambda)
        value_stats = update_value_stats(runner.value_stats, targets)
        n = cfg.num_envs * cfg.num_steps
        flat = jax.tree.map(lambda a: a.reshape((n,) + a.shape[2:]), (traj, adv, targets))
        loss = lambda p, b: self.loss(p, value_stats, *b)  # noqa: E731
        (params, opt_state), aux = sgd_epochs(
            loss,
            self.optimizer(),
            runner.params,
            runner.opt_state,
            flat,
            k_perm,
            cfg.update_epochs,
            cfg.num_minibatches,
        )
        update = runner.update + 1
        copy = update % cfg.target_interval == 0
        target = jax.tree.map(lambda new, old: jnp.where(copy, new, old), params, runner.target)
        runner = runner.replace(
            params=params, target=target, opt_state=opt_state, value_stats=value_stats,
            key=jax.random.key_data(key), update=update,
        )  # fmt: skip
        done = log["returned_episode"]
        metrics = {k: v.mean() for k, v in aux.items()}
        metrics["episodes"] = done.sum()
        metrics["episode_return"] = episode_mean(log["episode_return"], done)
        for k, v in log["episode_metrics"].items():
            metrics[k] = episode_mean(v.astype(jnp.float32), done)
        metrics["reward_per_step"] = traj.reward.mean()
        metrics["decision_frac"] = traj.decision.mean()
        metrics["update"] = update
        return runner, metrics

    def train_chunk(self, runner: MAPPORunner) -> tuple[MAPPORunner, dict]:
        """`updates_per_chunk` updates in one `lax.scan`; metrics are `[updates_per_chunk]`."""
        return jax.lax.scan(lambda r, _: self.update_step(r), runner, None, self.config.updates_per_chunk)

    def run_episode(self, actor_params, env_params, key: jax.Array, greedy: bool = True) -> dict:
        """One whole episode with the actor (history carried), returning the env's metrics."""
        env = self.base_env
        k_reset, k_loop = jax.random.split(key)
        obs, state = env.reset(k_reset, env_params)

        def body(carry):
            obs, state, history, _, total, k = carry
            k, k_act, k_step = jax.random.split(k, 3)
            action, _ = self.act(actor_params, obs, history, k_act, greedy)
            obs2, state2, reward, term, trunc, _ = env.step_env(k_step, state, action, env_params)
            history = self.advance_history(history, obs, action.affinity, obs.decision, jnp.bool_(False))
            return obs2, state2, history, term | trunc, total + reward, k

        init = (obs, state, self._history0(), jnp.bool_(False), jnp.float32(0.0), k_loop)
        _, state, _, _, total, _ = jax.lax.while_loop(lambda c: ~c[3], body, init)
        out = dict(env.metrics(state, env_params))
        out["return"] = total
        return out


def make_train(config: MAPPOConfig, env, env_params):
    """`train(key) -> (runner, metrics)`: every update in one jitted program; `vmap` it over seeds."""
    mappo = MAPPO(config, env, env_params)

    def train(key: jax.Array):
        runner = mappo.init(key)
        return jax.lax.scan(lambda r, _: mappo.update_step(r), runner, None, config.total_updates)

    return train
