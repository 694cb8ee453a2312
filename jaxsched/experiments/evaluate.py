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

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.core import episode
from jaxsched.experiments.live import live
from jaxsched.experiments.report import print_metric_table, write_json
from jaxsched.experiments.stats import best_of, favouring, paired_tests, run_stats, units_tested
from jaxsched.experiments.train import CHECKPOINT_DIR, EVAL_FILE, trained_learners


def run_episode(env, env_params, policy, policy_params, key: jax.Array) -> dict[str, jax.Array]:
    """One episode of `policy(params, obs, key)` to its end; returns `env.metrics` plus `return`."""
    return episode.run_episode(env, env_params, episode.stateless(policy, policy_params), key)


def eval_episode_keys(seed: int, episodes: int) -> jax.Array:
    """The keys of held-out episodes `0 .. episodes-1`: `purpose_key(seed, EVAL_TAG)` folded with the
    episode number, the same for every policy and training seed (paired evaluations)."""
    from jaxsched.core.keys import EVAL_TAG, purpose_key

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


def episodes_program(
    cache_key: tuple, env, policy, seeds: bool = False, batched: tuple[str, ...] = (), episode=None,
    keys_per_lead: bool = False,
):  # fmt: skip
    """Jitted `fn(lead, params, episodes, keys) -> {metric: [L, (S,) E]}`: `policy(lead[l], obs, key)` on
    the held-out episodes `episodes` (`i32[E]`, each pinned by `env.episode`; None: each key draws its
    own, as in training) with `keys` `[E]` — `[S, E]` with `seeds` (evaluation seeds of a stochastic env),
    `[L, E]` with `keys_per_lead` (lead l's own keys) — `vmap`ped over `lead` `[L]` (the training seeds'
    network params, or `switched`'s branch indices). `episode(lead, params, key) -> metrics` replaces
    `policy` for a learner that plays its own episodes (e.g. one carrying state between its calls).

    The env params (the bank) are an argument, so another bank of the same shapes runs without compiling
    again. `batched` names params fields with a leading candidate axis `[C]` (`vmap`ped, every other field
    shared; outputs `[C, L, ...]`). Cached by `cache_key` (what identifies `policy` or `episode`) with the
    env's type, config and the axes: one cache for every system."""
    key = (*cache_key, type(env), env.config, seeds, batched, keys_per_lead, episode is None)
    if key not in _PROGRAMS:
        play = episode or (lambda lead, params, k: run_episode(env, params, policy, lead, k))

        def one(lead, params, i, k):
            return play(lead, params if i is None else env.episode(params, i), k)

        def fn(lead, params, episodes, keys):
            f = jax.vmap(one, in_axes=(None, None, None if episodes is None else 0, 0))  # episodes
            if seeds:
                f = jax.vmap(f, in_axes=(None, None, None, 0))  # evaluation seeds: keys [S, E]
            f = jax.vmap(f, in_axes=(0, None, None, 0 if keys_per_lead else None))  # lead
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


def load_evaluated(path, system, overrides=()):
    """`(config, {policy: {metric: {...}}})` of a trained and evaluated config of `system` (an
    `experiments.system.System`; what its `jaxsched table` reads), `overrides` (`KEY=VALUE`) applied: the
    run's eval.json (`jaxsched eval CONFIG --checkpoint RUN`), completed by each learner's own `<run
    dir>/<learner>/eval.json` for a policy missing there (a learner's record, `Evaluation.record`, gives
    its `results`). A config of another kind is a `ValueError` naming its `kind:`."""
    import json

    from jaxsched.experiments.config import load_config

    cfg = load_config(path, {system.kind: system.config}, overrides)
    own = [(label, d / EVAL_FILE) for label, d in system.run_dirs(cfg).items()]
    found = [(None, cfg.run_dir / EVAL_FILE), *own]
    results: dict = {}
    for label, eval_path in found:
        if eval_path.is_file():
            payload = json.loads(eval_path.read_text())
            if label is not None and "results" in payload:  # a learner's own record
                payload = {label: payload["results"]}
            for policy, entry in payload.items():
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
        for test in sorted(k for k in res[paired[0]] if k.startswith("vs_")):
            for key in paired:
                t = res[key][test]
                ratio = favouring(t, lower_is_better)
                print(
                    f"{label} vs {t['against']} ({key}): ×{ratio:.3f} (> 1: {label} better), "
                    f"Wilcoxon p = {t['p']:.3g} {units_tested(t)}"
                )


# ---- the one held-out evaluation path (`jaxsched eval`) ----------------------------------------------


def first_episodes(cfg, n_test: int, episodes: int | None) -> np.ndarray:
    """`i32[E]`: test episodes `0 .. E-1`, E = `episodes`, else `cfg.eval.episodes`, else all `n_test`."""
    n = min(n_test, cfg.eval.episodes or n_test) if episodes is None else int(episodes)
    if not 1 <= n <= n_test:
        raise ValueError(f"episodes must be in 1..{n_test} (the test episodes), got {n}")
    return np.arange(n, dtype=np.int32)


@dataclass(frozen=True)
class Evaluation:
    """What a system declares for `jaxsched eval`; `evaluate` does the rest, the same for every system.
    Every callable takes the system's config (its `eval:` section holds `seed` and `baselines`)."""

    learner: Any  # the system's `experiments.learner.Learner` (its `build` gives `(env, train, test, ...)`)
    labels: Mapping[str, str]  # learner name → its label in the results (the names `--checkpoint` accepts)
    listed_in: str  # the config key listing the learners, for error messages (e.g. "agent.learners")
    n_test: Callable[[Any, Any], int]  # n_test(cfg, test_params): how many test episodes there are
    # baselines(cfg, env) -> [(env, {label: parameter-free policy}, cache key)]: each group one program
    baselines: Callable[[Any, Any], list]
    # policy(cfg, name, env) -> (cache key, policy(params, obs, key)): learner `name`'s evaluated policy
    # (None with `play`)
    policy: Callable[[Any, str, Any], tuple] | None
    metrics: tuple  # `Metric`s: the printed table's columns (and the paired tests' directions)
    title: Callable[[Any, str, int], str]  # title(cfg, "what was trained", episodes): the table's title
    paired: tuple[str, ...] = ()  # metrics with paired tests (`compare_learners`); () prints none
    best_metric: str = ""  # the metric that picks the best baseline for `vs_best`
    headline: str | None = None  # the paper's agent's label: tested against each other learner
    # episodes(cfg, n_test, episodes) -> i32[E]: the test episodes played (default `first_episodes`)
    episodes: Callable[[Any, int, int | None], np.ndarray] = first_episodes
    keys: Callable[[Any, int], jax.Array] = lambda cfg, n: eval_episode_keys(cfg.eval.seed, n)  # [E]
    # restore(cfg, name, env, train_params) -> (policy params [S, ...], update or [S] updates)
    restore: Callable[..., tuple] | None = None
    # policy_params(runner) -> what `policy` takes, from a restored runner (when `restore` is None)
    policy_params: Callable[[Any], Any] = lambda runner: runner.params
    env: Callable[[Any, Any], Any] = lambda cfg, env: env  # the env evaluated (e.g. one reporting more)
    best_among: Callable[[Any, dict], list] | None = None  # the labels `vs_best` picks from (default: all)
    arrays: tuple[str, ...] = ()  # outputs that are per-job arrays: `<json stem>_<key>.npz`, not stats
    # build(cfg) -> (env, train_params, test_params) (default: the learner's `build`, its first three)
    build: Callable[[Any], tuple] | None = None
    seeds: bool = (
        False  # `keys` are `[S, E]`: evaluation seeds of a stochastic env, every policy played S times
    )
    # play(cfg, name, env, params, policy_params [S], episodes, keys) -> {metric: [S, E]}: a learner that
    # is not a `policy(params, obs, key)` (e.g. one carrying state between its calls, DAS's)
    play: Callable[..., dict] | None = None
    values: bool = False  # each metric's stats also hold its `values` `[runs][E]`
    # record(cfg, name, stats, update, episodes) -> a learner's own `eval.json` (default: its stats beside
    # the baselines')
    record: Callable[..., dict] | None = None
    display: Mapping[str, str] = field(default_factory=dict)  # a policy's name in the printed table

    def metric(self, key: str):
        return next((m for m in self.metrics if m.key == key), None)


def play_baselines(ev: Evaluation, cfg, env, params, episodes, keys) -> dict[str, dict[str, np.ndarray]]:
    """Every baseline group of `ev` on `episodes` of `params`: `{label: {metric: [1 (S with `seeds`), E,
    ...]}}`."""
    out = {}
    for group_env, policies, cache_key in ev.baselines(cfg, env):
        per = run_policies(group_env, params, policies, episodes, keys, tuple(cache_key), ev.seeds)
        out |= {label: {k: v if ev.seeds else v[None] for k, v in m.items()} for label, m in per.items()}
    return out


def play_learner(ev: Evaluation, cfg, name: str, env, params, policy_params, episodes, keys) -> dict:
    """Learner `name`'s policy for each seed of `policy_params` (`[S, ...]`, placed over the devices) on
    `episodes` of `params`: `{metric: [S, E, ...]}` (numpy)."""
    from jaxsched.experiments.sharding import seed_sharding, shard_seeds

    if ev.play is not None:
        return ev.play(cfg, name, env, params, policy_params, episodes, keys)
    cache_key, policy = ev.policy(cfg, name, env)
    n_seeds = jax.tree.leaves(policy_params)[0].shape[0]
    policy_params = shard_seeds(policy_params, seed_sharding(n_seeds))
    fn = episodes_program(tuple(cache_key), env, policy)
    out = fn(policy_params, params, jnp.asarray(episodes, jnp.int32), keys)
    return {k: np.asarray(v) for k, v in jax.device_get(out).items()}


def restore_policy(ev: Evaluation, cfg, name: str, env, train_params) -> tuple:
    """`(policy params [S, ...], update)` of learner `name` (`ev.restore`, or its latest checkpoint)."""
    from jaxsched.experiments.learner import restore_learner

    if ev.restore is not None:
        return ev.restore(cfg, name, env, train_params)
    runner, step = restore_learner(ev.learner, cfg, name, env, train_params)
    return ev.policy_params(runner), step


def trained_names(ev: Evaluation, cfg, checkpoint) -> tuple[list[str], Any, bool]:
    """`(learners, cfg of the run, one learner's folder?)` behind `--checkpoint` (a run directory or its
    `checkpoints/`; one learner's folder; a config's only learner's run, which is the run directory)."""
    path = Path(checkpoint)
    path = path.parent if path.name == CHECKPOINT_DIR else path
    listed = tuple(ev.learner.names(cfg))
    if len(listed) == 1 and ev.learner.run_dir(cfg, listed[0]) == cfg.run_dir:  # the run is the learner
        if not (path / CHECKPOINT_DIR).is_dir():
            raise FileNotFoundError(f"no checkpoints in {path} (expected {path / CHECKPOINT_DIR})")
        return list(listed), cfg.replace(out_dir=str(path.parent), name=path.name), True
    one = (path / CHECKPOINT_DIR).is_dir()
    names, root = trained_learners(path, listed, ev.labels, "learner", ev.listed_in)
    return names, cfg.replace(out_dir=str(root.parent), name=root.name), one


def summarize_runs(ev: Evaluation, per: dict) -> tuple[dict, dict]:
    """`{metric: [runs, E, ...]}` → `(stats, arrays)`: `run_stats` of each scalar metric, and the
    per-job outputs of `ev.arrays` as they are."""
    stats = {k: run_stats(v) for k, v in per.items() if k not in ev.arrays}
    if ev.values:
        for k, entry in stats.items():
            entry["values"] = np.atleast_2d(np.asarray(per[k], np.float64)).tolist()
    return stats, {k: np.asarray(per[k]) for k in ev.arrays}


def evaluate(ev: Evaluation, cfg, checkpoint=None, episodes: int | None = None, json_path=None) -> dict:
    """`jaxsched eval`: the baselines and, with `checkpoint`, every trained learner there, on the same
    held-out episodes and keys. Returns `{label: {metric: {mean, std, per_seed, per_episode[, vs_best,
    vs_<label>]}}}` (learners first). Written to each learner's `<run dir>/eval.json` (with the baselines)
    and, unless `checkpoint` is one learner's folder, all of them to the run's `eval.json` (`json_path`:
    that one file instead; `-`: stdout); the `ev.arrays` outputs beside each as `<stem>_<key>.npz`."""
    env, train_params, test_params = (ev.learner.build if ev.build is None else ev.build)(cfg)[:3]
    idx = ev.episodes(cfg, ev.n_test(cfg, test_params), episodes)
    keys = ev.keys(cfg, len(idx))
    names, one = [], False
    if checkpoint is not None:
        names, cfg, one = trained_names(ev, cfg, checkpoint)
    played = ev.env(cfg, env)
    results, arrays = {}, {}
    with live(f"{cfg.name}: the baselines on {len(idx)} test episodes (compiled on first use)"):
        baselines = play_baselines(ev, cfg, played, test_params, idx, keys)
    for label, per in baselines.items():
        results[label], arrays[label] = summarize_runs(ev, per)
    if not names and not results:
        raise ValueError("nothing to evaluate: no --checkpoint and the eval section lists no baselines")
    learned, steps, own = {}, {}, {}
    for name in names:
        label = ev.labels[name]
        with live(f"{cfg.name}: {label} on {len(idx)} test episodes (restored, compiled on first use)"):
            policy_params, steps[label] = restore_policy(ev, cfg, name, env, train_params)
            per = play_learner(ev, cfg, name, played, test_params, policy_params, idx, keys)
        learned[label], arrays[label] = summarize_runs(ev, per)
        own[name] = {label: learned[label]} | results  # the learner's own eval.json
        if ev.record is not None:
            own[name] = ev.record(cfg, name, learned[label], steps[label], len(idx))
    if ev.paired:
        among = list(results) if ev.best_among is None else ev.best_among(cfg, results)
        best = {label: results[label] for label in among}
        lower = ev.metric(ev.best_metric).lower_is_better
        compare_learners(learned, best, ev.best_metric, lower, ev.paired, ev.headline)
    everything = learned | results
    if json_path == "-":
        print(json.dumps(everything, indent=2))
        return everything
    _print(ev, cfg, learned, results, steps, len(idx))
    if json_path:
        targets = {Path(json_path): everything}
    else:
        targets = {ev.learner.run_dir(cfg, n) / EVAL_FILE: own[n] for n in names}
        if not one:  # one learner's evaluation leaves the run's combined file as it was
            targets[cfg.run_dir / EVAL_FILE] = everything
    for path, payload in targets.items():
        _write(path, payload, {k: arrays[k] for k in payload if k in arrays}, ev.arrays)
    return everything


def _write(path: Path, payload: dict, arrays: dict, keys: tuple[str, ...]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(str(path), payload)
    for key in keys:  # e.g. every job's JCT: `<stem>_jct.npz`, one array per label
        per_label = {label: outputs[key] for label, outputs in arrays.items()}
        np.savez_compressed(path.with_name(f"{path.stem}_{key}.npz"), **per_label)
    print(f"results: {path}")


def _print(ev: Evaluation, cfg, learned: dict, results: dict, steps: dict, episodes: int) -> None:
    rows = {ev.display.get(name, name): {m.key: (r[m.key]["mean"], r[m.key]["std"]) for m in ev.metrics}
            for name, r in (learned | results).items()}  # fmt: skip
    trained = ", ".join(f"{label} {_updates(s)}" for label, s in steps.items()) or "baselines only"
    print_metric_table(rows, ev.metrics, title=ev.title(cfg, trained, episodes))
    for key in ev.paired:
        print_comparisons(learned, (key,), ev.metric(key).lower_is_better)


def _updates(step) -> str:
    step = step["update"] if isinstance(step, dict) else step  # a selection record: its updates
    if isinstance(step, list) and len(set(step)) == 1:
        step = step[0]  # every seed's last checkpoint
    return f"updates {step} (selected per seed)" if isinstance(step, list) else f"update {step}"


# ---- replaying trained runs on other banks (the paper tables' sweeps) -----------------------------------


@dataclass
class Replay:
    """A config's trained learners (`policies`: each seed's policy params, `{name: [S, ...]}`) and its
    baselines, replayed on other params of the same env (a test bank regenerated at another load, job
    count or arrival rate; padded to the same arrays, the programs compile once) with `jaxsched eval`'s
    episodes and keys."""

    ev: Evaluation
    cfg: Any
    env: Any  # the env played (`ev.env`): its params may come from any bank of its shapes
    test_params: Any  # the config's own test bank
    policies: dict
    steps: dict
    episodes: np.ndarray  # i32[E]: the test episodes played
    keys: jax.Array  # [E] (or [S, E] with `ev.seeds`)

    @classmethod
    def of(cls, ev: Evaluation, cfg) -> Replay:
        """Every learner of `cfg` that has checkpoints (its last or selected parameters, as `jaxsched eval`
        restores them), on `cfg.eval.episodes` test episodes."""
        env, train_params, test_params = (ev.learner.build if ev.build is None else ev.build)(cfg)[:3]
        idx = ev.episodes(cfg, ev.n_test(cfg, test_params), None)
        policies, steps = {}, {}
        for name in ev.learner.names(cfg):
            if (ev.learner.run_dir(cfg, name) / CHECKPOINT_DIR).is_dir():
                policies[name], steps[name] = restore_policy(ev, cfg, name, env, train_params)
        return cls(ev, cfg, ev.env(cfg, env), test_params, policies, steps, idx, ev.keys(cfg, len(idx)))

    def run(self, params, learners=(), baselines=(), **eval_changes) -> tuple[dict, dict]:
        """The baselines `baselines` (names of the config's `eval.baselines` kind; `eval_changes`: other
        fields of its eval section for them), then those of `learners` that were trained, on `params`:
        `({label: stats}, {label: {array output: [runs, E, ...]}})` (`summarize_runs`)."""
        import dataclasses

        cfg, ev, env, idx, keys = self.cfg, self.ev, self.env, self.episodes, self.keys
        per = {}
        with live(f"{cfg.name}: replaying {', '.join([*baselines, *learners])} on {len(idx)} episodes"):
            if baselines:
                section = dataclasses.replace(cfg.eval, baselines=tuple(baselines), **eval_changes)
                per = play_baselines(ev, cfg.replace(eval=section), env, params, idx, keys)
            for name in learners:
                if name in self.policies:
                    per[ev.labels[name]] = play_learner(
                        ev, cfg, name, env, params, self.policies[name], idx, keys
                    )
        out = {label: summarize_runs(ev, m) for label, m in per.items()}
        return {k: s for k, (s, _) in out.items()}, {k: a for k, (_, a) in out.items()}
