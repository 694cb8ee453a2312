"""Policy gradient as Decima trains it (Mao et al., SIGCOMM '19, §5.3): REINFORCE with several rollouts of
the same job sequence, a time-based baseline, entropy annealing and an episode-length curriculum.

Each update:
  * draws `num_sequences` job sequences (episodes of the bank) and runs `rollouts` rollouts of each — the
    same jobs at the same times, different sampled actions — for `num_steps` steps (`step_env`, no
    auto-reset; steps after an episode ends are masked out);
  * truncates every rollout of a sequence at the same `max_time`, drawn from an exponential whose mean
    grows geometrically from `curriculum_start_s` to `curriculum_end_s` over training (Decima's
    "differential reward … increasing episode length"; `curriculum_start_s` 0 turns it off);
  * scores step t of rollout m by its reward-to-go G (undiscounted) minus the **time-based baseline**: the
    mean over the sequence's rollouts of their reward-to-go at the same wall-clock time (each rollout's G
    at its first decision at or after that time, 0 past its end) — so an action is judged against the
    other rollouts of the same arrivals, not against a state-value estimate;
  * takes one Adam step on −mean(log π(a|s) · advantage) − β·entropy over decision steps, β annealed
    linearly from `ent_start` to `ent_end`. Advantages are divided by their batch standard deviation
    (a scale fix of ours: rewards are in scaled seconds and vary by workload). The gradient is taken over
    the decision steps only, `loss_chunk` at a time (`gradient`): early in the curriculum most of a
    rollout's `num_steps` come after its episode ended, and the network need not see them.

The network is injected: any object with `init(key, obs)`, `act(params, obs, key) -> (action, log_prob,
entropy)` and `evaluate(params, obs, action) -> (log_prob, entropy)` on one observation, e.g.
`nn.idle_dag.IdleDAGNetwork`. The env must keep the environment contract and carry `t` (its clock) in
the observation and `decision` in `info` when some steps only continue a forward. Nothing else of the env
or the network is known here.

`init` / `train_chunk` are pure and `vmap` over seeds (`experiments.train.train_chunks` runs them in
chunks with checkpoints; the runner holds the whole training state, so a resume is exact).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxsched.core.checks import at_least, positive


@dataclass(frozen=True)
class ReinforceConfig:
    num_sequences: int = 4  # job sequences per update
    rollouts: int = 4  # rollouts of each sequence (Decima: 16 agents on one sequence)
    num_steps: int = 256  # decisions per rollout; an episode not over by then is cut there
    total_updates: int = 100
    updates_per_chunk: int = 10
    lr: float = 1e-3  # Decima's Adam learning rate
    max_grad_norm: float = 10.0
    ent_start: float = 0.1
    ent_end: float = 0.001
    curriculum_start_s: float = 0.0  # mean episode length (s) at the start; 0: no truncation
    curriculum_end_s: float = 0.0
    min_time_s: float = 1.0  # shortest truncated episode
    loss_chunk: int = 512  # decision steps per gradient pass (`Reinforce.gradient`)

    def __post_init__(self):
        at_least(self, "reinforce", ("num_sequences", "rollouts", "num_steps", "total_updates",
                                     "updates_per_chunk", "loss_chunk"))  # fmt: skip
        positive(self, "reinforce", ("lr", "max_grad_norm"))
        if self.total_updates % self.updates_per_chunk:
            raise ValueError(
                f"reinforce.updates_per_chunk ({self.updates_per_chunk}) must divide total_updates "
                f"({self.total_updates})"
            )
        if self.curriculum_start_s < 0 or (self.curriculum_start_s > 0) != (self.curriculum_end_s > 0):
            raise ValueError(
                "reinforce.curriculum_start_s and curriculum_end_s must both be > 0 (a curriculum) or "
                "both 0, "
                f"got {self.curriculum_start_s} and {self.curriculum_end_s}"
            )

    @property
    def batch(self) -> int:
        return self.num_sequences * self.rollouts

    @property
    def steps_per_update(self) -> int:
        return self.batch * self.num_steps

    def to_dict(self) -> dict:
        return asdict(self)


@struct.dataclass
class ReinforceRunner:
    params: object
    opt_state: object
    key: jax.Array
    update: jax.Array  # i32 updates done


def time_baseline(times: jax.Array, togo: jax.Array, alive: jax.Array) -> jax.Array:
    """`f32[M, T]`: for each step of each of M rollouts of one sequence, the mean over the M rollouts of
    their reward-to-go at that step's time. `times` i32[M, T] (non-decreasing over alive steps), `togo`
    f32[M, T], `alive` bool[M, T]; a rollout contributes its reward-to-go at its first alive step at or
    after the time, and 0 when it has none (it ended before)."""
    big = jnp.iinfo(jnp.int32).max
    t_alive = jnp.where(alive, times, big)  # dead steps sort last
    g_ext = jnp.concatenate([togo, jnp.zeros((togo.shape[0], 1), togo.dtype)], axis=1)

    def at(t_other, g_other):  # one other rollout's G at every step's time: [M, T]
        idx = jnp.searchsorted(t_other, times.reshape(-1), side="left").reshape(times.shape)
        return g_other[idx]

    return jax.vmap(at)(t_alive, g_ext).mean(axis=0)


class Reinforce:
    """Decima's policy gradient over `env` with an injected `network` (module docstring)."""

    def __init__(self, config: ReinforceConfig, env, network):
        self.config, self.env, self.network = config, env, network
        self.opt = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.lr))

    def init(self, key: jax.Array, env_params) -> ReinforceRunner:
        k_obs, k_net, k_run = jax.random.split(key, 3)
        obs, _ = self.env.reset(k_obs, env_params)
        params = self.network.init(k_net, obs)
        return ReinforceRunner(params, self.opt.init(params), k_run, jnp.int32(0))

    def ent_coef(self, update) -> jax.Array:
        c = self.config
        frac = jnp.clip(update / max(c.total_updates - 1, 1), 0.0, 1.0)
        return c.ent_start + frac * (c.ent_end - c.ent_start)

    def _max_time(self, key, update, n: int) -> jax.Array:
        """i32[n] truncation times (ms) from the curriculum; `INT32_MAX` when it is off."""
        c = self.config
        if c.curriculum_start_s <= 0:
            return jnp.full((n,), jnp.iinfo(jnp.int32).max, jnp.int32)
        frac = jnp.clip(update / max(c.total_updates - 1, 1), 0.0, 1.0)
        mean_s = c.curriculum_start_s * (c.curriculum_end_s / c.curriculum_start_s) ** frac
        t = jnp.maximum(jax.random.exponential(key, (n,)) * mean_s, c.min_time_s) * 1000.0
        return jnp.minimum(t, 2.0e9).astype(jnp.int32)

    def rollout(self, params, env_params, key, update):
        """`[T, B]` trajectories of `rollouts` rollouts of `num_sequences` sequences; B = sequence-major."""
        c, env = self.config, self.env
        k_seq, k_time, k_act = jax.random.split(key, 3)
        seq_keys = jnp.repeat(jax.random.split(k_seq, c.num_sequences), c.rollouts, axis=0)
        max_time = jnp.repeat(self._max_time(k_time, update, c.num_sequences), c.rollouts)
        per_env = jax.vmap(lambda t: env_params.replace(max_time=t))(max_time)
        obs, state = jax.vmap(env.reset_env)(seq_keys, per_env)

        def body(carry, k):
            obs, state, alive = carry
            keys = jax.random.split(k, c.batch)
            action, _, _ = jax.vmap(self.network.act, in_axes=(None, 0, 0))(params, obs, keys)
            obs2, state2, reward, term, trunc, info = jax.vmap(env.step_env)(keys, state, action, per_env)
            decision = info.get("decision", jnp.ones_like(alive))
            out = dict(obs=obs, action=action, reward=reward * alive, alive=alive, decision=decision & alive)
            return (obs2, state2, alive & ~(term | trunc)), out

        init = (obs, state, jnp.ones((c.batch,), bool))
        (_, state, alive), traj = jax.lax.scan(body, init, jax.random.split(k_act, c.num_steps))
        metrics = jax.vmap(env.metrics)(state, per_env)
        return traj, metrics, ~alive

    def advantages(self, traj) -> jax.Array:
        """`f32[T, B]`: reward-to-go minus the time-based baseline, 0 off decision steps."""
        c = self.config
        togo = jnp.flip(jnp.cumsum(jnp.flip(traj["reward"], 0), 0), 0)  # [T, B]
        shape = (c.num_sequences, c.rollouts, c.num_steps)
        group = lambda x: x.T.reshape(shape)  # noqa: E731  [T, B] -> [E, M, T]
        base = jax.vmap(time_baseline)(group(traj["obs"].t), group(togo), group(traj["decision"]))
        base = base.reshape(c.batch, c.num_steps).T
        return jnp.where(traj["decision"], togo - base, 0.0)

    def loss(self, params, traj, adv, ent_coef):
        """The update's objective over every step at once (the reference for `gradient`, which computes its
        gradient over the decision steps only)."""
        mask = traj["decision"].astype(jnp.float32)
        n = jnp.maximum(mask.sum(), 1.0)
        std = jnp.sqrt(jnp.sum(mask * adv**2) / n) + 1e-8
        evaluate = jax.vmap(jax.vmap(self.network.evaluate, in_axes=(None, 0, 0)), in_axes=(None, 0, 0))
        logp, ent = evaluate(params, traj["obs"], traj["action"])
        pg = -jnp.sum(mask * logp * jax.lax.stop_gradient(adv / std)) / n
        entropy = jnp.sum(mask * ent) / n
        return pg - ent_coef * entropy, {"pg_loss": pg, "entropy": entropy}

    def gradient(self, params, traj, adv, ent_coef):
        """`(grads, aux)` of `loss`, computed over the decision steps alone: they are gathered to the front
        and a `while_loop` differentiates `loss_chunk` of them at a time, summing, until every decision is
        covered — the network never sees a step after its episode ended (most steps early in the
        curriculum). Equal to `jax.grad(self.loss)` up to the order of float sums (tests)."""
        c = self.config
        mask = traj["decision"].reshape(-1)  # [T·B]
        size = mask.shape[0]
        n_dec = mask.sum(dtype=jnp.int32)
        n = jnp.maximum(n_dec.astype(jnp.float32), 1.0)
        adv = adv.reshape(-1)
        std = jnp.sqrt(jnp.sum(jnp.where(mask, adv**2, 0.0)) / n) + 1e-8
        weight = jax.lax.stop_gradient(jnp.where(mask, adv / std, 0.0))
        chunk = min(c.loss_chunk, size)
        n_slots = -(-size // chunk) * chunk
        order = jnp.argsort((~mask).astype(jnp.int32), stable=True)  # decision steps first, in order
        order = jnp.pad(order, (0, n_slots - size))  # slices past the end read step 0, marked invalid
        obs = jax.tree.map(lambda x: x.reshape((size, *x.shape[2:])), traj["obs"])
        actions = traj["action"].reshape((size, *traj["action"].shape[2:]))
        evaluate = jax.vmap(self.network.evaluate, in_axes=(None, 0, 0))

        def chunk_loss(p, idx, valid):
            logp, ent = evaluate(p, jax.tree.map(lambda x: x[idx], obs), actions[idx])
            pg = -jnp.sum(jnp.where(valid, logp * weight[idx], 0.0)) / n
            entropy = jnp.sum(jnp.where(valid, ent, 0.0)) / n
            return pg - ent_coef * entropy, (pg, entropy)

        def body(carry):
            i, grads, pg, entropy = carry
            start = i * chunk
            idx = jax.lax.dynamic_slice(order, (start,), (chunk,))
            valid = start + jnp.arange(chunk) < n_dec
            g, (pg_i, ent_i) = jax.grad(chunk_loss, has_aux=True)(params, idx, valid)
            return i + 1, jax.tree.map(jnp.add, grads, g), pg + pg_i, entropy + ent_i

        zero = jnp.float32(0.0)
        init = (jnp.int32(0), jax.tree.map(jnp.zeros_like, params), zero, zero)
        n_chunks = (n_dec + chunk - 1) // chunk
        _, grads, pg, entropy = jax.lax.while_loop(lambda cr: cr[0] < n_chunks, body, init)
        return grads, {"pg_loss": pg, "entropy": entropy}

    def update_step(self, runner: ReinforceRunner, env_params):
        key, k_roll = jax.random.split(runner.key)
        traj, ep, ended = self.rollout(runner.params, env_params, k_roll, runner.update)
        adv = self.advantages(traj)
        ent_coef = self.ent_coef(runner.update)
        grads, aux = self.gradient(runner.params, traj, adv, ent_coef)
        updates, opt_state = self.opt.update(grads, runner.opt_state, runner.params)
        params = optax.apply_updates(runner.params, updates)
        ended_f = ended.astype(jnp.float32)
        n_ended = ended_f.sum()
        metrics = {
            "update": runner.update + 1,
            "episodes": ended.sum(dtype=jnp.int32),
            "return": jnp.mean(jnp.sum(traj["reward"], 0)),
            "decisions": jnp.sum(traj["decision"], dtype=jnp.int32),
            "ent_coef": ent_coef,
            "grad_norm": optax.tree.norm(grads),
            **aux,
        }
        for name, v in ep.items():  # the env's episode metrics, over the rollouts that ended
            v = v.astype(jnp.float32)
            metrics[name] = jnp.where(n_ended > 0, jnp.sum(v * ended_f) / jnp.maximum(n_ended, 1.0), jnp.nan)
        return ReinforceRunner(params, opt_state, key, runner.update + 1), metrics

    def train_chunk(self, runner: ReinforceRunner, env_params):
        """`updates_per_chunk` updates in one `lax.scan`; metrics are `[updates_per_chunk]`."""
        return jax.lax.scan(
            lambda r, _: self.update_step(r, env_params), runner, None, length=self.config.updates_per_chunk
        )

    def policy(self, greedy: bool = False):
        """The trained policy as `policy(params, obs, key) -> action` (the evaluator's signature): a
        sample of the network's distribution, or with `greedy` its most likely action (the network's
        `greedy(params, obs)`)."""
        if greedy:
            if not hasattr(self.network, "greedy"):
                raise ValueError(f"{type(self.network).__name__} has no greedy(params, obs): sample instead")
            return lambda params, obs, key: self.network.greedy(params, obs)

        def act(params, obs, key):
            return self.network.act(params, obs, key)[0]

        return act
