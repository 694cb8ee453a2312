"""Run configs: YAML → frozen dataclasses, strictly.

A config has the sections below (every field optional; defaults are the paper's, `ppo` defaults to
`dbf_ppo_config()`):

    name: dbf_m10_9_1     # run name; the run directory is out_dir/name (default: the file's stem)
    seed: 0               # root of the training seeds: jax.random.split(key(seed), num_seeds)
    num_seeds: 3          # seeds trained together (jax.vmap) in one program
    out_dir: runs
    env:      {n_cores, window, tail, queue_capacity, episode_jobs, reward_weights, max_steps}
    workload: {source: lublin | swf, path, whole_sample, interactive, load_scale, train_episodes,
               test_episodes, jobs_per_episode, bank_seed, test_seed, test_fraction}
    ppo:      {any PPOConfig field}
    eval:     {episodes, greedy, baselines, baseline_window, seed}

Unknown keys at any level are an error naming the dotted key and the closest valid one; a value of the
wrong type is an error naming the key and the expected type; a key given twice in one mapping is an error
naming the file, the key and both lines (`load_yaml`; PyYAML alone keeps the last one silently), and so is
a key overridden twice. `load_config(path)` reads a file,
`config_from_dict(d)` a mapping, `RunConfig.to_dict()` gives a mapping `config_from_dict` reads back.
`build_run(cfg)` makes the env, the training and held-out test params and the PPO config.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jaxsched.agents.dbf import REWARD_WEIGHTS, dbf_ppo_config
from jaxsched.agents.ppo import PPOConfig

SOURCES = ("lublin", "swf")

# Training seeds are `jax.random.split(key(seed), num_seeds)`, i.e. `fold_in(key(seed), i)` for small i.
# Workload and evaluation keys fold a large purpose tag into their own seed instead, so no key is ever
# used twice, even when `seed`, `bank_seed`, `test_seed` and `eval.seed` are equal.
TRAIN_BANK_TAG = 1_000_003
TEST_BANK_TAG = 1_000_033
EVAL_TAG = 1_000_037


def purpose_key(seed: int, tag: int):
    """The root key of one purpose (a workload bank, the evaluation episodes): `fold_in(key(seed), tag)`."""
    import jax

    return jax.random.fold_in(jax.random.key(seed), tag)


# Common spellings of a field, so a near-miss suggests the right key (e.g. learning_rate -> lr).
ALIASES = {
    "lr": ("learning_rate", "lr_rate", "step_size"),
    "clip_eps": ("clip", "clip_range", "clip_coef", "clip_param", "epsilon"),
    "ent_coef": ("entropy_coef", "entropy", "entropy_coeff", "beta"),
    "vf_coef": ("value_coef", "value_loss_coef", "vf_coeff", "critic_coef"),
    "gamma": ("discount", "discount_factor"),
    "gae_lambda": ("lambda", "lam", "gae_lam"),
    "num_envs": ("n_envs", "envs", "num_workers"),
    "num_steps": ("n_steps", "rollout_len", "rollout_length", "horizon"),
    "total_updates": ("updates", "num_updates", "n_updates", "iterations"),
    "updates_per_chunk": ("chunk", "chunk_size", "updates_per_call"),
    "update_epochs": ("epochs", "n_epochs", "num_epochs", "ppo_epochs"),
    "num_minibatches": ("minibatches", "n_minibatches", "nminibatches"),
    "hidden": ("hidden_sizes", "hidden_layers", "layers", "net_arch"),
    "max_grad_norm": ("grad_clip", "clip_grad_norm"),
    "n_cores": ("cores", "num_cores", "nodes", "n_nodes"),
    "window": ("window_size", "m"),
    "tail": ("window_tail", "tail_size"),
    "episode_jobs": ("jobs", "episode_length", "jobs_per_episode"),
    "num_seeds": ("seeds", "n_seeds"),
    "out_dir": ("output_dir", "outdir", "runs_dir"),
}


@dataclass(frozen=True)
class EnvSection:
    """The HPC env (`dbf_env`): `window` slots of which `tail` come from the queue's tail."""

    n_cores: int = 256
    window: int = 10
    tail: int = 1
    queue_capacity: int = 256
    episode_jobs: int = 1000
    reward_weights: tuple[float, ...] = REWARD_WEIGHTS
    max_steps: int | None = None

    def __post_init__(self):
        for name in ("n_cores", "window", "queue_capacity", "episode_jobs"):
            if getattr(self, name) < 1:
                raise ValueError(f"env.{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.tail <= self.window:
            raise ValueError(f"env.tail must be in 0..{self.window} (env.window), got {self.tail}")
        if len(self.reward_weights) != 3 or min(self.reward_weights) < 0:
            raise ValueError(
                "env.reward_weights must be 3 non-negative numbers (w1, w2, w3), "
                f"got {list(self.reward_weights)}"
            )
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"env.max_steps must be >= 1 or null, got {self.max_steps}")


@dataclass(frozen=True)
class WorkloadSection:
    """Where the jobs come from: generated Lublin banks (train and test from separate keys) or an SWF
    trace split in time (`dbf.trace_split`; `train_episodes`/`test_episodes`/`jobs_per_episode` and the
    seeds are then unused)."""

    source: str = "lublin"
    path: str | None = None
    whole_sample: bool = True
    interactive: bool = False
    load_scale: float = 1.0
    train_episodes: int = 64
    test_episodes: int = 16
    jobs_per_episode: int = 2000
    bank_seed: int = 0
    test_seed: int = 1
    test_fraction: float = 0.3

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"workload.source must be one of {', '.join(SOURCES)}, got '{self.source}'")
        if self.source == "swf" and not self.path:
            raise ValueError("workload.path is required when workload.source is 'swf'")
        for name in ("train_episodes", "test_episodes", "jobs_per_episode"):
            if getattr(self, name) < 1:
                raise ValueError(f"workload.{name} must be >= 1, got {getattr(self, name)}")
        if not (math.isfinite(self.load_scale) and self.load_scale > 0):
            raise ValueError(f"workload.load_scale must be a finite number > 0, got {self.load_scale}")
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"workload.test_fraction must be in (0, 1), got {self.test_fraction}")
        if self.whole_sample and self.interactive:
            raise ValueError(
                "workload.whole_sample (the class-less Lublin parameter set) cannot be combined with "
                "workload.interactive: true"
            )


@dataclass(frozen=True)
class EvalSection:
    """Held-out evaluation: the learned policy (greedy or sampled) and heuristic baselines (score name,
    `_easy` for EASY back-filling) in a head-only window of `baseline_window` slots."""

    episodes: int = 16
    greedy: bool = True
    baselines: tuple[str, ...] = ("fcfs", "lcfs", "sjf", "fcfs_easy", "sjf_easy")
    baseline_window: int = 64
    seed: int = 2  # root of the evaluation episode keys (the same episodes for every policy)

    def __post_init__(self):
        from jaxsched.policies.scores import SCORES

        for name in ("episodes", "baseline_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"eval.{name} must be >= 1, got {getattr(self, name)}")
        for b in self.baselines:
            if b.removesuffix("_easy") not in SCORES:
                raise ValueError(
                    f"eval.baselines: unknown heuristic '{b}'; choose from {', '.join(SCORES)} "
                    "(append _easy for EASY back-filling)"
                )
        if len(set(self.baselines)) != len(self.baselines):
            raise ValueError(f"eval.baselines has duplicates: {list(self.baselines)}")


@dataclass(frozen=True)
class RunConfig:
    name: str = "run"
    seed: int = 0
    num_seeds: int = 3
    out_dir: str = "runs"
    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    ppo: PPOConfig = field(default_factory=dbf_ppo_config)
    eval: EvalSection = field(default_factory=EvalSection)

    def __post_init__(self):
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise ValueError(f"name must be a non-empty file name (no '/'), got '{self.name}'")
        if self.num_seeds < 1:
            raise ValueError(f"num_seeds must be >= 1, got {self.num_seeds}")
        w = self.workload
        if w.source == "lublin":
            if w.jobs_per_episode < self.env.episode_jobs:
                raise ValueError(
                    f"workload.jobs_per_episode ({w.jobs_per_episode}) must be >= env.episode_jobs "
                    f"({self.env.episode_jobs}): an episode places episode_jobs jobs from one bank episode"
                )
            try:
                self.lublin_config()
            except ValueError as e:
                raise ValueError(f"workload: {e}") from None

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    def lublin_config(self):
        from jaxsched.workloads.lublin import LublinConfig

        w = self.workload
        return LublinConfig(
            n_nodes=self.env.n_cores,
            whole_sample=w.whole_sample,
            interactive=w.interactive,
            load_scale=float(w.load_scale),
        )

    def to_dict(self) -> dict:
        """Plain YAML-able mapping (tuples as lists) that `config_from_dict` reads back to an equal config."""
        return _to_plain(self)

    def replace(self, **changes) -> RunConfig:
        return dataclasses.replace(self, **changes)


def _to_plain(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [_to_plain(x) for x in obj]
    return obj


# ---- strict parsing ---------------------------------------------------------------------------------
_SECTIONS = {"env": EnvSection, "workload": WorkloadSection, "ppo": PPOConfig, "eval": EvalSection}


def _suggest(key: str, valid: list[str]) -> str | None:
    candidates = {v: v for v in valid}
    for canonical, aliases in ALIASES.items():
        if canonical in valid:
            for a in aliases:
                candidates.setdefault(a, canonical)
    best = difflib.get_close_matches(key.lower(), list(candidates), n=1, cutoff=0.6)
    return candidates[best[0]] if best else None


def _unknown(prefix: str, key, valid: list[str]) -> ValueError:
    dotted = f"{prefix}{key}"
    hint = _suggest(str(key), valid)
    if hint is not None:
        return ValueError(f"unknown key '{dotted}' (did you mean '{prefix}{hint}'?)")
    return ValueError(f"unknown key '{dotted}' (valid keys here: {', '.join(valid)})")


def _type_name(tp) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args) + " or null"
    if origin is tuple:
        return f"a list of {_type_name(typing.get_args(tp)[0])}"
    return {int: "an integer", float: "a number", bool: "true/false", str: "a string"}.get(tp, str(tp))


def _coerce(key: str, value, tp):
    """`value` as type `tp` or a ValueError naming `key` and the expected type."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        if value is None:
            raise ValueError(f"{key} must be {_type_name(tp)}, got null")
        try:
            return _coerce(key, value, inner)
        except ValueError:
            raise ValueError(f"{key} must be {_type_name(tp)}, got {value!r}") from None
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key} must be {_type_name(tp)}, got {value!r}")
        (inner, _) = typing.get_args(tp)
        return tuple(_coerce(f"{key}[{i}]", v, inner) for i, v in enumerate(value))
    ok = False
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        if isinstance(value, str):  # YAML 1.1 reads `3e-4` (no dot) as a string
            try:
                value = float(value)
                ok = True
            except ValueError:
                ok = False
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
    elif tp is str:
        ok = isinstance(value, str)
    if not ok:
        raise ValueError(f"{key} must be {_type_name(tp)}, got {value!r}")
    return value


def _section(prefix: str, cls, d, base=None):
    """Build dataclass `cls` from mapping `d` (keys checked, values coerced); `base` gives defaults."""
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise ValueError(f"'{prefix.rstrip('.')}' must be a mapping of keys to values, got {d!r}")
    hints = typing.get_type_hints(cls)
    valid = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in d.items():
        if key not in valid:
            raise _unknown(prefix, key, valid)
        kwargs[key] = _coerce(f"{prefix}{key}", value, hints[key])
    if base is not None:
        return dataclasses.replace(base, **kwargs)
    return cls(**kwargs)


def config_from_dict(d: dict, source: str | Path | None = None) -> RunConfig:
    """A `RunConfig` from a mapping (as read from YAML). `source` (the file) prefixes error messages and
    resolves a relative `workload.path`, and gives the default `name` (the file's stem)."""
    try:
        return _config_from_dict(d, source)
    except ValueError as e:
        if source is None:
            raise
        raise ValueError(f"{source}: {e}") from None


def _config_from_dict(d, source) -> RunConfig:
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise ValueError(f"a config must be a mapping of keys to values, got {type(d).__name__}")
    hints = typing.get_type_hints(RunConfig)
    valid = [f.name for f in dataclasses.fields(RunConfig)]
    kwargs: dict[str, Any] = {}
    for key, value in d.items():
        if key not in valid:
            raise _unknown("", key, valid)
        if key in _SECTIONS:
            continue
        kwargs[key] = _coerce(key, value, hints[key])
    if "name" not in kwargs and source is not None:
        kwargs["name"] = Path(source).stem
    for key, cls in _SECTIONS.items():
        base = dbf_ppo_config() if cls is PPOConfig else None
        kwargs[key] = _section(f"{key}.", cls, d.get(key), base)
    path = kwargs["workload"].path
    if path is not None:
        kwargs["workload"] = dataclasses.replace(kwargs["workload"], path=resolve_path(path, source))
    return RunConfig(**kwargs)


def resolve_path(path: str, source: str | Path | None) -> str:
    """A relative `path` resolves against the config file's folder if that file exists, else the cwd."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return str(p)
    if source is not None:
        beside = Path(source).parent / p
        if beside.exists():
            return str(beside.resolve())
    return str(p.resolve())


class DuplicateKeyError(yaml.YAMLError):
    """A mapping key given twice (raised by `StrictLoader`)."""


class StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that rejects a key given twice in one mapping (`DuplicateKeyError`); plain
    PyYAML keeps the last value silently. Keys merged in with `<<: *anchor` may still be overridden."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise DuplicateKeyError(f"line {line}: duplicate key {key!r} (first at line {seen[key]})")
                seen[key] = line
            except TypeError:  # an unhashable key: SafeLoader's own error says so below
                continue
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> Any:
    """The YAML file at `path` read with `StrictLoader`; a duplicate key or a syntax error is a
    one-line `ValueError` starting with the file name."""
    try:
        with open(path, encoding="utf-8") as f:  # a stream, so PyYAML's own messages name the file
            return yaml.load(f, Loader=StrictLoader)
    except DuplicateKeyError as e:
        raise ValueError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {_one_line(e)}") from None


def _one_line(e: Exception) -> str:
    """PyYAML's multi-line error message on one line."""
    return " ".join(str(e).split())


def apply_overrides(d: dict, overrides: list[str] | tuple[str, ...]) -> dict:
    """A copy of mapping `d` with `KEY=VALUE` overrides applied (dotted keys, YAML values), e.g.
    `env.tail=3`, `ppo.hidden=[256, 256]`. Keys are checked when the result is parsed; a key overridden
    twice, or a value with a duplicate key, is an error."""
    d = copy.deepcopy(d) if d else {}
    given: dict[str, str] = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"override '{item}' must look like KEY=VALUE (e.g. env.tail=3)")
        dotted = key.strip()
        for g, earlier in given.items():  # the same key, or a section and a key inside it
            if g == dotted or g.startswith(dotted + ".") or dotted.startswith(g + "."):
                raise ValueError(f"override '{item}': key '{dotted}' is already set by '{earlier}'")
        given[dotted] = item
        *parents, leaf = key.strip().split(".")
        node = d
        for i, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"override '{item}': '{'.'.join(parents[: i + 1])}' is not a section")
        try:
            node[leaf] = yaml.load(text, Loader=StrictLoader)
        except DuplicateKeyError as e:
            raise ValueError(f"override '{item}': {e}") from None
        except yaml.YAMLError as e:
            raise ValueError(f"override '{item}': the value is not valid YAML: {_one_line(e)}") from None
    return d


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """Read and validate a YAML config, with optional `KEY=VALUE` overrides (`apply_overrides`); errors
    are `ValueError`s starting with the file name."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    d = load_yaml(path)
    if overrides:
        if not isinstance(d, (dict, type(None))):
            raise ValueError(f"{path}: a config must be a mapping of keys to values")
        d = apply_overrides(d, overrides)
    return config_from_dict(d, source=path)


def dump_config(cfg: RunConfig, path: str | Path, header: str = "") -> None:
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False, default_flow_style=None, width=110)
    Path(path).write_text(header + text)


# ---- building the run ---------------------------------------------------------------------------------
def build_run(cfg: RunConfig):
    """`(env, train_params, test_params, ppo_config)` for `cfg`.

    Lublin: a training bank of `train_episodes` generated episodes (from `bank_seed`) and a held-out one
    of `test_episodes` (from `test_seed`; the two never share a key, see `purpose_key`). SWF: one trace,
    training windows before a split in time, test windows after it (`dbf.trace_split`). Both params share
    `runtime_norm` (the training jobs' largest requested time), so observations are normalised alike.
    """
    import numpy as np

    from jaxsched.agents.dbf import dbf_env, dbf_params, trace_split
    from jaxsched.workloads.lublin import generate_bank
    from jaxsched.workloads.swf import load_swf

    e, w = cfg.env, cfg.workload
    try:
        env = dbf_env(e.window, e.tail, e.n_cores, e.queue_capacity)
    except ValueError as err:
        raise ValueError(f"env: {err}") from None
    kw = dict(episode_jobs=e.episode_jobs, max_steps=e.max_steps, w=e.reward_weights)
    if w.source == "lublin":
        lub = cfg.lublin_config()
        train_bank, tr_s, tr_e = generate_bank(
            purpose_key(w.bank_seed, TRAIN_BANK_TAG), lub, w.train_episodes, w.jobs_per_episode
        )
        test_bank, te_s, te_e = generate_bank(
            purpose_key(w.test_seed, TEST_BANK_TAG), lub, w.test_episodes, w.jobs_per_episode
        )
        norm = float(np.max(np.asarray(train_bank.req_time)))
        train = dbf_params(env, train_bank, tr_s, tr_e, runtime_norm=norm, **kw)
        test = dbf_params(env, test_bank, te_s, te_e, runtime_norm=norm, **kw)
    else:
        bank = load_swf(w.path, n_cores=e.n_cores)
        (tr_s, tr_e), (te_s, te_e) = trace_split(bank.num_jobs, e.episode_jobs, w.test_fraction)
        norm = float(np.max(np.asarray(bank.req_time)[: int(tr_e[0])]))
        train = dbf_params(env, bank, tr_s, tr_e, runtime_norm=norm, **kw)
        test = dbf_params(env, bank, te_s, te_e, runtime_norm=norm, **kw)
    return env, train, test, cfg.ppo
