"""Deep Q-learning (Mnih et al. 2015) with proportional prioritized replay (Schaul et al. 2016), the whole
training loop one jitted program, for any env with discrete actions, a flat `obs.vec` and `obs.mask`.

`DQN(config, env, env_params, network=None)` gives pure functions over a `DQNRunner` (online and target
networks, optimiser, replay buffer, the batch of env states, the key, the update count):

    runner = dqn.init(key)                         # one seed; jax.vmap(dqn.init)(keys) for several
    runner, metrics = dqn.train_chunk(runner)      # `updates_per_chunk` updates in one jit

Each update: `rollout_steps` ε-greedy decisions in each of `num_envs` envs (`lax.scan` of the vmapped env)
added to the buffer, then `grad_steps` minibatch steps once the buffer holds `learning_starts`
transitions. A minibatch step samples `batch_size` transitions with probability ∝ priority^α (flashbax's
sum-tree buffer, on the device inside the jitted loop), weights them by (N·P)^−β / max (β annealed
linearly from `beta_start` to 1 over the run), and minimises the Huber loss of the TD error against
`r + γ (1 − terminal) Q_target(s', a*)`, with a* the greedy valid action of the online net (double DQN) or
of the target net; priorities become |TD| + `priority_eps`. The target net is copied every
`target_every` gradient steps. ε decays linearly from `eps_start` to `eps_end` over `eps_decay_frac` of the
updates; exploration and every max are over *valid* actions only (`obs.mask`).

The Q-network is injected: any object with `init(key, vec [D]) -> params` and `apply(params, vec [B, D])
-> q [B, A]`, e.g. SCED²'s shared-weight network that reads the server axis back out of the flat vector.
The default is `nn.mlp.QMLP` on `obs.vec`. A transition stores `vec`, the next (pre-reset) `vec` and its
mask: truncation bootstraps from the state the episode stopped in, termination does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flashbax as fbx
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxsched.agents.pg import episode_log, update_metrics
from jaxsched.core.checks import at_least, in_unit_interval, positive
from jaxsched.core.wrappers import LogWrapper
from jaxsched.nn.mlp import QMLP

NEG_Q = -1e9  # the Q-value of an invalid action when taking a max


@dataclass(frozen=True)
class DQNConfig:
    """Static DQN settings. An update is `rollout_steps` × `num_envs` decisions and `grad_steps` SGD steps."""

    num_envs: int = 16
    rollout_steps: int = 8
    grad_steps: int = 2
    total_updates: int = 1000
    updates_per_chunk: int = 50
    buffer_size: int = 100_000
    batch_size: int = 128
    learning_starts: int = 2000
    hidden: tuple[int, ...] = (128, 128)
    lr: float = 3e-4
    max_grad_norm: float = 10.0
    gamma: float = 0.99
    huber_delta: float = 1.0
    target_every: int = 250
    double_dqn: bool = True
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_frac: float = 0.5
    per_alpha: float = 0.6
    beta_start: float = 0.4
    priority_eps: float = 1e-3

    def __post_init__(self):
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        counts = ("num_envs", "rollout_steps", "grad_steps", "total_updates", "updates_per_chunk")
        at_least(self, "dqn", counts + ("batch_size", "target_every"))
        at_least(self, "dqn", ("learning_starts",), low=self.batch_size)
        if self.buffer_size < self.learning_starts:
            raise ValueError(
                f"dqn.buffer_size ({self.buffer_size}) must be >= dqn.learning_starts "
                f"({self.learning_starts})"
            )
        if self.total_updates % self.updates_per_chunk:
            raise ValueError(
                f"dqn.total_updates ({self.total_updates}) must be a multiple of dqn.updates_per_chunk "
                f"({self.updates_per_chunk})"
            )
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(
                f"dqn.hidden must be a non-empty list of positive widths, got {list(self.hidden)}"
            )
        positive(self, "dqn", ("lr", "max_grad_norm", "huber_delta", "priority_eps", "eps_decay_frac"))
        in_unit_interval(self, "dqn", ("gamma", "eps_start", "eps_end", "per_alpha", "beta_start",
                                       "eps_decay_frac"))  # fmt: skip

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.rollout_steps


@struct.dataclass
class Transition:
    vec: jnp.ndarray  # f32[D]
    action: jnp.ndarray  # i32
    reward: jnp.ndarray  # f32
    terminated: jnp.ndarray  # bool
    next_vec: jnp.ndarray  # f32[D] the pre-reset next observation
    next_mask: jnp.ndarray  # bool[A]


@struct.dataclass
class DQNRunner:
    params: Any
    target_params: Any
    opt_state: Any
    buffer: Any  # flashbax prioritised buffer state
    env_state: Any  # LogState of [num_envs] envs
    obs: Any  # [num_envs, ...]
    key: jnp.ndarray  # raw key data (u32[2]): checkpoints hold plain arrays
    update: jnp.ndarray  # i32 updates done
    grad_step: jnp.ndarray  # i32 SGD steps done


def masked_argmax(q: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    """`i32[...]`: the best valid action (the first on ties)."""
    return jnp.argmax(jnp.where(mask, q, NEG_Q), axis=-1).astype(jnp.int32)


class DQN:
    """DQN with prioritized replay over one environment family; see the module docstring."""

    def __init__(self, config: DQNConfig, env, env_params, network=None):
        self.config = config
        self.env = LogWrapper(env)
        self.env_params = env_params
        self.n_actions = env.action_space(env_params).n
        self.network = QMLP(self.n_actions, config.hidden) if network is None else network
        self.buffer = fbx.make_prioritised_flat_buffer(
            max_length=config.buffer_size, min_length=config.learning_starts,
            sample_batch_size=config.batch_size, add_batch_size=config.num_envs,
            priority_exponent=config.per_alpha, device=jax.default_backend(),
        )  # fmt: skip
        self.optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr))

    # ---- schedules -------------------------------------------------------------------------------
    def epsilon(self, update: jnp.ndarray) -> jnp.ndarray:
        cfg = self.config
        frac = jnp.clip(update / (cfg.eps_decay_frac * cfg.total_updates), 0.0, 1.0)
        return cfg.eps_start + frac * (cfg.eps_end - cfg.eps_start)

    def beta(self, update: jnp.ndarray) -> jnp.ndarray:
        cfg = self.config
        return cfg.beta_start + jnp.clip(update / cfg.total_updates, 0.0, 1.0) * (1.0 - cfg.beta_start)

    def importance_weights(self, probabilities: jnp.ndarray, size, update) -> jnp.ndarray:
        """`f32[B]`: prioritized replay's correction (N·P(i))^-β / max_j (N·P(j))^-β for a minibatch drawn
        with probabilities `[B]` from `size` transitions (Schaul et al. 2016, Alg. 1), β at `update`."""
        w = (jnp.asarray(size, jnp.float32) * jnp.maximum(probabilities, 1e-12)) ** -self.beta(update)
        return w / w.max()

    # ---- public API ------------------------------------------------------------------------------
    def init(self, key: jax.Array) -> DQNRunner:
        k_net, k_env, k_run = jax.random.split(key, 3)
        reset = jax.vmap(self.env.reset, in_axes=(0, None))
        obs, env_state = reset(jax.random.split(k_env, self.config.num_envs), self.env_params)
        params = self.network.init(k_net, obs.vec[0])
        example = Transition(
            vec=obs.vec[0], action=jnp.int32(0), reward=jnp.float32(0.0), terminated=jnp.bool_(False),
            next_vec=obs.vec[0], next_mask=obs.mask[0],
        )  # fmt: skip
        return DQNRunner(
            params=params,
            target_params=params,
            opt_state=self.optimizer.init(params),
            buffer=self.buffer.init(example),
            env_state=env_state,
            obs=obs,
            key=jax.random.key_data(k_run),
            update=jnp.int32(0),
            grad_step=jnp.int32(0),
        )

    def act(self, params, obs, key: jax.Array, epsilon) -> jnp.ndarray:
        """ε-greedy over the valid actions of a batch of observations: `i32[B]`."""
        k_explore, k_pick = jax.random.split(key)
        greedy = masked_argmax(self.network.apply(params, obs.vec), obs.mask)
        uniform = jax.random.categorical(k_pick, jnp.where(obs.mask, 0.0, -jnp.inf))
        explore = jax.random.uniform(k_explore, greedy.shape) < epsilon
        return jnp.where(explore, uniform, greedy).astype(jnp.int32)

    def rollout(self, runner: DQNRunner, key: jax.Array) -> tuple[DQNRunner, dict, jnp.ndarray]:
        """`rollout_steps` ε-greedy decisions per env, each step's transitions added to the buffer:
        `(runner, episode log, reward [rollout_steps, num_envs])`."""
        cfg = self.config
        step = jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        eps = self.epsilon(runner.update)

        def body(carry, k):
            env_state, obs, buffer = carry
            k_act, k_step = jax.random.split(k)
            action = self.act(runner.params, obs, k_act, eps)
            obs2, env_state2, reward, terminated, _, info = step(
                jax.random.split(k_step, cfg.num_envs), env_state, action, self.env_params
            )
            final = info["final_observation"]
            tr = Transition(obs.vec, action, reward, terminated, final.vec, final.mask)
            return (env_state2, obs2, self.buffer.add(buffer, tr)), (
                episode_log(info, with_length=True),
                reward,
            )

        (env_state, obs, buffer), (log, reward) = jax.lax.scan(
            body, (runner.env_state, runner.obs, runner.buffer), jax.random.split(key, cfg.rollout_steps)
        )
        return runner.replace(env_state=env_state, obs=obs, buffer=buffer), log, reward

    def td_loss(self, params, target_params, batch: Transition, weights):
        """Importance-weighted Huber loss of the TD errors: `(loss, td [B])`."""
        cfg = self.config
        q = self.network.apply(params, batch.vec)
        q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
        q_next_target = self.network.apply(target_params, batch.next_vec)
        chooser = self.network.apply(params, batch.next_vec) if cfg.double_dqn else q_next_target
        a_next = masked_argmax(chooser, batch.next_mask)
        q_next = jnp.take_along_axis(q_next_target, a_next[:, None], axis=-1)[:, 0]
        # A next state with no valid action (cannot happen in envs whose φ is valid whenever picks are
        # not) bootstraps 0 rather than NEG_Q.
        q_next = jnp.where(batch.next_mask.any(-1), q_next, 0.0)
        target = batch.reward + cfg.gamma * (1.0 - batch.terminated.astype(jnp.float32)) * q_next
        td = q_taken - jax.lax.stop_gradient(target)
        loss = jnp.mean(weights * optax.huber_loss(td, delta=cfg.huber_delta))
        return loss, td

    def sgd_step(self, runner: DQNRunner, key: jax.Array) -> tuple[DQNRunner, dict]:
        """One prioritized minibatch step and its priority update; the target net follows every
        `target_every` steps."""
        cfg = self.config
        sample = self.buffer.sample(runner.buffer, key)
        batch = sample.experience.first
        size = jnp.where(runner.buffer.is_full, cfg.buffer_size, runner.buffer.current_index) * cfg.num_envs
        weights = self.importance_weights(sample.probabilities, size, runner.update)
        (loss, td), grads = jax.value_and_grad(self.td_loss, has_aux=True)(
            runner.params, runner.target_params, batch, weights
        )
        updates, opt_state = self.optimizer.update(grads, runner.opt_state, runner.params)
        params = optax.apply_updates(runner.params, updates)
        buffer = self.buffer.set_priorities(runner.buffer, sample.indices, jnp.abs(td) + cfg.priority_eps)
        grad_step = runner.grad_step + 1
        target = jax.tree.map(
            lambda new, old: jnp.where(grad_step % cfg.target_every == 0, new, old),
            params,
            runner.target_params,
        )
        runner = runner.replace(params=params, target_params=target, opt_state=opt_state, buffer=buffer,
                                grad_step=grad_step)  # fmt: skip
        return runner, {"td_loss": loss, "abs_td": jnp.abs(td).mean()}

    def update_step(self, runner: DQNRunner) -> tuple[DQNRunner, dict]:
        """One update: a rollout, then `grad_steps` SGD steps once the buffer can be sampled."""
        cfg = self.config
        key = jax.random.wrap_key_data(runner.key)
        key, k_roll, k_sgd = jax.random.split(key, 3)
        runner, log, reward = self.rollout(runner, k_roll)

        def learn(r):
            return jax.lax.scan(lambda r, k: self.sgd_step(r, k), r, jax.random.split(k_sgd, cfg.grad_steps))

        def wait(r):
            nan = jnp.full((cfg.grad_steps,), jnp.nan, jnp.float32)
            return r, {"td_loss": nan, "abs_td": nan}

        runner, aux = jax.lax.cond(self.buffer.can_sample(runner.buffer), learn, wait, runner)
        runner = runner.replace(key=jax.random.key_data(key), update=runner.update + 1)
        losses = {k: jnp.nanmean(v) for k, v in aux.items()}  # NaN until learning starts
        metrics = update_metrics(losses, log, reward, runner.update)
        metrics["epsilon"] = self.epsilon(runner.update - 1)
        return runner, metrics

    def train_chunk(self, runner: DQNRunner) -> tuple[DQNRunner, dict]:
        """`updates_per_chunk` updates in one `lax.scan`; metrics are `[updates_per_chunk]`."""
        return jax.lax.scan(lambda r, _: self.update_step(r), runner, None, self.config.updates_per_chunk)

    def policy(self):
        """The greedy evaluation policy `policy(params, obs, key) -> action` for one env's observation."""

        def act(params, obs, key):
            return masked_argmax(self.network.apply(params, obs.vec[None])[0], obs.mask)

        return act
