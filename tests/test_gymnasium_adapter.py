"""`jaxsched.adapters.gymnasium`: Gymnasium's own `check_env` on every registered name, the single env's
episodes equal the native env's step for step (keys drawn from Gymnasium's seeded `np_random`), the vector
env equal to a loop over copies with `NEXT_STEP` auto-reset, `Dict` actions, the registry, one-line errors."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import gymnasium  # a dev dependency (the `gymnasium` extra); the package never needs it
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.seeding import np_random
from test_env_contract import SMALL_BANKS  # cheap params for every registered name

import jaxsched
from jaxsched.adapters.gymnasium import GymnasiumEnv, GymnasiumVectorEnv, register_envs, to_gymnasium_space
from jaxsched.adapters.gymnax import flatten_observation
from jaxsched.core.spaces import I32_MAX, Box, Discrete, MultiDiscrete

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_LINE = re.compile(r"(?P<name>.+): (?P<n>\d+) episodes, average bounded slowdown (?P<bsld>[\d.]+)")
# What check_env may say of our spaces and nothing else: some fields and the score actions are unbounded.
ALLOWED_WARNINGS = ("maximum value is infinity", "minimum value is -infinity", "symmetric and normalized")


def _small(name: str) -> dict:
    spec = jaxsched.registered()[name]
    return {k: v for k, v in SMALL_BANKS.items() if k in spec.defaults}


@pytest.mark.parametrize("name", sorted(jaxsched.registered()))
def test_check_env_passes_for_every_registered_name(name):
    env = GymnasiumEnv.make(name, **_small(name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    other = [str(w.message) for w in caught if not any(a in str(w.message) for a in ALLOWED_WARNINGS)]
    assert not other, other


def test_spaces_convert_leaf_for_leaf():
    g = to_gymnasium_space
    assert g(Discrete(5)) == gymnasium.spaces.Discrete(5)
    assert g(MultiDiscrete((3, 4))) == gymnasium.spaces.MultiDiscrete([3, 4])
    count = g(Box(-1, I32_MAX, (2,), jnp.int32))
    assert count.dtype == np.int32 and count.low.tolist() == [-1, -1] and int(count.high[0]) == I32_MAX
    flag = g(Box(0, 1, (3,), jnp.bool_))
    assert flag.dtype == np.bool_ and flag.contains(np.array([True, False, True]))
    env, params = jaxsched.make("das-quick", **_small("das-quick"))
    action = g(env.action_space(params))
    assert list(action) == ["priority", "affinity"]
    assert action["affinity"].shape == (env.config.n_slots, env.config.n_machines)


def _keys(seed: int):
    """The JAX keys the single env draws after `reset(seed=seed)`: Gymnasium's `np_random`, as the adapter."""
    rng, _ = np_random(seed)
    while True:
        yield jax.random.key(int(rng.integers(2**31 - 1)))


def _as_dict(obs) -> dict:
    leaves = jax.tree_util.tree_leaves_with_path(obs)
    return {jax.tree_util.keystr(p, simple=True, separator="."): np.asarray(x) for p, x in leaves}


def _assert_obs_equal(ours: dict, native) -> None:
    theirs = _as_dict(native)
    assert list(ours) == list(theirs)
    for k in ours:
        np.testing.assert_array_equal(ours[k], theirs[k], err_msg=k)


def test_the_single_envs_episodes_are_the_natives():
    """Same seed, same actions: every observation, reward and end equals the env's own `step_env` (no
    auto-reset: Gymnasium's caller resets); the terminal step gives the episode's last observation and its
    metrics; `action_masks` is the env's mask; a step after the end needs `reset`. 16-job episodes end;
    with `max_steps` 12 they are truncated."""
    native, params = jaxsched.make("dbf-quick", episode_jobs=16)
    nreset, nstep = jax.jit(native.reset_env), jax.jit(native.step_env)
    nmask, nmetrics = jax.jit(native.action_mask), jax.jit(native.metrics)
    ends = {"terminated": 0, "truncated": 0}
    for p in (params, params.replace(max_steps=jnp.int32(12))):
        env = GymnasiumEnv(native, p)
        for seed in (3, 4):
            keys = _keys(seed)
            obs, info = env.reset(seed=seed)
            nobs, nstate = nreset(next(keys), p)
            _assert_obs_equal(obs, nobs)
            for _ in range(200):
                np.testing.assert_array_equal(env.action_masks(), nmask(nstate, p))
                action = int(np.argmax(info["action_mask"]))
                obs, reward, term, trunc, info = env.step(action)
                nobs, nstate, nreward, nterm, ntrunc, _ = nstep(next(keys), nstate, action, p)
                assert (reward, term, trunc) == (float(nreward), bool(nterm), bool(ntrunc))
                assert env.observation_space.contains(obs)
                _assert_obs_equal(obs, nobs)
                if term or trunc:
                    assert info["episode_metrics"] == jax.tree.map(float, nmetrics(nstate, p))
                    ends["terminated" if term else "truncated"] += 1
                    with pytest.raises(RuntimeError, match="call reset"):
                        env.step(action)
                    break
                assert "episode_metrics" not in info
            else:
                raise AssertionError("no episode ended in 200 steps")
    assert min(ends.values()) >= 1, ends
    # a seed fixes the episode; without one, reset continues the seeded stream (a new episode)
    env = GymnasiumEnv(native, params)
    a, b, c = env.reset(seed=9)[0], env.reset(seed=9)[0], env.reset()[0]
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a)


def test_the_vector_env_is_a_loop_of_envs_with_next_step_autoreset():
    """4 copies against a plain loop over copies of the env's own `reset_env` / `step_env` with the keys the
    adapter splits: a copy that ends returns its last observation and its metrics (valid where
    `_episode_metrics`); on the next call it is reset (reward 0, no end, its action ignored). Everything
    lies in the batched spaces; both kinds of end are seen and the copies end at different calls."""
    native, params = jaxsched.make("dbf-quick", episode_jobs=16)
    n, p = 4, params.replace(max_steps=jnp.int32(40))
    venv = GymnasiumVectorEnv(native, n, p)
    reset, step, metrics = jax.jit(native.reset_env), jax.jit(native.step_env), jax.jit(native.metrics)
    key = jax.random.key(5)
    key, sub = jax.random.split(key)
    obs, info = venv.reset(seed=5)
    ref = [reset(k, p) for k in jax.random.split(sub, n)]  # (obs, state) per copy
    pending = [False] * n
    for i in range(n):
        _assert_obs_equal({k: v[i] for k, v in obs.items()}, ref[i][0])
    assert venv.observation_space.contains(obs) and info["action_mask"].shape == (n, native.fwd_action + 1)
    ends = {"terminated": 0, "truncated": 0, "calls": 0}
    for _ in range(120):
        actions = np.argmax(info["action_mask"], axis=1).astype(np.int32)
        actions[1] = native.fwd_action  # one copy that only forwards: cut short by max_steps
        obs, rewards, terms, truncs, info = venv.step(actions)
        assert venv.observation_space.contains(obs)
        key, k_reset, k_step = jax.random.split(key, 3)
        rkeys, skeys = jax.random.split(k_reset, n), jax.random.split(k_step, n)
        for i in range(n):
            if pending[i]:
                ref[i] = reset(rkeys[i], p)
                want = (0.0, False, False)
            else:
                nobs, nstate, r, te, tr, _ = step(skeys[i], ref[i][1], jnp.int32(actions[i]), p)
                ref[i] = (nobs, nstate)
                want = (float(r), bool(te), bool(tr))
            assert (float(rewards[i]), bool(terms[i]), bool(truncs[i])) == want, i
            _assert_obs_equal({k: v[i] for k, v in obs.items()}, ref[i][0])
            pending[i] = want[1] or want[2]
            if pending[i]:
                for k, v in metrics(ref[i][1], p).items():
                    assert info["episode_metrics"][k][i] == float(v), k
                ends["terminated" if want[1] else "truncated"] += 1
        done = terms | truncs
        assert ("episode_metrics" in info) == bool(done.any())
        if done.any():
            np.testing.assert_array_equal(info["_episode_metrics"], done)
            ends["calls"] += 1
    assert min(ends.values()) >= 1 and ends["calls"] > 1, ends


def test_dict_actions_flat_observations_and_errors():
    """DAS's `GPUCloudAction` goes in as a `Dict` and reaches the env as the pytree (the same step as the
    native env's); `flatten_obs` gives the gymnax adapter's `f32[D]`; bad input is one clear error."""
    native, params = jaxsched.make("das-quick", **_small("das-quick"))
    venv = GymnasiumVectorEnv(native, 2, params)
    venv.reset(seed=0)
    venv.action_space.seed(0)
    action = venv.action_space.sample()
    assert isinstance(action, dict) and set(action) == {"priority", "affinity"}
    obs, rewards, *_ = venv.step(action)
    assert rewards.shape == (2,) and venv.observation_space.contains(obs)
    with pytest.raises(KeyError, match=r"missing the field\(s\) \['affinity'\]"):
        venv.step({"priority": action["priority"]})
    with pytest.raises(TypeError, match="one seed for the batch"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="num_envs must be >= 1, got 0"):
        GymnasiumVectorEnv(native, 0, params)
    with pytest.raises(RuntimeError, match="call reset"):
        GymnasiumVectorEnv(native, 2, params).step(action)
    with pytest.raises(ValueError, match="render_mode must be None"):
        GymnasiumEnv(native, params, render_mode="human")

    flat = GymnasiumEnv(native, params, flatten_obs=True)
    obs, _ = flat.reset(seed=1)
    nobs, _ = native.reset_env(next(_keys(1)), params)
    assert isinstance(flat.observation_space, gymnasium.spaces.Box) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs, flatten_observation(nobs))
    assert flat.observation_space.contains(obs)


def test_gymnasium_make_and_make_vec_open_every_registered_name():
    ids = register_envs()
    assert ids == [f"jaxsched/{name}-v0" for name in jaxsched.registered()]
    assert register_envs() == ids  # registering twice is harmless
    env = gymnasium.make("jaxsched/dbf-quick-v0", episode_jobs=16)
    assert isinstance(env.unwrapped, GymnasiumEnv) and env.unwrapped.params.episode_jobs == 16
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    venv = gymnasium.make_vec("jaxsched/dbf-quick-v0", num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(venv, GymnasiumVectorEnv) and venv.num_envs == 3
    assert venv.reset(seed=0)[0]["mask"].shape == (3, venv.env.fwd_action + 1)


def test_the_docs_numpy_loop_runs_and_shortest_first_beats_random(capsys):
    """The worked example of `docs/adapters.md`, run as written: both policies finish episodes through the
    vector env, and shortest-requested-time-first has the lower bounded slowdown."""
    text = (ROOT / "docs/adapters.md").read_text()
    block = re.search(r"```python\n(.*?)```", text[text.index("<!-- example:gymnasium-loop -->") :], re.S)
    exec(compile(block.group(1), "docs/adapters.md", "exec"), {"__name__": "docs_example"})
    lines = capsys.readouterr().out.strip().splitlines()
    found = {m["name"].strip(): (int(m["n"]), float(m["bsld"])) for m in map(EXAMPLE_LINE.match, lines)}
    assert set(found) == {"shortest first", "random valid"} and min(n for n, _ in found.values()) > 100
    assert found["shortest first"][1] < found["random valid"][1], found
