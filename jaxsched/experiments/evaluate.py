"""Run any policy (heuristic or learned, `policy(params, obs, key) -> action`) on an env for whole
episodes and collect the env's end-of-episode metrics.

Episodes run through `core.episode.run_episode` (one jitted `lax.while_loop`), `vmap`ped over episode
keys: the same keys give every policy the same episodes (the reset draws the workload window from the key).
Held-out evaluations pin the windows instead (`env.episode`, `spread_windows`): keys drawn at random
repeat windows (32 keys over 32 windows hit about 20 of them), which would count one window as several
pairs in a paired test. `episodes_program` is every system's compiled evaluation program, in one cache;
`run_policies` runs several heuristics as one of them; `compare_learners` attaches the paired tests.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.core import episode
from jaxsched.experiments.stats import best_of, paired_tests


def run_episode(env, env_params, policy, policy_params, key: jax.Array) -> dict[str, jax.Array]:
    """One episode of `policy(params, obs, key)` to its end; returns `env.metrics` plus `return`."""
    return episode.run_episode(env, env_params, episode.stateless(policy, policy_params), key)


def eval_episode_keys(seed: int, episodes: int) -> jax.Array:
    """The keys of held-out episodes `0 .. episodes-1`: `purpose_key(seed, EVAL_TAG)` folded with the
    episode number, the same for every policy and training seed (paired evaluations)."""
    from jaxsched.experiments.config import EVAL_TAG, purpose_key

    root = purpose_key(seed, EVAL_TAG)
    return jax.vmap(lambda e: jax.random.fold_in(root, e))(jnp.arange(episodes))


def spread_windows(n_windows: int, episodes: int) -> np.ndarray:
    """`i32[episodes]`: distinct windows of `0 .. n_windows-1`, evenly spread (all of them, in order, when
    `episodes == n_windows`). A held-out episode is played once: more episodes than windows is an error."""
    if not 1 <= episodes <= n_windows:
        raise ValueError(
            f"eval.episodes must be in 1..{n_windows} (the held-out windows; each is played once), "
            f"got {episodes}"
        )
    return np.round(np.linspace(0, n_windows - 1, episodes)).astype(np.int32)


_PROGRAMS: dict = {}  # every system's compiled evaluation programs (`episodes_program`)


def switched(policies) -> Callable:
    """Parameter-free `policies` (a sequence) as one policy whose params are a branch index
    (`lax.switch`): `vmap`ped over `jnp.arange(len(policies))`, several heuristics are one program."""
    branches = [lambda obs, k, p=p: p(None, obs, k) for p in policies]
    return lambda index, obs, k: jax.lax.switch(index, branches, obs, k)


def episodes_program(cache_key: tuple, env, policy, seeds: bool = False, batched: tuple[str, ...] = ()):
    """Jitted `fn(lead, params, episodes, keys) -> {metric: [L, (S,) E]}`: `policy(lead[l], obs, key)` on
    the held-out episodes `episodes` (`i32[E]`, each pinned by `env.episode`; None: each key draws its
    own, as in training) with `keys` `[E]` — `[S, E]` with `seeds` (evaluation seeds of a stochastic env)
    — `vmap`ped over `lead` `[L]` (the training seeds' network params, or `switched`'s branch indices).

    The env params (the bank) are an argument, so another bank of the same shapes runs without compiling
    again. `batched` names params fields with a leading candidate axis `[C]` (`vmap`ped, every other field
    shared; outputs `[C, L, ...]`). Cached by `cache_key` (what identifies `policy`) with the env's type,
    config, `seeds` and `batched`: one cache for every system."""
    key = (*cache_key, type(env), env.config, seeds, batched)
    if key not in _PROGRAMS:

        def one(lead, params, i, k):
            return run_episode(env, params if i is None else env.episode(params, i), policy, lead, k)

        def fn(lead, params, episodes, keys):
            f = jax.vmap(one, in_axes=(None, None, None if episodes is None else 0, 0))  # episodes
            if seeds:
                f = jax.vmap(f, in_axes=(None, None, None, 0))  # evaluation seeds: keys [S, E]
            f = jax.vmap(f, in_axes=(0, None, None, None))  # lead
            if batched:
                axes = jax.tree.map(lambda _: None, params).replace(**dict.fromkeys(batched, 0))
                f = jax.vmap(f, in_axes=(None, axes, None, None))  # candidates
            return f(lead, params, episodes, keys)

        _PROGRAMS[key] = jax.jit(fn)
    return _PROGRAMS[key]


def run_policies(
    env, params, policies: dict, episodes, keys, cache_key: tuple = (), seeds: bool = False,
    batched: tuple[str, ...] = (),
) -> dict[str, dict[str, np.ndarray]]:  # fmt: skip
    """Parameter-free policies (`{name: policy}`) on the held-out episodes `episodes` as one program
    (`switched`, `episodes_program`; `cache_key`: whatever else identifies the env). Returns `{name:
    {metric: [(C,) (S,) E, ...]}}`."""
    names = tuple(policies)
    policy = switched(list(policies.values()))
    fn = episodes_program(("switched", tuple(policies.items()), *cache_key), env, policy, seeds, batched)
    out = jax.device_get(fn(jnp.arange(len(names)), params, jnp.asarray(episodes, jnp.int32), keys))
    axis = 1 if batched else 0
    return {n: {k: np.take(np.asarray(v), i, axis=axis) for k, v in out.items()} for i, n in enumerate(names)}


def fixed_keys(episodes: int) -> jax.Array:
    """`[episodes]` copies of `key(0)`: the keys of a deterministic env and policy."""
    return jax.vmap(lambda _: jax.random.key(0))(jnp.arange(episodes))


def evaluate_policy(env, env_params, policy, keys: jax.Array, policy_params=None) -> dict[str, np.ndarray]:
    """Metrics of one episode per key, as numpy arrays `[num_keys]`."""
    fn = jax.jit(jax.vmap(lambda k: run_episode(env, env_params, policy, policy_params, k)))
    return {k: np.asarray(v) for k, v in fn(keys).items()}


def summarize(per_episode: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """`{metric: (mean, std)}` over episodes."""
    return {k: (float(np.mean(v)), float(np.std(v))) for k, v in per_episode.items()}


def evaluate_policies(
    env, env_params, policies: dict, keys: jax.Array, windows=None
) -> dict[str, dict[str, np.ndarray]]:
    """Several parameter-free policies (heuristics) on the same episodes, compiled as one program.

    The policies become branches of one `lax.switch`, `vmap`ped over (policy, episode): one compile
    instead of one per policy. With `windows` (`i32[num_keys]`), episode `i` plays window `windows[i]`
    (`env.episode`) with key `keys[i]`. Returns `{policy name: {metric: [num_keys]}}`.
    """
    names = list(policies)
    policy = switched([policies[n] for n in names])

    def one(index, key, window):
        params = env_params if window is None else env.episode(env_params, window)
        return run_episode(env, params, policy, index, key)

    windows = None if windows is None else jnp.asarray(windows, jnp.int32)
    axis = None if windows is None else 0
    fn = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0, axis)), in_axes=(0, None, None)))
    out = fn(jnp.arange(len(names)), keys, windows)
    return {n: {k: np.asarray(v[i]) for k, v in out.items()} for i, n in enumerate(names)}


def load_evaluated(path, system):
    """`(config, {policy: {metric: {...}}})` of a trained and evaluated config of `system` (an
    `experiments.system.System`; what its `jaxsched table` reads): the run's eval.json (`jaxsched eval
    CONFIG --checkpoint RUN`), completed by each learner's own `<run dir>/<learner>/eval.json` for a policy
    missing there. A config of another kind is a `ValueError` naming its `kind:`."""
    import json

    from jaxsched.experiments.config import load_config
    from jaxsched.experiments.train import EVAL_FILE

    cfg = load_config(path, {system.kind: system.config})
    results: dict = {}
    for eval_path in [cfg.run_dir / EVAL_FILE] + [d / EVAL_FILE for d in system.run_dirs(cfg).values()]:
        if eval_path.is_file():
            for policy, entry in json.loads(eval_path.read_text()).items():
                results.setdefault(policy, entry)
    if not results:
        raise FileNotFoundError(
            f"{path}: no {cfg.run_dir / EVAL_FILE}; run `jaxsched train {path}` then "
            f"`jaxsched eval {path} --checkpoint {cfg.run_dir}` first"
        )
    return cfg, results


def compare_learners(
    learned: dict, baselines: dict, best_metric: str, lower_is_better: bool, paired: tuple[str, ...],
    headline: str | None = None,
) -> str | None:  # fmt: skip
    """Attach, in place, the paired tests (`stats.paired_tests`, over the distinct test episodes) every
    evaluated learner gets: `vs_best` against the best baseline by `best_metric`, and for `headline` (the
    paper's agent) `vs_<label>` against each other learner. `learned`, `baselines`: `{label: {metric:
    run_stats}}`. Returns the best baseline's name (None without baselines)."""
    best = best_of(baselines, list(baselines), best_metric, lower_is_better) if baselines else None
    for res in learned.values():
        if best is not None:
            for key, test in paired_tests(res, baselines[best], best, paired).items():
                res[key]["vs_best"] = test
    if headline in learned:
        head = learned[headline]
        for label, res in learned.items():
            if label != headline:
                for key, test in paired_tests(head, res, label, paired).items():
                    head[key][f"vs_{label}"] = test
    return best


def print_comparisons(learned: dict, paired: tuple[str, ...], lower_is_better: bool) -> None:
    """One line per paired test `compare_learners` attached: the ratio in the direction where > 1 means
    the learner is better, and the Wilcoxon p over its episodes."""
    for label, res in learned.items():
        for field in sorted(k for k in res[paired[0]] if k.startswith("vs_")):
            for key in paired:
                t = res[key][field]
                ratio = t["ratio"] if lower_is_better else 1 / max(t["ratio"], 1e-9)
                print(
                    f"{label} vs {t['against']} ({key}): ×{ratio:.3f} (> 1: {label} better), "
                    f"Wilcoxon p = {t['p']:.3g} over {t['n']} episodes"
                )
