"""MAPPO (Yu et al. 2022), PureJaxRL-style, over an injected multi-agent actor.

The algorithm knows neither the env nor the networks. `MAPPO(config, env, env_params, agent)` takes a
multi-agent actor: A agents deciding together, each with its own PPO ratio, sharing one parameter tree and
a recurrent per-env `carry` (e.g. the RWGP's history of past decisions). Its interface (`MultiAgentActor`
below documents it; `agents.das.DASAgent` is the DAS implementation):

    learns: tuple[bool, ...]                               # which of the A agents have a ratio
    init(key, obs, carry) -> actor params                  # one observation
    initial_carry() -> carry                               # one env, empty
    act(params, obs, carry, key, greedy) -> (action, log_prob f32[A])
    log_prob_entropy(params, obs, carry, action) -> (log_prob f32[A], entropy per action dimension)
    advance(carry, obs, action, decision, done) -> carry   # after each call; cleared at episode ends
    critic_input(obs) -> f32[G]                            # what the centralized critic sees
    decision(obs) -> bool                                  # False: the env ignores this call's action

Optionally, an actor whose carry is a window of past observations (the RWGP history) sets
`sequence_carry = True` and provides

    log_prob_entropy_sequence(params, obs, carry, action, start) -> (log_prob f32[T, A], entropy f32[T])

for T consecutive calls of one env (`obs`, `carry`, `action` `[T, ...]`, `start` the carry before the
first), equal to `log_prob_entropy` on each call but free to compute what the calls share once (DAS encodes
each observation once instead of τ + 1 times). Its minibatches are then whole envs — `num_minibatches`
groups of `num_envs / num_minibatches` envs, all `num_steps` calls each, reshuffled every epoch — as in
PPO with recurrent policies, instead of shuffled calls: every call still enters each epoch once. Such an
actor may also set `caches_carry = True` and provide

    carry_cache(params, carry) -> cache                                  # the carry encoded with params
    act_cached(params, obs, carry, cache, key, greedy) -> (action, log_prob f32[A], cache)

the rollout then encodes each env's carry once at its start with the target parameters and acts from the
cache, which `act_cached` keeps in step with `advance` (DAS: a call encodes 1 observation, not τ + 1).

A centralized critic `V(critic_input)` has its own parameters (`critic=`, default `nn.mlp.ValueMLP` of
`config.critic_hidden`). Each update: a rollout of `num_steps` calls × `num_envs` envs (`lax.scan` of the
vmapped env) with the *target* actor (θ_old), GAE, then `update_epochs` passes over shuffled minibatches
of the loss: one clipped surrogate per agent (each with its own ratio, as in MAPPO), entropy, and value
loss; the target actor and critic are copied from the trained ones every `target_interval` updates (DAS's
copy interval z = 2). Seeds `vmap` over `init`/`train_chunk`.

The carry is stored with every transition and fed again in the update, so a carry-dependent head (the
RWGP) is recomputed with the current parameters. Non-decision calls (an env continuing a split forward)
are continuations: they add no policy or entropy term, and GAE does not discount across them (γ = 1), so
returns are those of the decision process.

The critic can learn standardised returns (MAPPO's value normalisation, `value_norm`), and the actors can
start from a fit to a teacher (`imitation_updates`, `agents.imitation`: DL²'s supervised stage), when the
agent provides one.

Deviations from the DAS paper's Algorithm 1 (also in docs/design_notes.md): PPO updates after fixed
batched rollouts rather than after each timestep; the critic is a state-value V(s) rather than Q(s, a)
(see `nn.das.CentralCritic`); gradients are clipped per network (actor, critic) rather than jointly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxsched.agents.pg import (
    check_schedule,
    clipped_surrogate,
    clipped_value_loss,
    episode_log,
    flatten_steps,
    normalize_advantages,
    ratio_metrics,
    sgd_epochs,
    update_metrics,
    update_value_stats,
    value_moments,
)
from jaxsched.agents.pg import gae as pg_gae
from jaxsched.core.checks import in_unit_interval, positive
from jaxsched.core.episode import run_episode
from jaxsched.core.wrappers import LogWrapper
from jaxsched.nn.mlp import ValueMLP

LR_GRID = (1e-4, 5e-5, 1e-5, 5e-6, 1e-6)  # DAS App. D


class MultiAgentActor(Protocol):
    """What MAPPO needs of the actor it trains (see the module docstring); every method is for one env."""

    learns: tuple[bool, ...]

    def init(self, key: jax.Array, obs, carry) -> Any: ...

    def initial_carry(self) -> Any: ...

    def act(self, params, obs, carry, key: jax.Array, greedy: bool = False) -> tuple[Any, jax.Array]: ...

    def log_prob_entropy(self, params, obs, carry, action) -> tuple[jax.Array, jax.Array]: ...

    def advance(self, carry, obs, action, decision, done) -> Any: ...

    def critic_input(self, obs) -> jax.Array: ...

    def decision(self, obs) -> jax.Array: ...


@dataclass(frozen=True)
class MAPPOConfig:
    """Static MAPPO settings; defaults are the DAS paper's (App. D: γ 0.98, entropy 0.03, clip 0.2, z = 2)."""

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
    # Imitation warm start (agents.imitation; DL²'s supervised stage): 0 = start MAPPO from scratch. The
    # teacher is named by the agent's own heuristics (`agent.teacher(name)`).
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
        positive(self, "mappo", ("lr", "clip_eps", "max_grad_norm", "imitation_lr", "imitation_std"))
        in_unit_interval(self, "mappo", ("gamma", "gae_lambda"))

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.num_envs * self.num_steps // self.num_minibatches


@struct.dataclass
class MAPPORunner:
    params: Any  # {"actor": ..., "critic": ...} being trained
    target: Any  # θ_old, φ_old: what rollouts act with (copied every `target_interval` updates)
    opt_state: Any
    env_state: Any  # LogState of [num_envs] envs
    obs: Any  # the env's observation pytree [num_envs, ...]
    carry: Any  # the agent's per-env carry [num_envs, ...] (DAS: the RWGP history)
    value_stats: jnp.ndarray  # f32[3] value normalisation: (debias weight, EMA of targets, EMA of squares)
    key: jnp.ndarray  # raw key data
    update: jnp.ndarray  # i32


@struct.dataclass
class MAPPOTransition:
    obs: Any  # [B, ...] the observation the agents saw
    carry: Any  # [B, ...] the carry they conditioned on
    action: Any  # [B, ...] the joint action taken
    log_prob: jnp.ndarray  # f32[B, A] log-prob of each agent's action (target actor)
    value: jnp.ndarray  # f32[B]
    reward: jnp.ndarray  # f32[B]
    decision: jnp.ndarray  # bool[B] the env used the action
    done: jnp.ndarray  # bool[B]
    next_value: jnp.ndarray  # f32[B] V of the pre-reset next state (0 after termination)


def gae(traj: MAPPOTransition, gamma, lam):
    """Advantages and returns `[T, B]`; a non-decision call is a continuation (no discount)."""
    return pg_gae(traj, jnp.where(traj.decision, gamma, 1.0), lam)


class MAPPO:
    """MAPPO over any env and multi-agent actor; see the module docstring."""

    def __init__(self, config: MAPPOConfig, env, env_params, agent: MultiAgentActor, critic=None):
        self.config = config
        self.env = LogWrapper(env)
        self.base_env = env
        self.env_params = env_params
        self.agent = agent
        self.critic = ValueMLP(config.critic_hidden) if critic is None else critic
        self.by_env = bool(getattr(agent, "sequence_carry", False))
        if self.by_env and config.num_envs % config.num_minibatches:
            raise ValueError(
                f"mappo.num_minibatches ({config.num_minibatches}) must divide mappo.num_envs "
                f"({config.num_envs}): this actor's minibatches are whole envs (its carry is a history)"
            )

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

    def value(self, critic_params, value_stats, obs):
        """V(s) in return units for one observation: the critic's output, de-standardised when
        `value_norm`."""
        v = self.critic.apply(critic_params, self.agent.critic_input(obs))
        if not self.config.value_norm:
            return v
        mean, std = value_moments(value_stats)
        return v * std + mean

    def critic_loss(self, critic_params, value_stats, batch: MAPPOTransition, targets):
        """PPO's clipped value loss, in the standardised units when `value_norm` (so that its weight
        against the actor does not depend on the return's scale)."""
        cfg = self.config
        mean, std = value_moments(value_stats) if cfg.value_norm else (0.0, 1.0)
        critic_input = jax.vmap(self.agent.critic_input)(batch.obs)
        value = jax.vmap(lambda g: self.critic.apply(critic_params, g))(critic_input)
        old, targets = (batch.value - mean) / std, (targets - mean) / std
        return clipped_value_loss(value, old, targets, cfg.clip_eps)

    def act(self, actor_params, obs, carry, key, greedy: bool = False):
        """The agent's joint action for one env and its per-agent log-probs `f32[A]`."""
        return self.agent.act(actor_params, obs, carry, key, greedy)

    def advance(self, carry, obs, action, done):
        """One env's carry after a call: advanced by the agent (which reads `decision`, cleared at `done`)."""
        return self.agent.advance(carry, obs, action, self.agent.decision(obs), done)

    # ---- public API ------------------------------------------------------------------------------
    def init(self, key: jax.Array) -> MAPPORunner:
        k_actor, k_critic, k_env, k_run = jax.random.split(key, 4)
        obs, env_state = jax.vmap(self.env.reset, in_axes=(0, None))(
            jax.random.split(k_env, self.config.num_envs), self.env_params
        )
        one_obs = jax.tree.map(lambda x: x[0], obs)
        params = {
            "actor": self.agent.init(k_actor, one_obs, self.agent.initial_carry()),
            "critic": self.critic.init(k_critic, self.agent.critic_input(one_obs)),
        }
        carry = jax.vmap(lambda _: self.agent.initial_carry())(jnp.arange(self.config.num_envs))
        return MAPPORunner(
            params=params,
            target=params,
            opt_state=self.optimizer().init(params),
            env_state=env_state,
            obs=obs,
            carry=carry,
            value_stats=jnp.zeros((3,), jnp.float32),
            key=jax.random.key_data(k_run),
            update=jnp.int32(0),
        )

    def rollout(self, runner: MAPPORunner, key: jax.Array, act=None):
        """`num_steps` vmapped env calls acting with the target actor, or with `act(actor_params, obs,
        carry, key) -> (action, log_prob f32[A])` for one env (the imitation teacher). An actor with a
        `carry_cache` acts through `act_cached` from its carry encoded once at the rollout's start with
        the target parameters (the same policy as `act`, up to rounding)."""
        cfg = self.config
        step = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        cached = act is None and getattr(self.agent, "caches_carry", False)
        act = jax.vmap(self.act if act is None else act, in_axes=(None, 0, 0, 0))
        if cached:
            act_cached = jax.vmap(self.agent.act_cached, in_axes=(None, 0, 0, 0, 0))
        value = jax.vmap(lambda p, o: self.value(p, runner.value_stats, o), in_axes=(None, 0))
        decision = jax.vmap(self.agent.decision)
        target = runner.target

        def body(loop, k):
            env_state, obs, carry, cache = loop
            k_act, k_step = jax.random.split(k)
            keys = jax.random.split(k_act, cfg.num_envs)
            if cached:
                action, log_prob, cache = act_cached(target["actor"], obs, carry, cache, keys)
            else:
                action, log_prob = act(target["actor"], obs, carry, keys)
            v = value(target["critic"], obs)
            obs2, env_state2, reward, terminated, truncated, info = step(
                jax.random.split(k_step, cfg.num_envs), env_state, action, self.env_params
            )
            done = terminated | truncated
            v_final = value(target["critic"], info["final_observation"])
            tr = MAPPOTransition(
                obs=obs, carry=carry, action=action, log_prob=log_prob, value=v, reward=reward,
                decision=decision(obs), done=done, next_value=jnp.where(terminated, 0.0, v_final),
            )  # fmt: skip
            carry2 = jax.vmap(self.advance)(carry, obs, action, done)
            return (env_state2, obs2, carry2, cache), (tr, episode_log(info))

        cache = None
        if cached:  # the carry as the target actor encodes it (its parameters change between rollouts)
            cache = jax.vmap(self.agent.carry_cache, in_axes=(None, 0))(target["actor"], runner.carry)
        loop = (runner.env_state, runner.obs, runner.carry, cache)
        keys = jax.random.split(key, cfg.num_steps)
        (env_state, obs, carry, _), (traj, log) = jax.lax.scan(body, loop, keys)
        return runner.replace(env_state=env_state, obs=obs, carry=carry), traj, log

    def loss(self, params, value_stats, batch: MAPPOTransition, adv, targets):
        """The loss of a minibatch of calls `[B]`."""
        lp, ent = jax.vmap(self.agent.log_prob_entropy, in_axes=(None, 0, 0, 0))(
            params["actor"], batch.obs, batch.carry, batch.action
        )
        return self._loss_terms(params, value_stats, batch, adv, targets, lp, ent)

    def loss_by_env(self, params, value_stats, batch: MAPPOTransition, adv, targets, start):
        """The loss of a minibatch of whole envs (`[E, T]`, `start` the carries before the rollout `[E]`):
        the actor's `log_prob_entropy_sequence` per env, then the same terms as `loss`."""
        lp, ent = jax.vmap(self.agent.log_prob_entropy_sequence, in_axes=(None, 0, 0, 0, 0))(
            params["actor"], batch.obs, batch.carry, batch.action, start
        )
        n = adv.size
        flat = lambda x: x.reshape((n,) + x.shape[2:])  # noqa: E731
        batch, adv, targets, lp, ent = jax.tree.map(flat, (batch, adv, targets, lp, ent))
        return self._loss_terms(params, value_stats, batch, adv, targets, lp, ent)

    def _loss_terms(self, params, value_stats, batch: MAPPOTransition, adv, targets, lp, ent):
        """The clipped surrogates, entropy and value loss of calls `[B]` whose log-probs `lp f32[B, A]` and
        entropies `ent f32[B]` the current actor gave."""
        cfg = self.config
        d = batch.decision.astype(jnp.float32)
        n = jnp.maximum(d.sum(), 1.0)
        # The log-ratio is bounded so that a sample far in a narrow Gaussian's tail cannot overflow exp
        # (the clipped surrogate ignores such ratios anyway).
        ratio = jnp.exp(jnp.clip(jnp.where(batch.decision[:, None], lp - batch.log_prob, 0.0), -20.0, 20.0))
        surrogate = clipped_surrogate(ratio, normalize_advantages(adv, d)[:, None], cfg.clip_eps)
        # MAPPO: each agent's clipped surrogate with its own ratio, summed over the learning agents.
        learns = jnp.array(self.agent.learns, jnp.float32)
        per_agent = lambda x: ((x * d[:, None]).sum(axis=0) * learns).sum() / n  # noqa: E731
        actor = -per_agent(surrogate)
        entropy = (ent * d).sum() / n
        critic = self.critic_loss(params["critic"], value_stats, batch, targets)
        total = actor + cfg.vf_coef * critic - cfg.ent_coef * entropy
        approx_kl, clipped = ratio_metrics(ratio, cfg.clip_eps)
        aux = {
            "actor_loss": actor,
            "critic_loss": critic,
            "entropy": entropy,
            "approx_kl": per_agent(approx_kl),
            "clip_frac": per_agent(clipped) / learns.sum(),
        }
        return total, aux

    def update_step(self, runner: MAPPORunner) -> tuple[MAPPORunner, dict]:
        cfg = self.config
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll, k_perm = jax.random.split(key, 3)
        start = runner.carry
        runner, traj, log = self.rollout(runner, k_roll)
        adv, targets = gae(traj, cfg.gamma, cfg.gae_lambda)
        value_stats = update_value_stats(runner.value_stats, targets)
        if self.by_env:  # envs on the leading axis, each with its whole rollout and its start carry
            env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
            batch = (*jax.tree.map(env_major, (traj, adv, targets)), start)
            loss = lambda p, b: self.loss_by_env(p, value_stats, *b)  # noqa: E731
        else:
            batch = flatten_steps((traj, adv, targets), cfg.num_envs * cfg.num_steps)
            loss = lambda p, b: self.loss(p, value_stats, *b)  # noqa: E731
        (params, opt_state), aux = sgd_epochs(
            loss, self.optimizer(), runner.params, runner.opt_state, batch, k_perm, cfg.update_epochs,
            cfg.num_minibatches,
        )  # fmt: skip
        update = runner.update + 1
        copy = update % cfg.target_interval == 0
        target = jax.tree.map(lambda new, old: jnp.where(copy, new, old), params, runner.target)
        runner = runner.replace(
            params=params, target=target, opt_state=opt_state, value_stats=value_stats,
            key=jax.random.key_data(key), update=update,
        )  # fmt: skip
        metrics = update_metrics(aux, log, traj.reward, update)
        metrics["decision_frac"] = traj.decision.mean()
        return runner, metrics

    def train_chunk(self, runner: MAPPORunner) -> tuple[MAPPORunner, dict]:
        """`updates_per_chunk` updates in one `lax.scan`; metrics are `[updates_per_chunk]`."""
        return jax.lax.scan(lambda r, _: self.update_step(r), runner, None, self.config.updates_per_chunk)

    def run_episode(self, actor_params, env_params, key: jax.Array, greedy: bool = True) -> dict:
        """One whole episode with the actor (carry advanced every call), returning the env's metrics
        (`core.episode.run_episode`)."""

        if getattr(self.agent, "caches_carry", False):  # the carry and its encoding, kept in step

            def act(obs, state, carry, k):
                history, cache = carry
                action, _, cache = self.agent.act_cached(actor_params, obs, history, cache, k, greedy)
                return action, (self.advance(history, obs, action, jnp.bool_(False)), cache)

            history = self.agent.initial_carry()
            carry = (history, self.agent.carry_cache(actor_params, history))
        else:

            def act(obs, state, carry, k):
                action, _ = self.act(actor_params, obs, carry, k, greedy)
                return action, self.advance(carry, obs, action, jnp.bool_(False))

            carry = self.agent.initial_carry()
        return run_episode(self.base_env, env_params, act, key, carry)


def make_train(config: MAPPOConfig, env, env_params, agent: MultiAgentActor, critic=None):
    """`train(key) -> (runner, metrics)`: every update in one jitted program; `vmap` it over seeds."""
    mappo = MAPPO(config, env, env_params, agent, critic)

    def train(key: jax.Array):
        runner = mappo.init(key)
        return jax.lax.scan(lambda r, _: mappo.update_step(r), runner, None, config.total_updates)

    return train
