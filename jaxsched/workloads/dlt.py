"""Deep-learning training (DLT) jobs for the GPU-locality cluster of SCED² (`DLTWorkload`), and a loader
for DLT trace CSVs.

A DLT job asks for `gpus` GPUs, gang-scheduled and non-preemptive, trains model `model` (an index into
`DLT_MODELS`, the six of the paper's Table II), and runs `duration` seconds when its GPUs sit on one
server (the ideal time `T_ideal` of Eq. 2; the locality model stretches it on scattered GPUs).

Two CSV layouts are read (`load_dlt_csv`), recognised by their header:
  * Tiresias-style: `job_id,num_gpu,submit_time,iterations,model_name,duration,interval` (any column
    order; `iterations` and `interval` are read past);
  * plain: `submit,gpus,duration,model` (job ids are the row numbers, from 0).

Rules (each violation is a `ValueError` naming the file, its 1-based line and the column):
  * a data row has as many fields as the header; blank lines are skipped;
  * numbers may be written as floats ("4.0"), but GPU counts and job ids must be whole; non-numbers,
    NaN and infinities are errors;
  * `gpus >= 1`, `duration > 0`, `submit >= 0`; job ids unique;
  * the model is one of `DLT_MODELS` or an alias of one (`MODEL_ALIASES`), case-insensitive; another name
    goes through `model_map` (`[(name, model or "drop")]`, `"*"` for any other name; default
    `DEFAULT_MODEL_MAP`), and the report counts what was mapped and dropped (`DLTReport.changes()`);
    a name the map does not take is an error naming it;
  * a job wider than `cluster_gpus` (when given) is an error naming it, unless `drop_too_wide=True`
    (dropped and counted in the report);
  * the jobs are sorted stably by submit time (the simulator needs arrival order); the report says whether
    the file already was.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from flax import struct

# The paper's Table II, its language, speech and vision models.
DLT_MODELS = ("transformer", "deepspeech", "vgg16", "inception3", "resnet50", "alexnet")
MODEL_ALIASES = {
    "inceptionv3": "inception3",
    "inception_v3": "inception3",
    "inception-v3": "inception3",
    "resnet-50": "resnet50",
    "resnet_50": "resnet50",
    "vgg-16": "vgg16",
    "vgg_16": "vgg16",
    "deep_speech": "deepspeech",
    "deepspeech2": "deepspeech",
}
# Common models outside the paper's six, mapped to the one of their locality class (`envs.gpu_locality.
# params`: communication-bound VGGs to VGG16, the deeper and shallower ResNets to ResNet-50, Inception v4
# and GoogLeNet to Inception3, Transformer language models to the Transformer); any other name ("*") is
# dropped and counted. Tiresias's `60_job.csv` uses vgg19, vgg11, resnet152, resnet101, inception4 and
# googlenet besides four of the six.
DEFAULT_MODEL_MAP = (
    ("vgg11", "vgg16"), ("vgg13", "vgg16"), ("vgg19", "vgg16"),
    ("resnet18", "resnet50"), ("resnet34", "resnet50"), ("resnet101", "resnet50"), ("resnet152", "resnet50"),
    ("inception4", "inception3"), ("inceptionv4", "inception3"), ("googlenet", "inception3"),
    ("bert", "transformer"), ("gpt2", "transformer"),
    ("*", "drop"),
)  # fmt: skip
DROP = "drop"
TIRESIAS_COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")
PLAIN_COLUMNS = ("submit", "gpus", "duration", "model")


@struct.dataclass
class DLTWorkload:
    """DLT jobs in arrival order, arrays `[J]`."""

    job_id: jnp.ndarray  # i32
    submit: jnp.ndarray  # f32 seconds
    gpus: jnp.ndarray  # i32
    duration: jnp.ndarray  # f32 seconds on one server (T_ideal)
    model: jnp.ndarray  # i32 index into DLT_MODELS

    @property
    def n_jobs(self) -> int:
        return int(self.gpus.shape[0])


@dataclass(frozen=True)
class DLTReport:
    """What `load_dlt_csv` read: the layout (`tiresias` or `plain`), data rows, jobs kept, jobs dropped as
    wider than the cluster, and whether the rows were already in submit order."""

    source: str
    layout: str
    n_rows: int
    n_jobs: int
    n_dropped_too_wide: int
    was_sorted: bool
    mapped: dict = field(default_factory=dict)  # {"name → model": jobs} through `model_map`
    dropped_models: dict = field(default_factory=dict)  # {name: jobs} dropped by `model_map`
    dropped: dict = field(default_factory=dict)  # {reason: jobs} a trace's unschedulable jobs (dl_traces)

    def changes(self) -> str:
        """One line of what was mapped or dropped, "" when nothing was."""
        said = [f"{n:,} {name}" for name, n in self.mapped.items()]
        said += [f"{n:,} {name} dropped" for name, n in self.dropped_models.items()]
        said += [f"{n:,} dropped ({reason})" for reason, n in self.dropped.items()]
        said += [f"{self.n_dropped_too_wide:,} dropped as wider than the cluster"] * bool(
            self.n_dropped_too_wide
        )
        return f"{self.source}: of {self.n_rows:,} jobs, " + "; ".join(said) if said else ""


def model_index(name: str) -> int | None:
    """The index of `name` (or of its alias) in `DLT_MODELS`, case-insensitive; None when unknown."""
    key = name.strip().lower()
    key = MODEL_ALIASES.get(key, key)
    return DLT_MODELS.index(key) if key in DLT_MODELS else None


def check_model_map(pairs, key: str = "model_map") -> dict[str, str]:
    """`{name: model or "drop"}` of `[(name, target)]`; a target that is neither a model of `DLT_MODELS`
    (or an alias) nor "drop" is a `ValueError` naming `key`."""
    out = {}
    for name, target in pairs:
        if target.strip().lower() != DROP and model_index(target) is None:
            raise ValueError(
                f"{key}: {name!r} maps to {target!r}, which is neither one of {', '.join(DLT_MODELS)} "
                f"nor {DROP!r}"
            )
        out[name.strip().lower()] = target.strip().lower()
    return out


def wider_than_cluster(who: str, gpus: int, cluster_gpus: int | None, drop_too_wide: bool) -> bool:
    """Whether the job `who` (its file, line or entry) of `gpus` GPUs is dropped as wider than the cluster
    (the caller counts it); with `drop_too_wide` False such a job is a `ValueError` naming it."""
    if cluster_gpus is None or gpus <= cluster_gpus:
        return False
    if not drop_too_wide:
        raise ValueError(
            f"{who} asks for {gpus} GPUs, more than the cluster's {cluster_gpus} (drop_too_wide=True drops "
            "such jobs)"
        )
    return True


def _number(source, lineno: int, column: str, text: str, whole: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{source}: line {lineno}: {column} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{source}: line {lineno}: {column} must be finite, got {text!r}")
    if whole and value != int(value):
        raise ValueError(f"{source}: line {lineno}: {column} must be a whole number, got {text!r}")
    return value


def _layout(source, header: list[str]) -> tuple[str, dict[str, int]]:
    """`(layout, {column: position})` of a header row."""
    names = [h.strip().lower() for h in header]
    for layout, columns in (("tiresias", TIRESIAS_COLUMNS), ("plain", PLAIN_COLUMNS)):
        if set(columns) <= set(names):
            return layout, {c: names.index(c) for c in columns}
    raise ValueError(
        f"{source}: line 1: the header {','.join(names)!r} is neither a Tiresias-style DLT trace "
        f"({','.join(TIRESIAS_COLUMNS)}) nor a plain one ({','.join(PLAIN_COLUMNS)})"
    )


def load_dlt_csv(
    path: str | Path, cluster_gpus: int | None = None, drop_too_wide: bool = False, model_map=None
) -> tuple[DLTWorkload, DLTReport]:
    """Read a DLT trace CSV (module docstring) into a `DLTWorkload` in arrival order, and its report.
    `model_map`: `[(name, model or "drop")]` for names outside the paper's six (None: `DEFAULT_MODEL_MAP`;
    `()`: none)."""
    path = Path(path)
    mapping = check_model_map(DEFAULT_MODEL_MAP if model_map is None else model_map)
    mapped, dropped_models = Counter(), Counter()
    if not path.is_file():
        raise FileNotFoundError(f"DLT trace file not found: {path}")
    if cluster_gpus is not None and cluster_gpus < 1:
        raise ValueError(f"cluster_gpus must be >= 1, got {cluster_gpus}")
    with path.open(newline="") as f:
        rows = [(i + 1, r) for i, r in enumerate(csv.reader(f)) if any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"{path}: empty file (a DLT trace needs a header and job rows)")
    layout, col = _layout(path, rows[0][1])
    names = {"job_id": "job_id", "gpus": "num_gpu", "submit": "submit_time", "duration": "duration",
             "model": "model_name"} if layout == "tiresias" else {k: k for k in PLAIN_COLUMNS}  # fmt: skip
    n_fields = len(rows[0][1])
    jobs, seen, dropped = [], {}, 0
    for k, (lineno, row) in enumerate(rows[1:]):
        if len(row) != n_fields:
            raise ValueError(f"{path}: line {lineno}: {len(row)} fields, the header has {n_fields}")

        def cell(name: str, row=row) -> str:
            return row[col[names[name]]].strip()

        job_id = k  # plain traces: the row number
        if layout == "tiresias":
            job_id = int(_number(path, lineno, "job_id", cell("job_id"), whole=True))
        gpus = int(_number(path, lineno, names["gpus"], cell("gpus"), whole=True))
        submit = _number(path, lineno, names["submit"], cell("submit"))
        duration = _number(path, lineno, names["duration"], cell("duration"))
        name = cell("model").lower()
        model = model_index(name)
        if gpus < 1:
            raise ValueError(f"{path}: line {lineno}: {names['gpus']} must be >= 1, got {gpus}")
        if duration <= 0:
            raise ValueError(f"{path}: line {lineno}: {names['duration']} must be > 0, got {duration:g}")
        if submit < 0:
            raise ValueError(f"{path}: line {lineno}: {names['submit']} must be >= 0, got {submit:g}")
        if model is None:
            target = mapping.get(name, mapping.get("*"))
            if target is None:
                raise ValueError(
                    f"{path}: line {lineno}: {names['model']} {cell('model')!r} is not a known model "
                    f"(one of {', '.join(DLT_MODELS)}, or an alias: {', '.join(MODEL_ALIASES)}); map it to "
                    "one of them or to 'drop' (model_map; in a config: workload.model_map)"
                )
            if target == DROP:
                dropped_models[name] += 1
                continue
            model = model_index(target)
            mapped[f"{name} → {target}"] += 1
        if job_id in seen:
            raise ValueError(f"{path}: line {lineno}: job_id {job_id} repeats line {seen[job_id]}")
        seen[job_id] = lineno
        if wider_than_cluster(f"{path}: line {lineno}: job {job_id}", gpus, cluster_gpus, drop_too_wide):
            dropped += 1
            continue
        jobs.append((submit, job_id, gpus, duration, model))
    if not jobs:
        raise ValueError(f"{path}: no jobs (only a header, or every job dropped: too wide or by model_map)")
    submits = np.array([j[0] for j in jobs], np.float64)
    order = np.argsort(submits, kind="stable")
    arr = [np.array([jobs[i][c] for i in order]) for c in range(5)]
    workload = DLTWorkload(
        job_id=jnp.asarray(arr[1], jnp.int32),
        submit=jnp.asarray(arr[0], jnp.float32),
        gpus=jnp.asarray(arr[2], jnp.int32),
        duration=jnp.asarray(arr[3], jnp.float32),
        model=jnp.asarray(arr[4], jnp.int32),
    )
    report = DLTReport(
        source=str(path), layout=layout, n_rows=len(rows) - 1, n_jobs=len(jobs), n_dropped_too_wide=dropped,
        was_sorted=bool(np.all(np.diff(submits) >= 0)), mapped=dict(mapped),
        dropped_models=dict(dropped_models),
    )  # fmt: skip
    return workload, report
