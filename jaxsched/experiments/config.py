"""Experiment configs, for every system: YAML → frozen dataclasses, strictly.

A config is a dataclass derived from `ExperimentConfig` (the top-level keys every system has: `kind`,
`name`, `seed`, `num_seeds`, `out_dir`); each of its fields whose value is a dataclass is a *section*
(`env:`, `workload:`, `ppo:` ...), read key by key. A system declares its config class and nothing about
parsing; `config_from_dict(cls, d)` and `load_config(path, kinds)` do the rest:

- unknown keys at any level are an error naming the dotted key and the closest valid one (`ALIASES` maps
  common spellings, e.g. `learning_rate` -> `lr`);
- a value of the wrong type is an error naming the key and the expected type;
- a key given twice in one mapping is an error naming the file, the key and both lines (`load_yaml`; PyYAML
  alone keeps the last one silently), and so is a key set twice by `--set` (`apply_overrides`);
- an empty file, or a `kind` no system declares, is an error naming the file.

Every error is one `ValueError` line starting with the file name. `cfg.to_dict()` gives a plain mapping
that `config_from_dict` reads back to an equal config.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml

from jaxsched.core.checks import choices
from jaxsched.experiments.loggers import check_loggers

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
class CalibrationSection:
    """Which of its paper's settings a config stands for, and how it was fitted (`jaxsched calibrate`;
    `experiments.calibration`). Every published baseline number of `setting` is compared; `fit` names the
    calibration rows (`row.metric`, e.g. `fifo_firstfit.avg_jct_min`) that `--fit` matches by searching
    `knobs` (each `dotted.key=[v1, v2, ...]`, a grid of candidate values); every other row is validation."""

    setting: str | None = None  # the paper's setting (a `setting` of the system's paper_numbers.csv)
    fit: tuple[str, ...] = ()
    knobs: tuple[str, ...] = ()
    # Compare every row as its ratio to this row (where the paper's absolute scale comes from data we do
    # not have); null: absolute numbers.
    relative_to: str | None = None
    tolerance: float = 0.10  # a row is matched within ± this fraction of the paper's value

    def __post_init__(self):
        if not 0.0 < self.tolerance < 1.0:
            raise ValueError(f"calibration.tolerance must be in (0, 1), got {self.tolerance}")
        for i, row in enumerate(self.fit):
            if row.count(".") != 1 or not all(row.split(".")):
                raise ValueError(f"calibration.fit[{i}] must look like ROW.METRIC, got {row!r}")
        self.knob_grid()  # errors name the knob

    def knob_grid(self) -> tuple[tuple[str, tuple], ...]:
        """`((dotted key, candidate values), ...)` of `knobs`."""
        out = []
        for i, text in enumerate(self.knobs):
            key, sep, values = text.partition("=")
            where = f"calibration.knobs[{i}] ({text!r})"
            if not sep or key.strip().count(".") < 1:
                raise ValueError(f"{where} must look like section.key=[v1, v2, ...]")
            try:
                parsed = yaml.load(values, Loader=StrictLoader)
            except yaml.YAMLError:
                parsed = None
            if not isinstance(parsed, list) or not parsed:
                raise ValueError(f"{where}: the candidate values must be a non-empty YAML list")
            out.append((key.strip(), tuple(parsed)))
        keys = [k for k, _ in out]
        if len(set(keys)) != len(keys):
            raise ValueError(f"calibration.knobs names a key twice: {keys}")
        return tuple(out)


@dataclass(frozen=True)
class HeldOutEval:
    """The part of an `eval:` section systems share: the held-out `episodes` (null: all of them, each
    once) and the `baselines` evaluated beside the learners, names from the class's `BASELINES`."""

    BASELINES: ClassVar[tuple[str, ...]] = ()

    episodes: int | None = None
    baselines: tuple[str, ...] = ()

    def __post_init__(self):
        if self.episodes is not None and self.episodes < 1:
            raise ValueError(f"eval.episodes must be >= 1 or null, got {self.episodes}")
        choices(self.baselines, "eval.baselines", self.BASELINES, "heuristic")


@dataclass(frozen=True)
class SampledEval(HeldOutEval):
    """A held-out evaluation whose policies may sample: the action keys drawn from `seed` (the same key
    per episode for every policy), the learners greedy (their most likely action) or sampling."""

    seed: int = 0
    greedy: bool = True


@dataclass(frozen=True)
class ExperimentConfig:
    """The top-level keys of every system's config. A system's config derives from this, adds its
    sections as dataclass-valued fields, and sets the class-level declarations below."""

    KIND: ClassVar[str] = ""  # the YAML `kind:` that selects this config
    # Dotted keys holding file paths: a relative path resolves beside the config file (`resolve_path`).
    PATH_KEYS: ClassVar[tuple[str, ...]] = ()
    # Dotted keys that are fields of a section's dataclass but not settings (why, for the error).
    NOT_SETTINGS: ClassVar[Mapping[str, str]] = {}
    # Sections and keys that may differ when a run is resumed (everything else must match).
    RESUME_MAY_DIFFER: ClassVar[tuple[str, ...]] = (
        "kind", "name", "out_dir", "eval", "calibration", "loggers",
    )  # fmt: skip

    kind: str = ""  # the class's `KIND` when left out
    name: str = "run"
    seed: int = 0
    num_seeds: int = 3
    out_dir: str = "runs"
    loggers: tuple[str, ...] = ()  # besides metrics.jsonl: tensorboard, wandb (experiments.loggers)
    calibration: CalibrationSection = dataclasses.field(default_factory=CalibrationSection)

    def __post_init__(self):
        if not self.kind:
            object.__setattr__(self, "kind", self.KIND)
        if self.kind != self.KIND:
            raise ValueError(f"kind must be '{self.KIND}' for this config, got {self.kind!r}")
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise ValueError(f"name must be a non-empty file name (no '/'), got '{self.name}'")
        if self.num_seeds < 1:
            raise ValueError(f"num_seeds must be >= 1, got {self.num_seeds}")
        object.__setattr__(self, "loggers", check_loggers(self.loggers))
        for key, _ in self.calibration.knob_grid():
            if key.split(".")[0] == "calibration" or not _has_setting(self, key):
                raise ValueError(f"calibration.knobs: {key!r} is not a setting of this config")

    @classmethod
    def sections(cls) -> dict[str, Any]:
        """Section name → its default value (a dataclass instance), in declaration order."""
        defaults = cls()  # every field has a default
        return {
            f.name: getattr(defaults, f.name)
            for f in dataclasses.fields(cls)
            if dataclasses.is_dataclass(getattr(defaults, f.name))
        }

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """Plain YAML-able mapping (tuples as lists) that `config_from_dict` reads back to an equal config."""
        d = _to_plain(self)
        for dotted in self.NOT_SETTINGS:
            section, key = dotted.split(".")
            d[section].pop(key, None)
        return d


def _has_setting(cfg, dotted: str) -> bool:
    """Whether `dotted` (section.key) names a field of a section of `cfg`."""
    section, _, key = dotted.partition(".")
    value = getattr(cfg, section, None)
    return dataclasses.is_dataclass(value) and key in {f.name for f in dataclasses.fields(value)}


def with_settings(cfg, settings: Mapping[str, Any]):
    """`cfg` with dotted keys set to YAML-typed values (`{"env.load_scale": 0.5}`), re-validated as a
    loaded config is (a wrong key or type is a one-line error naming the key)."""
    d = cfg.to_dict()
    for dotted, value in settings.items():
        section, _, key = dotted.partition(".")
        if not isinstance(d.get(section), dict):
            raise ValueError(f"unknown section {section!r} in {dotted!r}")
        d[section][key] = value
    return config_from_dict(type(cfg), d)


def _to_plain(obj):
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [_to_plain(x) for x in obj]
    return obj


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
        args = typing.get_args(tp)
        if args[-1] is not Ellipsis:
            return f"a list [{', '.join(_type_name(a) for a in args)}]"
        return f"a list of {_type_name(args[0])}"
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
        args = typing.get_args(tp)
        if args[-1] is not Ellipsis:  # a fixed-length record, e.g. tuple[str, float, float]
            if len(value) != len(args):
                raise ValueError(f"{key} must be {_type_name(tp)}, got {value!r}")
            pairs = enumerate(zip(value, args, strict=True))
            return tuple(_coerce(f"{key}[{i}]", v, a) for i, (v, a) in pairs)
        return tuple(_coerce(f"{key}[{i}]", v, args[0]) for i, v in enumerate(value))
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


def config_from_dict(cls: type[ExperimentConfig], d: dict, source: str | Path | None = None):
    """An instance of config class `cls` from a mapping (as read from YAML; `kind` may be left out).
    `source` (the file) prefixes error messages, resolves the relative paths of `cls.PATH_KEYS`, and gives
    the default `name` (the file's stem)."""
    try:
        return _config_from_dict(cls, d, source)
    except ValueError as e:
        if source is None:
            raise
        raise ValueError(f"{source}: {e}") from None


def _config_from_dict(cls, d, source):
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise ValueError(f"a config must be a mapping of keys to values, got {type(d).__name__}")
    hints = typing.get_type_hints(cls)
    sections = cls.sections()
    valid = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {"kind": cls.KIND}
    for key, value in d.items():
        if key not in valid:
            raise _unknown("", key, valid)
        if key not in sections:
            kwargs[key] = _coerce(key, value, hints[key])
    if "name" not in kwargs and source is not None:
        kwargs["name"] = Path(source).stem
    for dotted, why in cls.NOT_SETTINGS.items():
        section, key = dotted.split(".")
        if isinstance(d.get(section), dict) and key in d[section]:
            raise ValueError(f"{dotted} is not a setting: {why}")
    for key, base in sections.items():
        kwargs[key] = _section(f"{key}.", type(base), d.get(key), base)
    for dotted in cls.PATH_KEYS:
        section, key = dotted.split(".")
        path = getattr(kwargs[section], key)
        if path is not None:
            kwargs[section] = dataclasses.replace(kwargs[section], **{key: resolve_path(path, source)})
    return cls(**kwargs)


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


def add_set_argument(parser) -> None:
    """`--set KEY=VALUE` (repeatable): the config overrides every command on a config takes."""
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a config value (dotted key, YAML value), e.g. --set env.tail=3; repeatable",
    )  # fmt: skip


def add_run_location(parser, name: bool = True) -> None:
    """Where a config's runs are, the same for every command that reads or writes them: `--out-dir`,
    `--name` (one config's commands only) and `--set`."""
    parser.add_argument("--out-dir", default=None, help="override the config's out_dir (where its runs are)")
    if name:
        parser.add_argument(
            "--name", default=None, help="override the config's run name (run dir = out_dir/name)"
        )
    add_set_argument(parser)


def load_config(
    path: str | Path, kinds: Mapping[str, type[ExperimentConfig]], overrides: list[str] | tuple[str, ...] = ()
):
    """Read and validate the YAML config at `path`, with optional `KEY=VALUE` overrides
    (`apply_overrides`): its `kind:` picks the config class in `kinds` (kind → class; it may be left out
    when `kinds` has one entry). Errors are one-line
    `ValueError`s starting with the file name (`--set` errors name `--set`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    d = load_yaml(path)
    if d is None:
        raise ValueError(f"{path}: the file is empty; a config needs at least `kind:` ({', '.join(kinds)})")
    if not isinstance(d, dict):
        raise ValueError(f"{path}: a config must be a mapping of keys to values, got {type(d).__name__}")
    if overrides:
        try:
            d = apply_overrides(d, overrides)
        except ValueError as e:
            raise ValueError(f"--set: {e}") from None
    kind = d.get("kind")
    if kind is None and len(kinds) == 1:  # a system's own loader knows which config it reads
        (kind,) = kinds
    if kind not in kinds:
        got = "no `kind:`" if kind is None else f"kind {kind!r}"
        raise ValueError(f"{path}: {got}; a config says which system it is: kind: {' | '.join(kinds)}")
    return config_from_dict(kinds[kind], d, source=path)


def dump_config(cfg: ExperimentConfig, path: str | Path, header: str = "") -> None:
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False, default_flow_style=None, width=110)
    Path(path).write_text(header + text)
