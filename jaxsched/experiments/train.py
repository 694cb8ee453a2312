"""The chunked trainer every system's learners run on: K updates per jitted call, seeds `vmap`ped in one
program, progress from the first second, orbax checkpoints after every chunk and an exact resume.

    records = train_chunks(run_dir, name, init, chunk, keys, train_params, total=..., per_chunk=...,
                           steps_per_update=..., summary=..., resume=False)

After each chunk: one JSON line per update is appended to `metrics.jsonl` (`{"update", "env_steps",
"wall_s", <metric>: [one value per seed]}`; `episodes` counts the episodes that finished in that update,
and the episode metrics are `null` where it is 0), then the whole vmapped runner (network, optimiser, env
states, keys) is saved with orbax (the last two kept). A resumed run restores it and drops metric lines past
it, so it ends at bitwise the same parameters and metrics (but `wall_s`) as an uninterrupted run.

The env params (workload banks) are arguments of the jitted programs, not constants baked into them; a
system caches its programs per (algorithm config, env config), so a second run of the same shapes does not
compile again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxsched.experiments.config import config_from_dict, dump_config, load_yaml
from jaxsched.experiments.live import live
from jaxsched.experiments.sharding import seed_sharding, shard_seeds

CHECKPOINT_DIR = "checkpoints"
METRICS_FILE = "metrics.jsonl"
CONFIG_FILE = "config.yaml"
EVAL_FILE = "eval.json"  # what a system's evaluator writes into a run directory
CURVE_FILE = "learning_curve.png"
KEEP_CHECKPOINTS = 2


def trained_learners(checkpoint, listed, known, what: str, field: str) -> tuple[list[str], Path]:
    """`(learners, run root)` behind `--checkpoint`: a run directory holding one folder per learner
    (those of `listed` with checkpoints), or one learner's folder (its name must be in `known`). No
    trained learner there is a `FileNotFoundError` naming what was expected (`what`: e.g. "variant";
    `field`: the config key that lists them)."""
    path = Path(checkpoint)
    if (path / CHECKPOINT_DIR).is_dir():  # one learner's folder
        names, path = [path.name], path.parent
    else:
        names = [n for n in listed if (path / n / CHECKPOINT_DIR).is_dir()]
    if not names or names[0] not in known:
        raise FileNotFoundError(
            f"--checkpoint {checkpoint}: no trained {what} there (expected {path}/<{what}>/"
            f"{CHECKPOINT_DIR} for a {what} of {field}: {', '.join(listed)})"
        )
    return names, path


_PROGRAMS: dict = {}  # every system's compiled training programs, by cache key (`cached_program`)


def cached_program(cache_key, make):
    """`make()` (a jitted program, or a tuple of them) built once per `cache_key` (what it depends on:
    the algorithm's config, the env config, the learner) for every system: another run of the same shapes
    does not compile again, and no system keeps a cache of its own."""
    if cache_key not in _PROGRAMS:
        _PROGRAMS[cache_key] = make()
    return _PROGRAMS[cache_key]


def seed_programs(cache_key, init_one, chunk_one, map_init: bool = True):
    """Jitted `init(keys, env_params)` and `chunk(runner, env_params)` over a leading seed axis, from one
    seed's `init_one(key, env_params)` and `chunk_one(runner, env_params)` (`cached_program`). `map_init`:
    the seeds' inits in a `lax.map` (else `vmap`); the chunk is always `vmap`ped."""

    def make():
        def init(keys, env_params):
            one = lambda k: init_one(k, env_params)  # noqa: E731
            return jax.lax.map(one, keys) if map_init else jax.vmap(one)(keys)

        def chunk(runner, env_params):
            return jax.vmap(lambda r: chunk_one(r, env_params))(runner)

        return jax.jit(init), jax.jit(chunk)

    return cached_program(("seeds", cache_key), make)


def algorithm_programs(cache_key, make_algorithm, map_init: bool = True):
    """`seed_programs` of an algorithm built for the env params: `make_algorithm(env_params)` has
    `init(key)` and `train_chunk(runner)` (PPO, DQN)."""
    return seed_programs(
        cache_key,
        lambda key, env_params: make_algorithm(env_params).init(key),
        lambda runner, env_params: make_algorithm(env_params).train_chunk(runner),
        map_init,
    )


def seed_keys(cfg) -> jax.Array:
    """The training seeds of a config: `num_seeds` keys split from `seed` (vmapped by the trainer)."""
    return jax.random.split(jax.random.key(cfg.seed), cfg.num_seeds)


def report_run(run_dir: Path, records: list[dict], title: str, curve_metrics=None, progress: bool = True,
               checkpoint_note: str = "", labels=None) -> Path:  # fmt: skip
    """After a learner's training: draw its learning curve (`CURVE_FILE`, the metrics `curve_metrics` or
    the plotting default, axes labelled by `labels` over `plots.LABELS`) and say where its metrics, last
    checkpoint and curve are. Returns the curve."""
    from jaxsched.experiments.plots import CURVE_METRICS, plot_learning_curves

    curve = Path(run_dir) / CURVE_FILE
    plot_learning_curves(records, curve, curve_metrics or CURVE_METRICS, title=title, labels=labels)
    if progress:
        print(f"metrics:        {Path(run_dir) / METRICS_FILE}")
        print(
            f"checkpoint:     {Path(run_dir) / CHECKPOINT_DIR / str(records[-1]['update'])}{checkpoint_note}"
        )
        print(f"learning curve: {curve}")
    return curve


def checkpoint_manager(
    run_dir: Path, read_only: bool = False, subdir: str = CHECKPOINT_DIR
) -> ocp.CheckpointManager:
    """Orbax manager of `run_dir/subdir` (the runner checkpoints by default)."""
    # Reading keeps every checkpoint (max_to_keep=None) and creates nothing; orbax's own read_only mode
    # only adds warnings.
    options = ocp.CheckpointManagerOptions(
        max_to_keep=None if read_only else KEEP_CHECKPOINTS,
        create=not read_only,
        enable_async_checkpointing=False,
    )
    return ocp.CheckpointManager(Path(run_dir).absolute() / subdir, options=options)


def abstract_state(init, keys, env_params, sharding=None):
    """The pytree `init(keys, env_params)` would return, as placed shape structs (nothing runs);
    `sharding`: their placement (default: `seed_sharding` of one device)."""
    shapes = jax.eval_shape(init, keys, env_params)
    sharding = seed_sharding(int(keys.shape[0]), 1) if sharding is None else sharding
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), shapes)


def restore_runner(mngr: ocp.CheckpointManager, step: int, template):
    try:
        return mngr.restore(step, args=ocp.args.StandardRestore(template))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"checkpoint {mngr.directory}/{step} does not match the config (network, env or seed "
            f"shapes differ): {e}"
        ) from None


def restore_latest(run_dir: Path, template):
    """`(runner, update)` of `run_dir`'s latest checkpoint, restored onto `template()` (the abstract
    runner; called only when there is a checkpoint). None is a `FileNotFoundError` saying to train first."""
    mngr = checkpoint_manager(run_dir, read_only=True)
    try:
        step = mngr.latest_step()
        if step is None:
            where = Path(run_dir) / CHECKPOINT_DIR
            raise FileNotFoundError(f"no checkpoint in {where}: jaxsched train CONFIG first")
        return restore_runner(mngr, step, template()), step
    finally:
        mngr.close()


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON-lines file (none if it is missing); a line cut short by a kill ends them."""
    records = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line cut short by a kill; nothing after it was checkpointed
    return records


def read_metrics(path) -> list[dict]:
    """The records of a `metrics.jsonl` (a run dir or the file)."""
    path = Path(path)
    return read_jsonl(path / METRICS_FILE if path.is_dir() else path)


def _chunk_records(metrics: dict, steps_per_update: int, wall_s: float) -> list[dict]:
    """One JSON-able record per update of a chunk's metrics `{name: [seeds, K]}`. An episode metric of a
    seed that finished no episode in that update (NaN from `core.wrappers.episode_mean`) is `None`
    (`null`); any other NaN stays NaN, so a diverged loss is not hidden."""
    m = {k: np.asarray(v) for k, v in jax.device_get(metrics).items()}  # [seeds, K]
    updates = m.pop("update")[0]
    no_episode = m["episodes"] == 0 if "episodes" in m else np.zeros_like(updates, bool)[None]
    records = []
    for i, u in enumerate(updates):
        rec = {"update": int(u), "env_steps": int(u) * steps_per_update, "wall_s": round(wall_s, 3)}
        for k, v in m.items():
            col = v[:, i]
            if np.issubdtype(col.dtype, np.integer):
                rec[k] = [int(x) for x in col]
            else:
                empty = no_episode[:, i]
                rec[k] = [None if np.isnan(x) and e else float(x) for x, e in zip(col, empty, strict=True)]
        records.append(rec)
    return records


def weighted_episode_mean(records: list[dict], key: str) -> float:
    """Mean of an episode metric over records, weighted by the episodes each finished (nan if none).
    A record holds, per seed (or as one number), the episodes that ended in its update and their mean."""
    eps = np.array([r["episodes"] for r in records], np.float64)
    if eps.sum() == 0:
        return float("nan")
    values = np.array([r[key] for r in records], np.float64)  # null → NaN, where eps is 0
    return float(np.where(eps > 0, values * eps, 0.0).sum() / eps.sum())


def resume_diffs(cfg, saved: dict) -> list[str]:
    """Dotted keys in which `cfg` differs from the config a run was started with (`saved`, a mapping as
    `to_dict()` gives it), leaving out those `cfg.RESUME_MAY_DIFFER` names (sections or dotted keys)."""
    now = cfg.to_dict()
    sections = [k for k in now if k not in cfg.RESUME_MAY_DIFFER]
    return config_diffs(saved, now, sections, ignore=cfg.RESUME_MAY_DIFFER)


def config_diffs(saved: dict, now: dict, sections, ignore=()) -> list[str]:
    """Dotted keys of `sections` whose values differ between two config dicts (`ignore`: dotted keys
    that may differ)."""
    diffs = []
    for section in sections:
        a, b = saved[section], now[section]
        if isinstance(a, dict):
            diffs += [f"{section}.{k}" for k in a if a[k] != b[k]]
        elif a != b:
            diffs.append(section)
    return [d for d in diffs if d not in ignore]


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console()
    if not console.is_terminal:  # a log file: wide enough for one line per update of the bar
        console = Console(width=140)
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("updates"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=console,
        disable=not enabled,
    )


def check_no_run(run_dir: Path, resume: bool) -> int | None:
    """The update of `run_dir`'s last checkpoint (None if none); an error if there is one and not
    `resume`."""
    if not (run_dir / CHECKPOINT_DIR).exists():
        return None
    mngr = checkpoint_manager(run_dir, read_only=True)
    latest = mngr.latest_step()
    mngr.close()
    if latest is not None and not resume:
        raise ValueError(
            f"{run_dir} already holds a run (checkpoint at update {latest}); pass --resume to continue "
            "it, or choose another name (--name) or out_dir (--out-dir)"
        )
    return latest


def saved_config(cfg_class, run_dir: Path) -> dict | None:
    """The resolved config a run directory was trained with, as `cfg_class.to_dict()` gives it (None
    when it has no `config.yaml`). Its paths are taken as written (no `source`: they were resolved when
    the run started, and resolving them again beside the run directory would move a relative one)."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        return None
    return config_from_dict(cfg_class, load_yaml(path)).to_dict()


def episode_summary(metric: str, label: str, unit: str, return_fmt: str = ".2f", fmt: str = ",.0f"):
    """`summary(records) -> str` for `train_chunks`' progress line: the chunk's episode return and
    `metric` (shown as `label`, in `unit`), each weighted by the episodes that ended."""

    def summary(records: list[dict]) -> str:
        ret = weighted_episode_mean(records, "episode_return")
        if not np.isfinite(ret):
            return "no episode finished yet"
        value = weighted_episode_mean(records, metric)
        return f"return {ret:{return_fmt}}  {label} {value:{fmt}} {unit}".rstrip()

    return summary


def open_run_dir(cfg, run_dir: Path, resume: bool, header: str, may_grow: tuple[str, ...] = ()) -> bool:
    """Make `run_dir` ready for `train_chunks`, the same way for every system: refuse a run already there
    unless `resume` (`check_no_run`); on a resume, refuse a config that differs from the one the run
    started with (`resume_diffs`) in anything but the dotted keys of `may_grow` (e.g. the total number
    of updates: training longer is a legitimate resume); then write the resolved config (`config.yaml`,
    after the comment line `header`). Returns whether the run resumes from a checkpoint."""
    resuming = check_no_run(run_dir, resume) is not None
    saved = saved_config(type(cfg), run_dir) if resuming else None
    if saved is not None:
        diffs = [d for d in resume_diffs(cfg, saved) if d not in may_grow]
        if diffs:
            raise ValueError(
                f"cannot resume {run_dir}: the config differs from the one it was started with in "
                f"{', '.join(diffs)} (see {run_dir / CONFIG_FILE})"
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    dump_config(cfg, run_dir / CONFIG_FILE, header=header)
    return resuming


def train_chunks(
    run_dir: Path, name: str, init, chunk, keys, train_params, *, total: int, per_chunk: int,
    steps_per_update: int, summary, resume: bool, progress: bool = True,
    stop_after_chunks: int | None = None, t_build: float | None = None, on_checkpoint=None,
    devices: int | None = None, on_records=None,
) -> list[dict] | None:  # fmt: skip
    """The chunk loop shared by every trainer: start (or, with `resume`, restore the last checkpoint of
    `run_dir`), run jitted `chunk(runner, train_params)` calls of `per_chunk` updates until `total`,
    appending per-update records to `metrics.jsonl` and checkpointing the runner after each. `init(keys,
    train_params)` builds the vmapped runner; `summary(records) -> str` labels the progress bar;
    `open_run_dir` vets the run directory and the config before. `on_checkpoint(runner, update) -> str`
    (optional) sees the starting runner and the runner after every chunk, before that chunk's checkpoint
    is saved (so what it stores is never behind the runner's checkpoint); its text joins the progress line.
    `devices`: how many devices the seeds are spread over (`experiments.sharding.seed_sharding`; default
    the most that divide the seed count). `on_records(records)` (optional: `experiments.loggers`) sees each
    chunk's records once they are in `metrics.jsonl`. Returns every record, or None when stopped by
    `stop_after_chunks` before `total`."""
    latest = check_no_run(run_dir, resume)
    mngr = checkpoint_manager(run_dir) if latest is not None else None
    run_dir.mkdir(parents=True, exist_ok=True)
    say = print if progress else (lambda *a, **k: None)
    t_build = time.perf_counter() if t_build is None else t_build
    metrics_path = run_dir / METRICS_FILE
    num_seeds = int(keys.shape[0])
    sharding = seed_sharding(num_seeds, devices)
    if latest is None:
        # Committed like a restored state, so a fresh and a resumed run share one compiled program.
        with live(f"{name}: initialising {num_seeds} seed(s) (compiling the initialisation)", progress):
            runner = shard_seeds(init(keys, train_params), sharding)
        records: list[dict] = []
        if resume:
            say(f"no checkpoint in {run_dir}: starting from scratch")
    else:
        with live(f"{name}: restoring the checkpoint at update {latest}", progress):
            runner = restore_runner(mngr, latest, abstract_state(init, keys, train_params, sharding))
        records = [r for r in read_jsonl(metrics_path) if r["update"] <= latest]
        say(f"resuming {run_dir} from the checkpoint at update {latest}")
    metrics_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    if mngr is None:
        mngr = checkpoint_manager(run_dir)

    done = int(np.asarray(runner.update)[0])
    if done % per_chunk or done > total:
        raise ValueError(
            f"the checkpoint at update {done} does not fit total_updates={total} in chunks of "
            f"updates_per_chunk={per_chunk}"
        )
    wall0 = records[-1]["wall_s"] if records else 0.0
    if done < total:
        with live(f"{name}: compiling the training program ({per_chunk} updates a chunk)", progress):
            compiled = chunk.lower(runner, train_params).compile()
        say(
            f"{name}: {num_seeds} seed(s) on {len(sharding.device_set)} device(s) × {steps_per_update:,} env "
            "steps per update; "
            f"built, initialised and compiled in {time.perf_counter() - t_build:.1f} s"
        )
    on_checkpoint = on_checkpoint or (lambda runner, update: "")
    info = on_checkpoint(runner, done)
    t0 = time.perf_counter()
    chunks = 0
    with _progress(progress) as bar:
        task = bar.add_task(name, total=total, completed=done, info=info)
        while done < total:
            t_chunk = time.perf_counter()
            runner, metrics = compiled(runner, train_params)
            metrics = jax.device_get(metrics)  # waits for the chunk: the call above only dispatches it
            new = _chunk_records(metrics, steps_per_update, wall0 + time.perf_counter() - t0)
            rate = per_chunk * steps_per_update * num_seeds / (time.perf_counter() - t_chunk)
            with metrics_path.open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in new)
            if on_records is not None:
                on_records(new)
            records += new
            done = new[-1]["update"]
            info = on_checkpoint(runner, done)
            mngr.save(done, args=ocp.args.StandardSave(runner))
            mngr.wait_until_finished()
            bar.update(task, completed=done, info=f"{rate:,.0f} env steps/s  {summary(new)}  {info}")
            chunks += 1
            if stop_after_chunks is not None and chunks >= stop_after_chunks and done < total:
                mngr.close()
                return None
    mngr.close()
    return records
