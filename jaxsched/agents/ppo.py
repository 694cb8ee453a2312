"""Proximal Policy Optimisation, PureJaxRL-style: the whole training loop is one jitted program.

`PPO(config, env, env_params)` gives pure functions over a `RunnerState` (network and optimiser state,
observation statistics, the batch of environment states, the key, the update count):

    runner = ppo.init(key, hparams)                       # one seed
    runner, metrics = ppo.train_chunk(runner, hparams)    # `updates_per_chunk` PPO updates, one jit
    train = make_train(config, env, env_params)           # key -> (runner, metrics), all updates

Each update: a rollout of `num_steps` × `num_envs` decisions (`lax.scan` of the `vmap`ped env), GAE that
bootstraps from the pre-reset observation's value on truncation and not on termination, then
`update_epochs` passes over `num_minibatches` shuffled minibatches. `jax.vmap` over `init`/`train_chunk`
runs several seeds, and several `PPOHParams` (learning rate, clip, entropy, ...) in one program.

The network is injected: `PPO(config, env, env_params, network=net)` with any object that has
`init(key, obs) -> params` (one observation), `apply(params, obs) -> (logits [B, A], value [B])` and
`value(params, obs) -> [B]` (a batch: the observation pytree with a leading axis), e.g. a graph network
or a Transformer over the env's own observation type. The default (`network=None`) is
`nn.mlp.VecActorCritic`, an MLP actor-critic of `config.hidden` on the flat features `obs.vec`.

The policy is a masked categorical (distrax) over the env's actions: with `mask_invalid` the logits of
invalid actions are set to a large negative number (finite, so entropies stay NaN-free); without it the
agent may pick invalid actions and the env applies its own rule. A network with a method
`distribution(head, mask)` replaces it: `apply` then returns that method's `head` (any pytree) and the
object it builds has `sample(seed)`, `log_prob(a)`, `entropy()`, `mode()` (e.g. `nn.das.MaskedNormal`,
OSDEC's per-job Gaussian scores); the log-ratio is then bounded to ±20 so that a sample deep in a narrow
Gaussian's tail cannot overflow `exp`.

Two more optional network hooks:
  * auxiliary tasks — `aux_targets(obs) -> f32[B, K]` (what the next observation will show) and
    `aux_loss(params, obs, targets, valid) -> (loss, metrics)`: the rollout records `aux_targets` of every
    observation, each step's target is the *next* step's (none across an episode end), and
    `aux_coef · loss` joins the PPO loss;
  * parameter groups — `param_labels(params)` labels every leaf; `ppo.group_lrs` gives each label its own
    Adam with a learning rate decayed linearly from `start` to `end` over the run
    (`optax.multi_transform`), in place of `lr`. With `normalize_obs`, `obs.vec` is
normalised by running statistics frozen during each rollout and updated after it, so the stored batch is
consistent; the network sees the normalised observation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import distrax
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
    gae,
    normalize_advantages,
    ratio_metrics,
    sgd_epochs,
    update_metrics,
)
from jaxsched.core.checks import in_unit_interval, positive
from jaxsched.core.spaces import is_space
from jaxsched.core.wrappers import LogWrapper
from jaxsched.nn.mlp import ACTIVATION_NAMES, MASKED_LOGIT, VecActorCritic


@dataclass(frozen=True)
class PPOConfig:
    """Static PPO settings (shapes, schedule, network). Numeric knobs that a sweep may vary have defaults
    here and travel as `PPOHParams` (vmappable)."""

    num_envs: int = 64
    num_steps: int = 128
    total_updates: int = 100
    updates_per_chunk: int = 10
    update_epochs: int = 4
    num_minibatches: int = 4
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    shared_network: bool = False
    normalize_obs: bool = True
    mask_invalid: bool = True
    anneal_lr: bool = False
    max_grad_norm: float = 0.5
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    reward_scale: float = 1.0  # rewards are multiplied by this before GAE (returns of O(1) for the critic)
    aux_coef: float = 1.0  # weight of a network's auxiliary loss (module docstring)
    group_lrs: tuple[tuple[str, float, float], ...] = ()  # (label, lr_start, lr_end): per-group Adam

    def __post_init__(self):
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        groups = tuple((str(g[0]), float(g[1]), float(g[2])) for g in self.group_lrs)
        object.__setattr__(self, "group_lrs", groups)
        if any(not (a > 0 and b > 0) for _, a, b in groups):
            raise ValueError(f"ppo.group_lrs: every learning rate must be > 0, got {list(groups)}")
        check_schedule(self, "ppo")
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(
                f"ppo.hidden must be a non-empty list of positive widths, got {list(self.hidden)}"
            )
        if self.activation not in ACTIVATION_NAMES:
            raise ValueError(
                f"ppo.activation must be one of {', '.join(ACTIVATION_NAMES)}, got '{self.activation}'"
            )
        positive(self, "ppo", ("lr", "max_grad_norm", "clip_eps", "reward_scale"))
        in_unit_interval(self, "ppo", ("gamma", "gae_lambda"))

    @property
    def minibatch_size(self) -> int:
        return self.num_envs * self.num_steps // self.num_minibatches

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    def hparams(self) -> PPOHParams:
        return PPOHParams(
            lr=jnp.float32(self.lr),
            gamma=jnp.float32(self.gamma),
            gae_lambda=jnp.float32(self.gae_lambda),
            clip_eps=jnp.float32(self.clip_eps),
            ent_coef=jnp.float32(self.ent_coef),
            vf_coef=jnp.float32(self.vf_coef),
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["group_lrs"] = [list(g) for g in self.group_lrs]
        return d

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@struct.dataclass
class PPOHParams:
    """Vmappable hyper-parameters (scalars, or `[G]` for a grid)."""

    lr: jnp.ndarray
    gamma: jnp.ndarray
    gae_lambda: jnp.ndarray
    clip_eps: jnp.ndarray
    ent_coef: jnp.ndarray
    vf_coef: jnp.ndarray


@struct.dataclass
class ObsStats:
    """Running mean and variance of observation vectors `[D]` (parallel Welford)."""

    mean: jnp.ndarray
    var: jnp.ndarray
    count: jnp.ndarray

    @classmethod
    def create(cls, dim: int) -> ObsStats:
        return cls(jnp.zeros((dim,), jnp.float32), jnp.ones((dim,), jnp.float32), jnp.float32(1e-4))

    def normalize(self, x: jnp.ndarray) -> jnp.ndarray:
        return jnp.clip((x - self.mean) / jnp.sqrt(self.var + 1e-8), -10.0, 10.0)

    def update(self, batch: jnp.ndarray) -> ObsStats:
        """Merge a batch `[..., D]`."""
        x = batch.reshape(-1, batch.shape[-1])
        b_mean, b_var, b_n = x.mean(0), x.var(0), jnp.float32(x.shape[0])
        total = self.count + b_n
        delta = b_mean - self.mean
        mean = self.mean + delta * b_n / total
        m2 = self.var * self.count + b_var * b_n + delta**2 * self.count * b_n / total
        return ObsStats(mean, m2 / total, total)


@struct.dataclass
class RunnerState:
    params: Any
    opt_state: Any
    obs_stats: ObsStats
    env_state: Any  # LogState of [num_envs] envs
    obs: Any  # the env's observation pytree, [num_envs, ...]
    key: jnp.ndarray  # raw key data (u32[2]), so checkpoints hold plain arrays
    update: jnp.ndarray  # i32: updates done


@struct.dataclass
class Transition:
    obs: Any  # the observation pytree the network saw (`vec` normalised), [B, ...]
    mask: jnp.ndarray  # bool[B, A]
    action: jnp.ndarray  # i32[B]
    log_prob: jnp.ndarray  # f32[B]
    value: jnp.ndarray  # f32[B]
    reward: jnp.ndarray  # f32[B]
    terminated: jnp.ndarray  # bool[B]
    done: jnp.ndarray  # bool[B] terminated or truncated
    next_value: jnp.ndarray  # f32[B] value of the pre-reset next state (0 after termination)
    aux_target: Any = None  # f32[B, K] the network's auxiliary targets (module docstring), or None
    aux_valid: Any = None  # bool[B] the target exists (the episode goes on)


def masked_logits(logits: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    return jnp.where(mask, logits, MASKED_LOGIT)


class PPO:
    """PPO over one environment family; see the module docstring."""

    def __init__(self, config: PPOConfig, env, env_params, network=None):
        self.config = config
        self.env = LogWrapper(env)
        self.env_params = env_params
        if network is None:
            n_actions = env.action_space(env_params).n
            network = VecActorCritic(n_actions, config.hidden, config.activation, config.shared_network)
        self.network = network
        self.custom_dist = hasattr(network, "distribution")
        self.aux = getattr(network, "aux_targets", None) is not None
        if config.group_lrs and not hasattr(network, "param_labels"):
            raise ValueError("ppo.group_lrs needs a network with `param_labels` (its parameter groups)")
        # The space of `obs.vec`: the observation space's `vec` field (a pytree of spaces), or the whole
        # space where an env describes only that vector by one space.
        space = env.observation_space(env_params)
        vec = space if is_space(space) else getattr(space, "vec", None)
        flat = vec is not None and len(vec.shape) == 1
        # The length of `obs.vec`, which the running statistics cover (1, a placeholder, without one).
        self.obs_dim = vec.shape[0] if flat else 1
        if config.normalize_obs and not flat:
            raise ValueError(
                "ppo.normalize_obs needs a flat observation vector `obs.vec`; this env's observation is "
                "structured: set ppo.normalize_obs to false (the network normalises its own inputs)"
            )

    # ---- pieces ----------------------------------------------------------------------------------
    def optimizer(self, hp: PPOHParams) -> optax.GradientTransformation:
        cfg = self.config
        if cfg.group_lrs:
            steps = cfg.total_updates * cfg.update_epochs * cfg.num_minibatches
            groups = {
                label: optax.chain(
                    optax.scale_by_adam(eps=1e-5),
                    optax.scale_by_learning_rate(optax.linear_schedule(start, end, steps)),
                )
                for label, start, end in cfg.group_lrs
            }
            return optax.chain(
                optax.clip_by_global_norm(cfg.max_grad_norm),
                optax.multi_transform(groups, self.network.param_labels),
            )
        if cfg.anneal_lr:
            per_update = cfg.update_epochs * cfg.num_minibatches

            def lr(count):
                return hp.lr * (1.0 - (count // per_update) / cfg.total_updates)
        else:
            lr = hp.lr
        return optax.chain(
            optax.clip_by_global_norm(cfg.max_grad_norm),
            optax.scale_by_adam(eps=1e-5),
            optax.scale_by_learning_rate(lr),
        )

    def _obs(self, stats: ObsStats, obs):
        """The observation the network sees: `obs.vec` normalised by `stats` (with `normalize_obs`)."""
        return obs.replace(vec=stats.normalize(obs.vec)) if self.config.normalize_obs else obs

    def _dist(self, logits, mask):
        if self.custom_dist:
            return self.network.distribution(logits, mask)
        if self.config.mask_invalid:
            logits = masked_logits(logits, mask)
        return distrax.Categorical(logits=logits)

    # ---- public API ------------------------------------------------------------------------------
    def init(self, key: jax.Array, hp: PPOHParams | None = None) -> RunnerState:
        hp = self.config.hparams() if hp is None else hp
        k_net, k_env, k_run = jax.random.split(key, 3)
        reset = jax.vmap(self.env.reset, in_axes=(0, None))
        obs, env_state = reset(jax.random.split(k_env, self.config.num_envs), self.env_params)
        params = self.network.init(k_net, jax.tree.map(lambda a: a[0], obs))
        self._check_groups(params)
        opt_state = self.optimizer(hp).init(params)
        return RunnerState(
            params=params,
            opt_state=opt_state,
            obs_stats=ObsStats.create(self.obs_dim),
            env_state=env_state,
            obs=obs,
            key=jax.random.key_data(k_run),
            update=jnp.int32(0),
        )

    def _check_groups(self, params) -> None:
        if not self.config.group_lrs:
            return
        labels = set(jax.tree.leaves(self.network.param_labels(params)))
        missing = sorted(labels - {g[0] for g in self.config.group_lrs})
        if missing:
            raise ValueError(
                f"ppo.group_lrs has no learning rate for the network's group(s) {', '.join(missing)}"
            )

    def rollout(self, runner: RunnerState, key: jax.Array) -> tuple[RunnerState, Transition, dict]:
        """`num_steps` decisions in each of `num_envs` envs with the current policy."""
        step = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        stats = runner.obs_stats

        def body(carry, k):
            env_state, obs = carry
            k_act, k_step = jax.random.split(k)
            seen = self._obs(stats, obs)
            logits, value = self.network.apply(runner.params, seen)
            pi = self._dist(logits, obs.mask)
            action = pi.sample(seed=k_act)
            log_prob = pi.log_prob(action)
            keys = jax.random.split(k_step, self.config.num_envs)
            obs2, env_state2, reward, terminated, truncated, info = step(
                keys, env_state, action, self.env_params
            )
            v_final = self.network.value(runner.params, self._obs(stats, info["final_observation"]))
            done = terminated | truncated
            tr = Transition(
                obs=seen,
                mask=obs.mask,
                action=action,
                log_prob=log_prob,
                value=value,
                reward=reward * self.config.reward_scale,
                terminated=terminated,
                done=done,
                next_value=jnp.where(terminated, 0.0, v_final),
                aux_target=self.network.aux_targets(obs) if self.aux else None,
            )
            log = episode_log(info, with_length=True)
            if self.config.normalize_obs:
                log["raw_vec"] = obs.vec
            return (env_state2, obs2), (tr, log)

        (env_state, obs), (traj, log) = jax.lax.scan(
            body, (runner.env_state, runner.obs), jax.random.split(key, self.config.num_steps)
        )
        if self.aux:  # step i's target is what step i + 1 shows; none across an episode end
            last = self.network.aux_targets(obs)[None]
            nxt = jnp.concatenate([traj.aux_target[1:], last], axis=0)
            traj = traj.replace(aux_target=nxt, aux_valid=~traj.done)
        return runner.replace(env_state=env_state, obs=obs), traj, log

    def loss(self, params, hp: PPOHParams, batch: Transition, adv, targets):
        logits, value = self.network.apply(params, batch.obs)
        pi = self._dist(logits, batch.mask)
        log_prob = pi.log_prob(batch.action)
        log_ratio = log_prob - batch.log_prob
        if self.custom_dist:
            log_ratio = jnp.clip(log_ratio, -20.0, 20.0)
        ratio = jnp.exp(log_ratio)
        actor = -clipped_surrogate(ratio, normalize_advantages(adv), hp.clip_eps).mean()
        critic = clipped_value_loss(value, batch.value, targets, hp.clip_eps)
        entropy = pi.entropy().mean()
        total = actor + hp.vf_coef * critic - hp.ent_coef * entropy
        approx_kl, clipped = ratio_metrics(ratio, hp.clip_eps)
        aux = {
            "actor_loss": actor,
            "critic_loss": critic,
            "entropy": entropy,
            "approx_kl": approx_kl.mean(),
            "clip_frac": clipped.mean(),
        }
        if self.aux:
            aux_loss, aux_metrics = self.network.aux_loss(
                params, batch.obs, batch.aux_target, batch.aux_valid
            )
            total = total + self.config.aux_coef * aux_loss
            aux |= {"aux_loss": aux_loss, **aux_metrics}
        return total, aux

    def update_step(self, runner: RunnerState, hp: PPOHParams) -> tuple[RunnerState, dict]:
        """One PPO update: rollout, GAE, epochs of minibatch SGD. Returns per-update metrics."""
        cfg = self.config
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll, k_perm = jax.random.split(key, 3)
        runner, traj, log = self.rollout(runner, k_roll)
        adv, targets = gae(traj, hp.gamma, hp.gae_lambda)
        flat = flatten_steps((traj, adv, targets), cfg.steps_per_update)
        (params, opt_state), aux = sgd_epochs(
            lambda p, b: self.loss(p, hp, *b), self.optimizer(hp), runner.params, runner.opt_state, flat,
            k_perm, cfg.update_epochs, cfg.num_minibatches,
        )  # fmt: skip
        obs_stats = runner.obs_stats.update(log["raw_vec"]) if cfg.normalize_obs else runner.obs_stats
        runner = runner.replace(
            params=params,
            opt_state=opt_state,
            obs_stats=obs_stats,
            key=jax.random.key_data(key),
            update=runner.update + 1,
        )
        return runner, update_metrics(aux, log, traj.reward, runner.update)

    def train_chunk(self, runner: RunnerState, hp: PPOHParams | None = None) -> tuple[RunnerState, dict]:
        """`updates_per_chunk` updates in one `lax.scan`; metrics are `[updates_per_chunk]`."""
        hp = self.config.hparams() if hp is None else hp
        return jax.lax.scan(lambda r, _: self.update_step(r, hp), runner, None, self.config.updates_per_chunk)

    def policy(self, greedy: bool = True):
        """An evaluation policy `policy((params, obs_stats), obs, key) -> action` (argmax if `greedy`)."""

        def act(policy_params, obs, key):
            params, stats = policy_params
            logits, _ = self.network.apply(params, self._obs(stats, obs))
            pi = self._dist(logits, obs.mask)
            action = pi.mode() if greedy else pi.sample(seed=key)
            return action if self.custom_dist else action.astype(jnp.int32)

        return act


def make_train(config: PPOConfig, env, env_params, network=None):
    """`train(key, hparams=None) -> (runner, metrics)`: every update in one jitted program (metrics
    `[total_updates]`). `jax.vmap(train)(keys)` trains several seeds at once. `network`: see `PPO`."""
    ppo = PPO(config, env, env_params, network)

    def train(key: jax.Array, hp: PPOHParams | None = None):
        hp = config.hparams() if hp is None else hp
        runner = ppo.init(key, hp)
        return jax.lax.scan(lambda r, _: ppo.update_step(r, hp), runner, None, config.total_updates)

    return train
