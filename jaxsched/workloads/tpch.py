"""Decima's TPC-H job DAGs (hongzimao/decima-sim, `spark_env/tpch/`): a safe one-time conversion of the
pickled files to a plain `.npz` (`convert_tpch`), templates for the DAG env's bank (`load_tpch`) and the
measured task-duration samples in a padded table (`tpch_wave_table`).

The source: per input size (a folder `2g`, `5g`, `10g`, `20g`, `50g`, `80g`, `100g`) and query q (1..22),
`adj_mat_{q}.npy` (a plain float n x n array, `adj[i, j] = 1` iff stage i -> j) and `task_duration_{q}.npy`,
a *pickled* dict `{stage: {'first_wave' | 'rest_wave' | 'fresh_durations': {executors: [ms, ...]}}}` of
Spark task durations measured with `executors` executors (`stage_id_to_node_idx_map_{q}.npy` is unused).
The package ships none of it; code takes a path.

Safety. Unpickling runs code named by the file, so a pickle is never loaded silently: `convert_tpch`
refuses without `allow_pickle=True` (a trusted source only), and even with it the payload goes through a
restricted unpickler that admits only the globals a numpy object array of dicts / lists of numbers needs
(`numpy.ndarray`, `numpy.dtype`, numpy's `_reconstruct`, `scalar` and `_frombuffer` under `numpy.core` or
`numpy._core`, `builtins` / `__builtin__` `dict`, `list`, `tuple`, `int`, `float`, `bool`, and
`_codecs.encode` for latin-1 only, which Python 3's protocol-2 pickles of numpy scalars use); any other
global (`os.system`, `builtins.eval`, `subprocess.Popen`, ...) is refused before it is called. The `.npy`
header is read with `numpy.lib.format` (versions 1.0 and 2.0) and must describe a 0-d object array.
The result is one `.npz` without object arrays, read later with `allow_pickle=False` only.

Decima's semantics (spark_env/job_generator.py `load_job`, reproduced by `decima_stage`): a stage's
`num_tasks = len(first_wave[e]) + len(rest_wave[e])` for `e` the *first* key of `first_wave` in dict
insertion order (2 in all of the data); then pre-processing: per key, each fresh duration removes one
equal value from the first wave (a multiset difference), and in ascending key order an empty cleaned first
wave takes the previous key's cleaned list (the smallest key stays empty if empty); the task's *rough
duration* is the mean of every value of the cleaned first waves, the rest waves and the fresh durations
over all keys (a copied list counts again). Our template duration is that mean rounded to whole ms (half
to even), >= 1.

What Decima's files hold (`scripts/tpch_stats.py` prints the rest): 154 jobs (7 sizes x 22 queries) of
2-18 stages; each query's DAG is the same at every size, only tasks and durations change. The duration
files are Python 2 protocol-2 pickles naming three globals (numpy.core.multiarray._reconstruct,
numpy.ndarray, numpy.dtype). Executor keys are 2, 5, 10, 20, 40, 50, 60, 80, 100, except in query 6 at
2g, 5g and 10g, where they stop near the task count (..., 12, 13 / 29, 30 / 58, 59); the first key is
always 2; key order is not always ascending. No first wave is empty; 4,490 rest-wave and 9,330 fresh
lists are. Durations run from 3 to 39,608 ms.

NPZ layout (`FORMAT` 1). T templates in size order (by GB) then query order, named "tpch-{size}-q{q}";
S = the widest job; G value lists; V values.
  format         i32 []          1
  name, size     <U [T]          "tpch-10g-q3", "10g"
  query          i32 [T]
  n_stages       i32 [T]
  adj            u1  [T, S, S]   adj[t, p, c] = 1 iff stage p -> c (0 beyond n_stages)
  num_tasks      i32 [T, S]      Decima's num_tasks (0 beyond n_stages)
  rough_ms       f64 [T, S]      Decima's rough duration, unrounded
  duration       i32 [T, S]      max(1, round(rough_ms)), the template's task duration
  executor_keys  i32 [K]         every executor count found as a key, ascending
  wave_start     i64 [G + 1]     list g holds wave_values[wave_start[g]:wave_start[g + 1]] (may be empty)
  wave_template, wave_stage, wave_key  i32 [G]   the list's template, stage, executor count
  wave_kind      i8  [G]         0 first wave after pre-processing (what Decima samples), 1 rest wave,
                                 2 fresh durations, 3 first wave as recorded (so the file is lossless)
  wave_values    f64 [V]         ms
Lists are stored per (template, stage, kind) in the source dict's key order, empty ones included.

Every malformed input raises a one-line `ValueError` naming the file and the field.
"""

from __future__ import annotations

import collections
import math
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from jaxsched.workloads.dag_bank import MAX_STAGES, DAGTemplates, check_dag

__all__ = ["FORMAT", "WAVES", "WaveTable", "convert_tpch", "decima_stage", "load_tpch", "tpch_wave_table"]

FORMAT = 1
WAVES = ("first_wave", "rest_wave", "fresh_durations")
_FIELDS = (
    "format name size query n_stages adj num_tasks rough_ms duration executor_keys wave_start wave_template "
    "wave_stage wave_key wave_kind wave_values"
).split()


def _numpy_globals() -> dict:
    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # numpy < 2
        from numpy.core import multiarray, numeric
    out = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for mod in ("numpy.core", "numpy._core"):
        out[(f"{mod}.multiarray", "_reconstruct")] = multiarray._reconstruct
        out[(f"{mod}.multiarray", "scalar")] = multiarray.scalar
        out[(f"{mod}.numeric", "_frombuffer")] = numeric._frombuffer
    for mod in ("builtins", "__builtin__"):
        for cls in (dict, list, tuple, int, float, bool):
            out[(mod, cls.__name__)] = cls
    out[("_codecs", "encode")] = _latin1_encode
    return out


def _latin1_encode(text, encoding="utf-8", errors="strict"):
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"refused global _codecs.encode with encoding {encoding!r}")
    return text.encode("latin-1", errors)


class _SafeUnpickler(pickle.Unpickler):
    """Resolves only the globals in `_ALLOWED`; any other raises before anything is called."""

    def find_class(self, module: str, name: str):
        obj = _ALLOWED.get((module, name))
        if obj is None:
            raise pickle.UnpicklingError(f"refused global {module}.{name}")
        return obj


_ALLOWED = _numpy_globals()


def _header(f, path: Path) -> tuple[tuple, np.dtype]:
    """(shape, dtype) from a `.npy` header (versions 1.0 and 2.0), the stream left at the payload."""
    try:
        version = npy_format.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f".npy version {version} (only 1.0 and 2.0 are read)")
        read = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
        shape, _, dtype = read(f)
    except ValueError as e:
        raise ValueError(f"{path}: header: {_one_line(e)}") from None
    return shape, dtype


def _read_pickled_dict(path: Path) -> dict:
    """The dict inside a pickled 0-d object `.npy`, through the restricted unpickler."""
    with open(path, "rb") as f:
        shape, dtype = _header(f, path)
        if not dtype.hasobject or shape != ():
            raise ValueError(
                f"{path}: header: dtype {dtype}, shape {shape} (expected a pickled 0-d object array)"
            )
        try:
            arr = _SafeUnpickler(f, encoding="latin1").load()
        except Exception as e:  # the restricted unpickler's refusal or any corrupt payload
            raise ValueError(f"{path}: payload: {_one_line(e)}") from None
    value = arr.item() if isinstance(arr, np.ndarray) and arr.shape == () else arr
    if not isinstance(value, dict):
        raise ValueError(f"{path}: payload is a {type(value).__name__}, expected a dict of stages")
    return value


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _is_pickle(path: Path) -> bool:
    with open(path, "rb") as f:
        try:
            return _header(f, path)[1].hasobject
        except ValueError:
            return True  # not a plain .npy: treat as unsafe


def decima_stage(where: str, stage: dict) -> tuple[int, float, dict]:
    """Decima's `(num_tasks, rough duration ms, cleaned first wave {key: list})` of one stage's
    `{'first_wave' | 'rest_wave' | 'fresh_durations': {executors: [ms]}}` (checked, not modified)."""
    if not isinstance(stage, dict):
        raise ValueError(f"{where}: is a {type(stage).__name__}, expected a dict of waves")
    waves = {}
    for w in WAVES:
        if w not in stage:
            raise ValueError(f"{where}: field {w} is missing")
        if not isinstance(stage[w], dict):
            raise ValueError(f"{where}: field {w} is a {type(stage[w]).__name__}, expected a dict")
        waves[w] = {}
        for k, v in stage[w].items():
            if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
                raise ValueError(f"{where}: field {w} has key {k!r} (need an executor count >= 1)")
            if not isinstance(v, (list, tuple, np.ndarray)):
                raise ValueError(f"{where}: field {w}[{k}] is a {type(v).__name__}, expected a list")
            vals = [x for x in v]
            for x in vals:
                real = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
                if not (real and math.isfinite(x) and x >= 0):
                    raise ValueError(f"{where}: field {w}[{k}] holds {x!r} (need finite durations >= 0 ms)")
            waves[w][int(k)] = vals
    first, rest, fresh = waves["first_wave"], waves["rest_wave"], waves["fresh_durations"]
    if not first:
        raise ValueError(f"{where}: field first_wave is an empty dict (no executor keys)")
    for w, d in (("rest_wave", rest), ("fresh_durations", fresh)):
        missing = [k for k in first if k not in d]
        if missing:
            raise ValueError(f"{where}: field {w} lacks executor key {missing[0]} of first_wave")
    e = next(iter(first))
    num_tasks = len(first[e]) + len(rest[e])
    if num_tasks < 1:
        raise ValueError(
            f"{where}: field first_wave[{e}] and rest_wave[{e}] are empty (no durations, 0 tasks)"
        )
    clean = {}
    for k, vals in first.items():
        left = collections.Counter(fresh[k])
        clean[k] = []
        for d in vals:
            if left[d] > 0:
                left[d] -= 1
            else:
                clean[k].append(d)
    last: list = []
    for k in sorted(clean):
        if not clean[k]:
            clean[k] = last
        last = clean[k]
    every = [x for d in (clean, rest, fresh) for vals in d.values() for x in vals]
    if not every:
        raise ValueError(f"{where}: no durations (every wave list is empty)")
    return num_tasks, float(np.mean(every)), clean


def _size_key(name: str) -> tuple:
    m = re.fullmatch(r"(\d+)g", name)
    return (0, int(m.group(1)), name) if m else (1, 0, name)


def _read_adj(path: Path) -> np.ndarray:
    try:
        adj = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise ValueError(f"{path}: adj_mat: {_one_line(e)}") from None
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1] or adj.shape[0] < 1:
        raise ValueError(f"{path}: adj_mat has shape {adj.shape}, expected a square n x n matrix, n >= 1")
    if not np.isin(adj, (0, 1)).all():
        raise ValueError(f"{path}: adj_mat holds values other than 0 and 1")
    return adj.astype(bool)


def convert_tpch(src_dir, dst_npz, *, allow_pickle: bool = False) -> Path:
    """Convert Decima's TPC-H folder (`src_dir/<size>/adj_mat_{q}.npy`, `task_duration_{q}.npy`) into one
    safe `.npz` at `dst_npz` (layout in the module doc). Needs `allow_pickle=True`: the duration files are
    pickles, read once here through a restricted unpickler. Returns the written path."""
    src, dst = Path(src_dir), Path(dst_npz)
    jobs = []  # (size, query, adj path, duration path)
    for d in sorted((p for p in src.iterdir() if p.is_dir()), key=lambda p: _size_key(p.name)):
        names = (re.fullmatch(r"adj_mat_(\d+)\.npy", p.name) for p in d.glob("adj_mat_*.npy"))
        qs = sorted(int(m.group(1)) for m in names if m)
        jobs += [(d.name, q, d / f"adj_mat_{q}.npy", d / f"task_duration_{q}.npy") for q in qs]
    if not jobs:
        raise ValueError(f"{src}: no <size>/adj_mat_<q>.npy files found")
    for *_, dur_path in jobs:
        if not dur_path.exists():
            raise ValueError(f"{dur_path}: task_duration file is missing (missing duration)")
        if not allow_pickle and _is_pickle(dur_path):
            raise ValueError(
                f"{dur_path}: task_duration is a pickle (loading it can run code); pass allow_pickle=True "
                "(jaxsched tpch-convert --allow-pickle; trusted source only) to convert it once to a safe "
                ".npz"
            )
    recs = []
    for size, q, adj_path, dur_path in jobs:
        adj = _read_adj(adj_path)
        n = adj.shape[0]
        td = _read_pickled_dict(dur_path)
        extra = [k for k in td if not (isinstance(k, (int, np.integer)) and 0 <= k < n)]
        if extra:
            raise ValueError(f"{dur_path}: task_duration has stage {extra[0]!r}, not in adj_mat's {n} stages")
        tasks, rough, lists = np.zeros(n, np.int64), np.zeros(n), []
        for s in range(n):
            if s not in td:
                raise ValueError(f"{dur_path}: stage {s} of adj_mat has no task_duration (missing duration)")
            tasks[s], rough[s], clean = decima_stage(f"{dur_path}: stage {s}", td[s])
            raw = td[s]
            kinds = (clean, raw["rest_wave"], raw["fresh_durations"], raw["first_wave"])
            for kind, waves in enumerate(kinds):
                keys = list(raw["first_wave"]) if kind == 0 else list(waves)
                lists += [(s, int(k), kind, waves[k]) for k in keys]
        duration = np.maximum(1, np.rint(rough)).astype(np.int64)
        try:
            check_dag("adj_mat", adj, tasks, duration.astype(np.float64), MAX_STAGES)
        except ValueError as e:
            raise ValueError(f"{adj_path}: {e}") from None
        recs.append((size, q, adj, tasks, rough, duration, lists))
    _write_npz(dst, recs)
    return dst


def _write_npz(dst: Path, recs: list) -> None:
    t, s = len(recs), max(r[2].shape[0] for r in recs)
    adj = np.zeros((t, s, s), np.uint8)
    tasks, dur = np.zeros((t, s), np.int32), np.zeros((t, s), np.int32)
    rough = np.zeros((t, s))
    seg = {k: [] for k in ("template", "stage", "key", "kind")}
    lengths, values = [], []
    for i, (_, _, a, nt, rd, du, lists) in enumerate(recs):
        n = a.shape[0]
        adj[i, :n, :n], tasks[i, :n], rough[i, :n], dur[i, :n] = a, nt, rd, du
        for st, key, kind, vals in lists:
            for f, v in zip(("template", "stage", "key", "kind"), (i, st, key, kind), strict=True):
                seg[f].append(v)
            lengths.append(len(vals))
            values += [float(x) for x in vals]
    dst.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        dst,
        format=np.int32(FORMAT),
        name=np.array([f"tpch-{r[0]}-q{r[1]}" for r in recs]),
        size=np.array([r[0] for r in recs]),
        query=np.array([r[1] for r in recs], np.int32),
        n_stages=np.array([r[2].shape[0] for r in recs], np.int32),
        adj=adj,
        num_tasks=tasks,
        rough_ms=rough,
        duration=dur,
        executor_keys=np.array(sorted(set(seg["key"])), np.int32),
        wave_start=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        wave_template=np.array(seg["template"], np.int32),
        wave_stage=np.array(seg["stage"], np.int32),
        wave_key=np.array(seg["key"], np.int32),
        wave_kind=np.array(seg["kind"], np.int8),
        wave_values=np.array(values, np.float64),
    )


def _read_npz(path) -> dict:
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (ValueError, OSError) as e:
        raise ValueError(f"{path}: not a readable safe .npz: {_one_line(e)}") from None
    for f in _FIELDS:
        if f not in data:
            raise ValueError(f"{path}: field {f} is missing (not a convert_tpch file?)")
    if int(data["format"]) != FORMAT:
        raise ValueError(f"{path}: field format = {int(data['format'])}, this code reads {FORMAT}")
    return data


def _select(path, data: dict, sizes, queries) -> np.ndarray:
    keep = np.ones(data["name"].shape[0], bool)
    for field, wanted in (("size", sizes), ("query", queries)):
        if wanted is not None:
            have = set(data[field].tolist())
            missing = [w for w in wanted if w not in have]
            if missing:
                raise ValueError(f"{path}: {field} {missing[0]!r} is not in the file")
            keep &= np.isin(data[field], list(wanted))
    return np.flatnonzero(keep)


def load_tpch(npz_path, *, sizes=None, queries=None, max_stages: int | None = None) -> DAGTemplates:
    """Templates from a `convert_tpch` file (never a pickle): `sizes` (e.g. ("10g",)) and `queries` (ints)
    select, `max_stages` pads (default: the widest selected job; a wider job is an error)."""
    data = _read_npz(npz_path)
    dags = []
    for t in _select(npz_path, data, sizes, queries):
        n = int(data["n_stages"][t])
        dags.append(
            dict(name=str(data["name"][t]), adj=data["adj"][t, :n, :n].astype(bool),
                 n_tasks=data["num_tasks"][t, :n], duration=data["duration"][t, :n])
        )  # fmt: skip
    try:
        return DAGTemplates.from_lists(dags, max_stages)
    except ValueError as e:
        raise ValueError(f"{npz_path}: {e}") from None


@dataclass(frozen=True)
class WaveTable:
    """Padded wave samples of the selected templates (in `load_tpch`'s order).

    values i32[T, S, K, 3, D] ms (rounded; 0 padding), count i32[T, S, K, 3] (valid values per list),
    present bool[T, S, K] (the stage's first_wave has that key: Decima falls back to the largest present
    key otherwise), keys i32[K] (executor counts), name[T]. Kind 0 first wave after Decima's
    pre-processing, 1 rest wave, 2 fresh durations."""

    values: np.ndarray
    count: np.ndarray
    present: np.ndarray
    keys: np.ndarray
    name: tuple[str, ...]


def tpch_wave_table(
    npz_path, *, sizes=None, queries=None, max_stages: int | None = None, max_samples: int = 64, seed: int = 0
) -> WaveTable:
    """The wave samples as a `WaveTable`. A list longer than `max_samples` (D) keeps D values drawn
    uniformly without replacement (their original order kept) by `numpy.random.default_rng([seed, g])`, g
    the list's index in the file, so a list's sample does not depend on the selection; shorter lists are
    kept whole."""
    if max_samples < 1:
        raise ValueError(f"max_samples: {max_samples} (need >= 1)")
    data = _read_npz(npz_path)
    sel = _select(npz_path, data, sizes, queries)
    widest = int(data["n_stages"][sel].max()) if sel.size else 1
    s = widest if max_stages is None else max_stages
    if widest > s:
        raise ValueError(f"{npz_path}: a job has {widest} stages, wider than max_stages = {s}")
    keys = data["executor_keys"]
    row = {int(t): i for i, t in enumerate(sel)}
    col = {int(k): j for j, k in enumerate(keys)}
    values = np.zeros((sel.size, s, keys.size, 3, max_samples), np.int32)
    count = np.zeros((sel.size, s, keys.size, 3), np.int32)
    present = np.zeros((sel.size, s, keys.size), bool)
    start = data["wave_start"]
    for g in range(data["wave_kind"].shape[0]):
        kind, t = int(data["wave_kind"][g]), int(data["wave_template"][g])
        if kind > 2 or t not in row:
            continue
        v = data["wave_values"][start[g] : start[g + 1]]
        if v.size > max_samples:
            v = v[np.sort(np.random.default_rng([seed, g]).choice(v.size, max_samples, replace=False))]
        i, st, j = row[t], int(data["wave_stage"][g]), col[int(data["wave_key"][g])]
        values[i, st, j, kind, : v.size] = np.rint(v)
        count[i, st, j, kind] = v.size
        present[i, st, j] |= kind == 0
    return WaveTable(values, count, present, keys.astype(np.int32), tuple(str(x) for x in data["name"][sel]))
