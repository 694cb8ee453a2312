"""Gymnasium's `Env` and `VectorEnv` over any jaxsched env: numpy in and out, for Stable-Baselines3, CleanRL
and every other Gymnasium agent (`pip install -e ".[gymnasium]"`).

    env = GymnasiumEnv.make("dbf-quick")                       # one env: gymnasium.Env
    obs, info = env.reset(seed=0)                              # obs: a dict of numpy arrays
    obs, reward, terminated, truncated, info = env.step(action)

    venv = GymnasiumVectorEnv.make("dbf-quick", num_envs=1024) # one jitted, vmapped step per call
    obs, info = venv.reset(seed=0)                             # obs["mask"]: [1024, W + 1], ...
    obs, rewards, terminations, truncations, info = venv.step(actions)

    register_envs()                                            # gymnasium.make("jaxsched/dbf-quick-v0")

What maps to what:
- Spaces convert leaf for leaf: `Discrete` → `Discrete`, `MultiDiscrete` → `MultiDiscrete`, `Box` →
  `Box` (bounds, shape and dtype kept; a bool field is a bool `Box`). An observation or action that is a
  pytree of spaces (every env's observation; DAS's `GPUCloudAction`) is a `Dict` keyed by the field path
  (`"jobs"`, `"priority"`, ...), in the pytree's order; a `Dict` action is turned back into the pytree.
- Keys: `reset(seed=...)` seeds Gymnasium's `np_random` (as `super().reset` does), and the JAX key of the
  episode and of every step is drawn from it, so a seed fixes the run and `reset()` without one continues it.
- The single env ends an episode as Gymnasium does: the terminal step returns the episode's last
  observation and `reset` starts the next (the env's `step_env`: jaxsched's own auto-reset is not used).
  `info` holds `action_mask` (the env's `action_mask`, the mask to give a masked agent; `action_masks()`
  returns it too, for sb3-contrib's `MaskablePPO`), and at an episode's end `episode_metrics` (the
  paper's metrics of the finished episode).
- The vector env auto-resets with Gymnasium 1.x's default, `AutoresetMode.NEXT_STEP`: a copy that ends
  returns its last observation, and on the next call it is reset, returns its new episode's first
  observation with reward 0 and no end, and its action is ignored. `info["action_mask"]` is
  `[num_envs, ...]`; on a call where some copy ended, `info["episode_metrics"]` holds every copy's metrics,
  valid where `info["_episode_metrics"]` (Gymnasium's vector-info convention).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium
    from gymnasium import spaces as gspaces
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as err:  # an optional extra: the package never needs it
    raise ImportError(
        'jaxsched.adapters.gymnasium needs gymnasium >= 1.1: pip install -e ".[gymnasium]"'
    ) from err

from jaxsched.adapters.gymnax import flat_observation_space, flatten_observation
from jaxsched.core.spaces import Box, Discrete, MultiDiscrete, describe, is_space

ID_PREFIX = "jaxsched/"  # gymnasium.make("jaxsched/<name>-v0")


# ---- spaces ----------------------------------------------------------------------------------------------
def to_gymnasium_space(space) -> gspaces.Space:
    """The Gymnasium space of a jaxsched space or pytree of spaces (a `Dict` keyed by field path)."""
    if is_space(space):
        return _leaf_space(space)
    paths = _paths(space)
    leaves = jax.tree.leaves(space, is_leaf=is_space)
    # an OrderedDict keeps the pytree's order (Gymnasium sorts a plain dict's keys)
    return gspaces.Dict(OrderedDict((p, _leaf_space(s)) for p, s in zip(paths, leaves, strict=True)))


def _leaf_space(space) -> gspaces.Space:
    if isinstance(space, Discrete):
        return gspaces.Discrete(space.n)
    if isinstance(space, MultiDiscrete):
        return gspaces.MultiDiscrete(np.asarray(space.nvec, np.int64))
    if isinstance(space, Box):
        dtype = np.dtype(space.dtype)
        if dtype == np.bool_:
            return gspaces.Box(0, 1, space.shape, np.bool_)
        return gspaces.Box(_bound(space.low, dtype), _bound(space.high, dtype), space.shape, dtype)
    raise TypeError(f"no Gymnasium space for {space!r}")


def _bound(value: float, dtype: np.dtype):
    """A bound in the space's dtype: integer bounds stay exact (an i32 count's bound is `I32_MAX`)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return dtype.type(min(max(value, info.min), info.max))
    return dtype.type(value)


def _paths(space) -> list[str]:
    """Each leaf's field path (`"jobs"`, `"machines"`, ...) in the pytree's order (`spaces.describe`'s)."""
    return [field for field, *_ in describe(space)]


def _no_metrics(metrics, state, params) -> dict:
    """Zeros shaped as `metrics(state, params)`: the branch of the steps where no episode ended."""
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(metrics, state, params))


def _select(pick, a, b):
    """Per copy (`pick: bool[B]`), the pytree `a`'s entries where `pick`, `b`'s elsewhere."""
    return jax.vmap(lambda p, x, y: jax.tree.map(lambda u, v: jax.lax.select(p, u, v), x, y))(pick, a, b)


def _single_programs(env, flatten_obs: bool):
    """Jitted `reset(key, params) -> (obs, state, mask)` and `step(key, state, action, params) -> (obs, state,
    reward, terminated, truncated, metrics, mask)` of one env: `step_env`, no auto-reset (Gymnasium's caller
    resets), the episode's metrics computed only at its end."""
    observe = flatten_observation if flatten_obs else (lambda obs: obs)

    def reset(key, params):
        obs, state = env.reset_env(key, params)
        return observe(obs), state, env.action_mask(state, params)

    def step(key, state, action, params):
        obs, state, reward, terminated, truncated, _ = env.step_env(key, state, action, params)
        metrics = jax.lax.cond(
            terminated | truncated, env.metrics, lambda s, p: _no_metrics(env.metrics, s, p), state, params
        )
        return observe(obs), state, reward, terminated, truncated, metrics, env.action_mask(state, params)

    # the state is donated: its buffers are reused for the next state instead of copied each call
    return jax.jit(reset), jax.jit(step, donate_argnums=(0, 1))


def _vector_programs(env, flatten_obs: bool, batch: int):
    """Jitted `reset(key, params) -> (obs, state, mask)` and `step(key, state, pending, action, params) ->
    (key, state, pending, (obs, reward, terminated, truncated, metrics, mask))` of `batch` copies under
    `vmap`, with Gymnasium's `NEXT_STEP` auto-reset: a copy that ended on the last call (`pending`) is reset
    and ignores its action. The env's own `step_env` / `reset_env`, so each step observes once (as the
    env's own auto-reset does); the metrics are computed only on calls where some copy's episode ended."""
    observe = flatten_observation if flatten_obs else (lambda obs: obs)
    vreset = jax.vmap(env.reset_env, (0, None))
    vstep = jax.vmap(env.step_env, (0, 0, 0, None))
    vmask, vmetrics = jax.vmap(env.action_mask, (0, None)), jax.vmap(env.metrics, (0, None))

    def reset(key, params):
        obs, state = vreset(jax.random.split(key, batch), params)
        return observe(obs), state, vmask(state, params)

    def step(key, state, pending, action, params):
        key, k_reset, k_step = jax.random.split(key, 3)  # the next call's key too: one dispatch a step
        obs_re, state_re = vreset(jax.random.split(k_reset, batch), params)
        # a pending copy steps from its fresh state (never from a finished one) and the step is dropped
        obs, stepped, reward, terminated, truncated, _ = vstep(
            jax.random.split(k_step, batch), _select(pending, state_re, state), action, params
        )
        state = _select(pending, state_re, stepped)
        if env.observe_from_state:  # then neither observation above is computed (XLA drops them)
            obs = jax.vmap(env.observe, (0, None))(state, params)
        else:
            obs = _select(pending, obs_re, obs)
        reward = jnp.where(pending, 0.0, reward)
        terminated, truncated = terminated & ~pending, truncated & ~pending
        done = terminated | truncated
        none = lambda s, p: _no_metrics(vmetrics, s, p)  # noqa: E731
        metrics = jax.lax.cond(done.any(), vmetrics, none, stepped, params)
        return key, state, done, (observe(obs), reward, terminated, truncated, metrics, vmask(state, params))

    return jax.jit(reset), jax.jit(step, donate_argnums=(0, 1, 2))


class _Bridge:
    """What both adapters share: the Gymnasium spaces of one env, the conversions (observation pytree →
    numpy, a dict keyed by field path; Gymnasium action → the env's action pytree) and the jitted `reset` /
    `step` of one env (`batch=None`) or of `batch` copies under `vmap`."""

    def __init__(self, env, params, flatten_obs: bool, batch: int | None):
        self.env, self.params = env, params
        obs_space, action_space = env.observation_space(params), env.action_space(params)
        if flatten_obs:  # one f32[D] vector, as the gymnax adapter's (for MLP policies)
            obs_space = flat_observation_space(obs_space, env.name)
        self.observation_space = to_gymnasium_space(obs_space)
        self.action_space = to_gymnasium_space(action_space)
        self.obs_paths = None if is_space(obs_space) else _paths(obs_space)
        self.action_paths = None if is_space(action_space) else _paths(action_space)
        self.action_tree = jax.tree.structure(action_space, is_leaf=is_space)
        self.action_dtypes = [jnp.dtype(s.dtype) for s in jax.tree.leaves(action_space, is_leaf=is_space)]
        if batch is None:
            self.reset, self.step = _single_programs(env, flatten_obs)
        else:
            self.reset, self.step = _vector_programs(env, flatten_obs, batch)

    def obs(self, obs) -> Any:
        """`obs` (already on the host) as Gymnasium's value of the observation space."""
        if self.obs_paths is None:
            return np.asarray(obs)
        return dict(zip(self.obs_paths, (np.asarray(x) for x in jax.tree.leaves(obs)), strict=True))

    def action(self, action) -> Any:
        """A Gymnasium action (an int, an array or a dict keyed by field path) as the env's action."""
        if self.action_paths is None:
            values = [action]
        else:
            missing = set(self.action_paths) - set(action)
            if missing:
                raise KeyError(f"action is missing the field(s) {sorted(missing)}")
            values = [action[p] for p in self.action_paths]
        values = [np.asarray(v, d) for v, d in zip(values, self.action_dtypes, strict=True)]
        return jax.tree.unflatten(self.action_tree, values)


def _make(name: str, overrides: dict):
    from jaxsched.envs.registry import make

    return make(name, **overrides)


# ---- one env ---------------------------------------------------------------------------------------------
class GymnasiumEnv(gymnasium.Env):
    """One jaxsched env as a `gymnasium.Env` (module docstring). `params`: the env params episodes are drawn
    from (default: the env's embedded workload); `flatten_obs`: one `f32[D]` `Box` observation instead of the
    `Dict`. `reset` and `step` are each one jitted call."""

    metadata = {"render_modes": []}

    def __init__(self, env, params: Any = None, flatten_obs: bool = False, render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (jaxsched envs do not render), got {render_mode!r}")
        self.env, self.render_mode = env, None
        self._bridge = _Bridge(env, env.default_params() if params is None else params, flatten_obs, None)
        self.observation_space, self.action_space = self._bridge.observation_space, self._bridge.action_space
        self._state = self._mask = None

    @classmethod
    def make(cls, name: str, flatten_obs: bool = False, **overrides) -> GymnasiumEnv:
        """The registered env `name` (`jaxsched.make(name, **overrides)`) as a `gymnasium.Env`."""
        return cls(*_make(name, overrides), flatten_obs=flatten_obs)

    @property
    def params(self):
        return self._bridge.params

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """`(obs, info)` of a new episode; `seed` reseeds (Gymnasium's convention), `options` is unused."""
        super().reset(seed=seed)
        obs, self._state, mask = self._bridge.reset(self._next_key(), self.params)
        obs, self._mask = jax.device_get((obs, mask))
        return self._bridge.obs(obs), {"action_mask": self._mask}

    def step(self, action):
        """`(obs, reward, terminated, truncated, info)`; an episode's last step gives its last observation."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        obs, self._state, reward, terminated, truncated, metrics, mask = self._bridge.step(
            self._next_key(), self._state, self._bridge.action(action), self.params
        )  # the state stays on the device: only what the caller sees is copied to the host
        shown = jax.device_get((obs, reward, terminated, truncated, mask))
        obs, reward, terminated, truncated, self._mask = shown
        info = {"action_mask": self._mask}
        if terminated or truncated:  # no auto-reset here: Gymnasium's caller resets
            info["episode_metrics"] = {k: float(v) for k, v in jax.device_get(metrics).items()}
            self._state = None
        return self._bridge.obs(obs), float(reward), bool(terminated), bool(truncated), info

    def action_masks(self) -> np.ndarray:
        """The current action mask (the method sb3-contrib's `MaskablePPO` asks each env for)."""
        if self._mask is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask

    def _next_key(self) -> jax.Array:
        return jax.random.key(int(self.np_random.integers(2**31 - 1)))


# ---- a batch of envs -------------------------------------------------------------------------------------
class GymnasiumVectorEnv(VectorEnv):
    """`num_envs` copies of a jaxsched env as a `gymnasium.vector.VectorEnv`: each `step` is one jitted,
    vmapped call on the device and one copy of its outputs to the host. Auto-reset is Gymnasium's default,
    `NEXT_STEP` (module docstring). `params`: the env params every copy draws its episodes from;
    `flatten_obs` as the single env's."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, env, num_envs: int, params: Any = None, flatten_obs: bool = False):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.env, self.num_envs, self.render_mode = env, num_envs, None
        self._bridge = _Bridge(env, env.default_params() if params is None else params, flatten_obs, num_envs)
        self.single_observation_space = self._bridge.observation_space
        self.single_action_space = self._bridge.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._key = self._state = self._pending = None

    @classmethod
    def make(cls, name: str, num_envs: int, flatten_obs: bool = False, **overrides) -> GymnasiumVectorEnv:
        """`num_envs` copies of the registered env `name` (`jaxsched.make(name, **overrides)`)."""
        env, params = _make(name, overrides)
        return cls(env, num_envs, params, flatten_obs)

    @property
    def params(self):
        return self._bridge.params

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """`(obs, info)`: every copy starts a new episode. An int `seed` fixes all of them (the copies get
        distinct keys split from it); without one the keys continue from the last."""
        if seed is not None and not isinstance(seed, int | np.integer):
            raise TypeError(f"seed must be an int or None (one seed for the batch), got {seed!r}")
        if seed is not None or self._key is None:
            seed = int(np.random.SeedSequence(seed).generate_state(1)[0]) if seed is None else int(seed)
            self._key = jax.random.key(seed)
        self._key, sub = jax.random.split(self._key)
        obs, self._state, mask = self._bridge.reset(sub, self.params)
        self._pending = jnp.zeros(self.num_envs, bool)
        obs, mask = jax.device_get((obs, mask))
        return self._bridge.obs(obs), {"action_mask": mask}

    def step(self, actions):
        """`(obs, rewards, terminations, truncations, info)`, each batched over the `num_envs` copies; a copy
        that ended on the last call is reset now and its action ignored (`NEXT_STEP`)."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        self._key, self._state, self._pending, out = self._bridge.step(
            self._key, self._state, self._pending, self._bridge.action(actions), self.params
        )
        obs, reward, terminated, truncated, metrics, mask = out
        obs, reward, terminated, truncated, mask = jax.device_get((obs, reward, terminated, truncated, mask))
        done = np.logical_or(terminated, truncated)
        info = {"action_mask": mask}
        if done.any():  # the metrics cross to the host only when some copy's episode ended
            info["episode_metrics"], info["_episode_metrics"] = jax.device_get(metrics), done
        return self._bridge.obs(obs), reward, terminated, truncated, info


# ---- Gymnasium's registry ---------------------------------------------------------------------------------
def register_envs() -> list[str]:
    """Register every jaxsched name with Gymnasium and return the ids: `gymnasium.make("jaxsched/<name>-v0",
    **overrides)` opens a `GymnasiumEnv`, `gymnasium.make_vec(id, num_envs, vectorization_mode=
    "vector_entry_point")` a `GymnasiumVectorEnv`."""
    from jaxsched.envs.registry import registered

    ids = []
    for name in registered():
        env_id = f"{ID_PREFIX}{name}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                env_id,
                entry_point=GymnasiumEnv.make,
                vector_entry_point=GymnasiumVectorEnv.make,
                kwargs={"name": name},
            )
        ids.append(env_id)
    return ids
