"""`jaxsched leaderboard`: policies scored against every system at once.

    jaxsched leaderboard [--systems dbf,das] [--policy NAME | RUN_DIR | module:function | file.py:function]

For each system, on its paper preset (`System.preset`, a config of `configs/`) and that preset's held-out
test episodes and keys (`jaxsched eval`'s): the preset's own baselines, and every policy given — a
heuristic NAME of the system, a trained RUN_DIR of it (every learner with checkpoints there; the run must
have been trained on the preset's env), or any `policy(params, obs, key) -> action` imported from
`module:function` (called with `params` None) — each group in one compiled program. The table holds each
system's headline metric (`Evaluation.best_metric`, else its first metric) as mean ± std over the test
episodes (a trained learner: its mean over seeds per episode first) and the rank within the system;
`write_leaderboard` stores it as JSON and a PNG.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from jaxsched.experiments.evaluate import (
    play_baselines,
    play_learner,
    restore_policy,
    run_policies,
    trained_names,
)
from jaxsched.experiments.live import live
from jaxsched.experiments.throughput import platform_info

ROOT = Path(__file__).resolve().parents[2]  # the repository: where `configs/` is


def load_policy(spec: str) -> tuple[str, Callable]:
    """`(label, policy)` of `module:function` or `path/to/file.py:function` (a one-line error otherwise);
    the working directory is importable, as for `python -m`."""
    module, _, name = spec.rpartition(":")
    if not module or not name:
        raise ValueError(f"--policy {spec!r}: expected module:function or file.py:function")
    try:
        if module.endswith(".py"):
            path = Path(module)
            if not path.is_file():
                raise FileNotFoundError(f"--policy {spec!r}: no file {path}")
            loaded = importlib.util.spec_from_file_location(path.stem, path)
            mod = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(mod)
        else:
            if str(Path.cwd()) not in sys.path and "" not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            mod = importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"--policy {spec!r}: cannot import {module} ({err})") from None
    policy = getattr(mod, name, None)
    if not callable(policy):
        raise ValueError(f"--policy {spec!r}: {module} has no function {name!r}")
    return name, policy


def preset_path(system) -> Path:
    """The system's paper-preset config (`System.preset`, resolved against the repository)."""
    path = ROOT / system.preset
    if not path.is_file():
        raise FileNotFoundError(
            f"{system.kind}: the paper preset {system.preset} is not here (run from a clone)"
        )
    return path


def headline(ev) -> tuple[str, str, bool]:
    """`(metric key, column header, lower is better)` of an evaluation's headline metric."""
    metric = next((m for m in ev.metrics if m.key == ev.best_metric), ev.metrics[0])
    return metric.key, metric.header, metric.lower_is_better


def _row(label: str, kind: str, values) -> dict:
    per_episode = np.asarray(values, np.float64).reshape(-1, np.shape(values)[-1]).mean(0)  # [E]
    return {"policy": label, "kind": kind, "mean": float(per_episode.mean()), "std": float(per_episode.std()),
            "episodes": int(per_episode.size)}  # fmt: skip


def score_system(system, cfg, heuristics: Sequence[str] = (), runs: Sequence[tuple[Path, object]] = (),
                 user: Mapping[str, Callable] | None = None, episodes: int | None = None,
                 progress: bool = True) -> dict:  # fmt: skip
    """One system's block of the leaderboard, on `cfg` (its paper preset) with the trained `runs` (`(run
    directory, the config it was trained with)`, each of this system): `{"system", "preset", "metric",
    "header", "lower_is_better", "episodes", "rows": [{"policy", "kind" (baseline | heuristic | learner |
    user), "mean", "std", "episodes", "rank"}]}`, rows best first."""
    from jaxsched.policies import heuristic_names, make_heuristic

    ev = system.evaluation
    key, header, lower = headline(ev)
    with live(f"{system.kind}: building the paper preset {system.preset}", progress):
        env, train, test = (ev.learner.build if ev.build is None else ev.build)(cfg)[:3]
    played = ev.env(cfg, env)
    idx = ev.episodes(cfg, ev.n_test(cfg, test), episodes)
    keys = ev.keys(cfg, len(idx))
    rows = []
    with live(
        f"{system.kind}: compiling and playing the preset's baselines on {len(idx)} episodes", progress
    ):
        for label, m in play_baselines(ev, cfg, played, test, idx, keys).items():
            rows.append(_row(label, "baseline", m[key]))
    extra = {}
    for name in heuristics:
        if name not in heuristic_names(played):
            raise ValueError(
                f"--policy {name!r}: not a heuristic of {system.kind} ({', '.join(heuristic_names(played))})"
            )
        if name not in {r["policy"] for r in rows}:
            extra[name] = ("heuristic", make_heuristic(played, name))
    extra |= {label: ("user", policy) for label, policy in (user or {}).items()}
    for label, (kind, policy) in extra.items():
        with live(f"{system.kind}: compiling and playing {label} on {len(idx)} episodes", progress):
            try:
                out = run_policies(
                    played, test, {label: policy}, idx, keys, ("leaderboard", kind, label), ev.seeds
                )
            except Exception as err:  # a user's policy that does not fit this system's observation/action
                raise ValueError(f"--policy {label} on {system.kind}: {type(err).__name__}: {err}") from None
        rows.append(_row(label, kind, out[label][key]))
    for run, run_cfg in runs:
        run = Path(run)
        names, run_cfg, _ = trained_names(ev, run_cfg, run)
        run_env = (ev.learner.build if ev.build is None else ev.build)(run_cfg)[0]
        if (type(run_env), run_env.config) != (type(env), env.config):
            raise ValueError(
                f"--policy {run}: trained on another env than {system.kind}'s paper preset "
                f"({system.preset}); the leaderboard plays the preset's test episodes"
            )
        for name in names:
            with live(f"{system.kind}: restoring and playing {run.name}/{name}", progress):
                params, _ = restore_policy(ev, run_cfg, name, env, train)
                out = play_learner(ev, run_cfg, name, played, test, params, idx, keys)
            rows.append(_row(f"{run.name}:{ev.labels.get(name, name)}", "learner", out[key]))
    rows.sort(key=lambda r: r["mean"] if lower else -r["mean"])
    for rank, r in enumerate(rows, 1):
        r["rank"] = rank
    return {"system": system.kind, "preset": system.preset, "metric": key, "header": header,
            "lower_is_better": lower, "episodes": int(len(idx)), "rows": rows}  # fmt: skip


def run_config(run: Path) -> Path:
    """The resolved config a trained run wrote (`config.yaml`, in the run or its parent)."""
    for candidate in (run / "config.yaml", run.parent / "config.yaml"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"--policy {run}: no config.yaml (not a run directory of `jaxsched train`)")


def leaderboard_lines(blocks: Sequence[dict]) -> list[str]:
    """Markdown: one table, a block of rows per system."""
    out = ["| system | metric | rank | policy | mean ± std | episodes |", "|---|---|---:|---|---:|---:|"]
    for b in blocks:
        arrow = "↓" if b["lower_is_better"] else "↑"
        for r in b["rows"]:
            out.append(
                f"| {b['system']} | {b['header']} {arrow} | {r['rank']} | {r['policy']} ({r['kind']}) | "
                f"{r['mean']:,.2f} ± {r['std']:,.2f} | {r['episodes']} |"
            )
    return out


def plot_leaderboard(blocks: Sequence[dict], path: Path) -> Path:
    """One panel per system: each policy's headline metric (mean ± std), best on top, highlighted."""
    import matplotlib.pyplot as plt

    import jaxsched.experiments.plots  # noqa: F401  (selects the Agg backend, for files)

    tallest = max(len(b["rows"]) for b in blocks)
    fig, axes = plt.subplots(1, len(blocks), figsize=(4.2 * len(blocks), 1.2 + 0.32 * tallest), squeeze=False)
    for ax, b in zip(axes[0], blocks, strict=True):
        rows = b["rows"][::-1]  # best at the top
        colors = ["tab:orange" if r["rank"] == 1 else "tab:gray" if r["kind"] == "baseline" else "tab:blue"
                  for r in rows]  # fmt: skip
        ax.barh([f"{r['policy']}" for r in rows], [r["mean"] for r in rows], xerr=[r["std"] for r in rows],
                color=colors, capsize=2)  # fmt: skip
        better = "lower" if b["lower_is_better"] else "higher"
        ax.set_title(f"{b['system']}: {b['header']} ({better} is better)", fontsize=9)
        ax.set_xlabel(f"mean ± std over {b['episodes']} test episodes", fontsize=8)
        ax.tick_params(labelsize=7)
    info = platform_info()
    fig.suptitle(f"jaxsched leaderboard (paper presets; {info['device']}, {info['cpu']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_leaderboard(blocks: Sequence[dict], out_dir: Path) -> tuple[Path, Path]:
    """`leaderboard.json` (the blocks and the machine) and `leaderboard.png` in `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    js = out_dir / "leaderboard.json"
    js.write_text(json.dumps({"systems": list(blocks), **platform_info()}, indent=2) + "\n")
    return js, plot_leaderboard(blocks, out_dir / "leaderboard.png")
