"""Figures (matplotlib, Agg backend): learning curves (DBF's Fig. 3), the window head/tail split sweep (DBF's
Fig. 5), grouped bars and lines with spreads and empirical CDFs for any system's paper figures (one axis,
or side-by-side panels: `plot_line_panels`, `plot_cdf_panels`), and two drawing helpers on a given axis (a
layered DAG, a Gantt chart)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Axis labels of the metrics curves plot, in words with units; a system whose metric means something else
# under the same key passes its own (`Learner.labels`, e.g. OSDEC's utilisation in core·steps).
LABELS = {
    "avg_wait": "average waiting time (s)",
    "avg_queue_len": "average queue length (jobs)",
    "utilization": "utilisation (fraction of cores)",
    "avg_job_load": "average job load (core·s)",
    "avg_bsld": "average bounded slowdown",
    "episode_return": "episode return",
    "episode_length": "episode length (decisions)",
    "avg_jct": "average JCT (s)",
    "makespan": "makespan (s)",
    "avg_jct_min": "average JCT (min)",
    "avg_wait_min": "average waiting time (min)",
    "avg_fee": "average fee ($)",
    "avg_effectiveness": "average execution effectiveness E",
    "idle_per_selection": "idle time per selection (s)",
    "total_reward": "total reward (per episode)",
    "td_loss": "TD loss",
    "approx_kl": "approximate KL divergence",
    "aux_loss": "auxiliary tasks' loss",
    "entropy": "policy entropy (per action dimension)",
}
CURVE_METRICS = ("avg_wait", "avg_queue_len", "utilization", "episode_return")


def metric_label(key: str, labels: Mapping[str, str] | None = None) -> str:
    """`key`'s axis label in words with its unit: `labels`, then `LABELS`, else the key spelt out
    (`avg_wait_min` -> "average wait (min)")."""
    if labels and key in labels:
        return labels[key]
    if key in LABELS:
        return LABELS[key]
    words, unit = key.split("_"), ""
    if len(words) > 1 and words[-1] in ("s", "min", "h"):
        unit = f" ({words.pop()})"
    if words[0] == "avg":
        words[0] = "average"
    return " ".join(words) + unit


def metric_title(key: str, labels: Mapping[str, str] | None = None) -> str:
    """A panel title: the label without its unit, its first letter capitalised ("Average JCT")."""
    label = metric_label(key, labels).split(" (")[0]
    return label[:1].upper() + label[1:]


def _records(source) -> list[dict]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            path = path / "metrics.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return list(source)


def curve_stats(records: Iterable[dict], metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(env_steps, mean, std)` across seeds of `metric`, counting at each update only the seeds that
    finished an episode in it, and skipping updates where none did."""
    xs, means, stds = [], [], []
    for r in records:
        vals = np.asarray(r[metric], np.float64)
        eps = np.asarray(r.get("episodes", np.ones_like(vals)), np.float64)
        keep = eps > 0
        if keep.any():
            xs.append(r["env_steps"])
            means.append(vals[keep].mean())
            stds.append(vals[keep].std())
    return np.asarray(xs), np.asarray(means), np.asarray(stds)


def plot_learning_curves(
    metrics_jsonl_path_or_records,
    out_png,
    metrics: tuple[str, ...] = CURVE_METRICS,
    title: str = "",
    labels: Mapping[str, str] | None = None,
) -> Path:
    """One panel per metric against env steps (per seed), mean ± std across seeds (Fig. 3 style); axes
    labelled by `metric_label(key, labels)`."""
    records = _records(metrics_jsonl_path_or_records)
    n = len(metrics)
    cols = 2 if n > 1 else 1
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics, strict=False):
        x, mean, std = curve_stats(records, metric)
        if len(x) > 40:
            # Long runs: each point is whichever episodes ended in that update, and episodes differ a lot
            # in load, so show the raw points faintly and their moving average (10 % of the points).
            ax.plot(x, mean, color="tab:blue", lw=0.8, alpha=0.3, label="per update (seed mean)")
            k = max(3, len(x) // 10)
            smooth = np.convolve(mean, np.ones(k) / k, mode="valid")
            ax.plot(
                x[k // 2 : k // 2 + len(smooth)],
                smooth,
                color="tab:blue",
                lw=2.2,
                label=f"moving average ({k})",
            )
            ax.legend(fontsize=8, loc="best")
        elif len(x):
            ax.plot(x, mean, color="tab:blue", lw=1.6, marker=".")
            ax.fill_between(x, mean - std, mean + std, color="tab:blue", alpha=0.25, lw=0)
        else:
            ax.text(0.5, 0.5, "no finished episodes yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(metric_title(metric, labels))
        ax.set_xlabel("env steps (per seed)")
        ax.set_ylabel(metric_label(metric, labels))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out_png = Path(out_png)
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return out_png


def plot_split_sweep(results: Mapping[tuple[int, int], Mapping[str, tuple[float, float]]], out_png) -> Path:
    """Fig. 5 style: one panel per window size M; x = tail size, left axis average waiting time (red
    points, error bars ± std), right axis average queue length (green crosses, ± std)."""
    windows = sorted({m for m, _ in results})
    if not windows:
        raise ValueError("plot_split_sweep: no results to plot")
    cols = min(3, len(windows))
    rows = -(-len(windows) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for ax, m in zip(axes.flat, windows, strict=False):
        tails = sorted(t for mm, t in results if mm == m)
        wait = np.array([results[(m, t)]["avg_wait"] for t in tails], np.float64)
        queue = np.array([results[(m, t)]["avg_queue_len"] for t in tails], np.float64)
        ax.errorbar(tails, wait[:, 0], yerr=wait[:, 1], fmt="o", color="tab:red", capsize=3, label="avg wait")
        ax.set_xlabel("tail size (jobs)")
        ax.set_ylabel("average waiting time (s)", color="tab:red")
        ax.tick_params(axis="y", labelcolor="tab:red")
        ax2 = ax.twinx()
        dx = 0.15 * (min(np.diff(tails)) if len(tails) > 1 else 1)  # keep the two markers apart
        ax2.errorbar(
            np.asarray(tails) + dx,
            queue[:, 0],
            yerr=queue[:, 1],
            fmt="x",
            color="tab:green",
            capsize=3,
            label="avg queue",
        )
        ax2.set_ylabel("average queue length (jobs)", color="tab:green")
        ax2.tick_params(axis="y", labelcolor="tab:green")
        ax.set_title(f"window M = {m}")
        if len(tails) <= 12:
            ax.set_xticks(tails)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(windows) :]:
        ax.set_visible(False)
    # wrap to the figure's width: a single panel is too narrow for the title on one line
    title = "Window head/tail split: waiting time (red) and queue length (green)"
    fig.suptitle(textwrap.fill(title, width=int(14 * 4.6 * cols / 1.6)))
    fig.tight_layout()
    out_png = Path(out_png)
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return out_png


def plot_grouped_bars(
    groups: Mapping[str, Mapping[str, tuple[float, float]]], out_png, ylabel: str, title: str = "",
    xlabel: str = "",
) -> Path:  # fmt: skip
    """Bars of `groups[group][series] = (mean, std)`: one cluster per group (`xlabel` says what the groups
    are), one colour per series (`distinct_colours`), std as error bars (e.g. a metric per 1-GPU share,
    per policy)."""
    names = list(dict.fromkeys(s for g in groups.values() for s in g))
    width = 0.8 / max(len(names), 1)
    bars = len(groups) * max(len(names), 1)
    # about 0.15 in a bar, within 6-16 in wide; the legend goes below the axes, so the plot keeps its height
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 2.0 + 0.15 * bars)), 4.2 + 0.25 * (len(names) // 5)))
    colours = distinct_colours(len(names))
    for i, name in enumerate(names):
        xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(groups))]
        mean = [groups[g].get(name, (np.nan, 0))[0] for g in groups]
        std = [groups[g].get(name, (np.nan, 0))[1] for g in groups]
        ax.bar(xs, mean, width, yerr=std, capsize=2, label=name, color=colours[i])
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(textwrap.fill(title, 120), fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(len(names), 5), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return Path(out_png)


def distinct_colours(n: int) -> list[tuple]:
    """`n` colours no two alike: matplotlib's ten up to 10, tab20's pairs up to 20, a hue wheel beyond."""
    if n <= 10:
        return list(plt.get_cmap("tab10").colors[:n])
    if n <= 20:
        return list(plt.get_cmap("tab20").colors[:n])
    return [plt.get_cmap("hsv")(i / n) for i in range(n)]


def _draw_lines(ax, x, series: Mapping[str, tuple], xlabel: str, ylabel: str, title: str = "") -> None:
    for colour, (name, values) in zip(distinct_colours(len(series)), series.items(), strict=True):
        if x is None:
            xs, ys, std = values[0], values[1], None
        else:
            xs, ys, std = x, values[0], values[1] if len(values) > 1 else None
        line = ax.plot(xs, ys, label=name, lw=1.2, marker="o" if len(xs) < 20 else None, color=colour)[0]
        if std is not None:
            ys, std = np.asarray(ys), np.asarray(std)
            ax.fill_between(xs, ys - std, ys + std, color=line.get_color(), alpha=0.15)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(textwrap.fill(title, 90), fontsize=9)


def plot_lines(
    x, series: Mapping[str, tuple], out_png, xlabel: str, ylabel: str, title: str = "", twin=None
) -> Path:
    """One line per `series[name] = (y,)` or `(y, std)` against `x` (a shared `[n]`, or per series as
    `series[name] = (x, y)` when `x` is None); `twin = (label, x, y)` draws one more line on a right axis."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    _draw_lines(ax, x, series, xlabel, ylabel, title)
    if twin is not None:
        label, tx, ty = twin
        right = ax.twinx()
        right.plot(tx, ty, color="tab:gray", lw=0.8, ls="--", label=label)
        right.set_ylabel(label)
        right.legend(fontsize=7, loc="upper right")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return Path(out_png)


def _panels(n: int, width: float = 5.0, height: float = 3.8):
    fig, axes = plt.subplots(1, max(n, 1), figsize=(width * max(n, 1), height), squeeze=False)
    return fig, list(axes.flat)


def _save_panels(fig, out_png, title: str) -> Path:
    if title:
        fig.suptitle(textwrap.fill(title, 120), fontsize=10)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return Path(out_png)


def plot_line_panels(panels: Mapping[str, tuple], out_png, title: str = "") -> Path:
    """Side-by-side `plot_lines` panels: `panels[panel title] = (x, series, xlabel, ylabel)`, each as
    `plot_lines` reads them (`series[name] = (y,)` or `(y, std)`, std drawn as a band)."""
    fig, axes = _panels(len(panels))
    for ax, (name, (x, series, xlabel, ylabel)) in zip(axes, panels.items(), strict=False):
        _draw_lines(ax, x, series, xlabel, ylabel, name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    return _save_panels(fig, out_png, title)


def _draw_cdfs(ax, samples: Mapping[str, np.ndarray], xlabel: str, title: str = "") -> None:
    for colour, (name, values) in zip(distinct_colours(len(samples)), samples.items(), strict=True):
        v = np.sort(np.asarray(values, np.float64))
        ax.step(v, np.arange(1, v.size + 1) / max(v.size, 1), where="post", label=name, lw=1.2, color=colour)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction")
    ax.set_ylim(0, 1.02)
    ax.set_title(textwrap.fill(title, 90), fontsize=9)
    ax.legend(fontsize=7, loc="lower right")


def plot_cdfs(samples: Mapping[str, np.ndarray], out_png, xlabel: str, title: str = "") -> Path:
    """Empirical CDFs of `samples[name]` (1-D arrays), one line each (e.g. JCTs per scheduler)."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    _draw_cdfs(ax, samples, xlabel, title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return Path(out_png)


def plot_cdf_panels(
    panels: Mapping[str, Mapping[str, np.ndarray]], out_png, xlabel: str, title: str = ""
) -> Path:
    """Side-by-side `plot_cdfs` panels, `panels[panel title][name]` = samples, on a shared x range (e.g.
    JCTs per scheduler at each load)."""
    fig, axes = _panels(len(panels))
    for ax, (name, samples) in zip(axes, panels.items(), strict=False):
        _draw_cdfs(ax, samples, xlabel, name)
        ax.grid(alpha=0.3)
    finite = [np.max(v) for s in panels.values() for v in s.values() if np.size(v)]
    if finite:
        for ax in axes:
            ax.set_xlim(0, 1.02 * max(finite))
    return _save_panels(fig, out_png, title)


def draw_dag(ax, parents, labels, height) -> None:
    """A DAG on `ax`, layered by `height` (sinks at the bottom): `parents[v]` the parent bitmask of node v,
    `labels[v]` its text. Edges point from parent to child."""
    n = len(labels)
    levels: dict[int, list[int]] = {}
    for v in range(n):
        levels.setdefault(int(height[v]), []).append(v)
    pos = {}
    for h, nodes in levels.items():
        for i, v in enumerate(nodes):
            pos[v] = ((i + 1) / (len(nodes) + 1), h)
    for c in range(n):
        for p in range(n):
            if (int(parents[c]) >> p) & 1:
                arrow = dict(arrowstyle="->", color="0.5", shrinkA=12, shrinkB=12)
                ax.annotate("", xy=pos[c], xytext=pos[p], arrowprops=arrow)
    for v, (x, y) in pos.items():
        ax.text(x, y, labels[v], ha="center", va="center", fontsize=7,
                bbox=dict(boxstyle="round", fc="lightsteelblue", ec="0.3"))  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, max(levels) + 0.6 if levels else 0.6)
    ax.axis("off")


def draw_gantt(ax, rows: int, bars, holds=(), xlabel: str = "time (s)") -> None:
    """A Gantt chart on `ax`: `bars` of `(row, start, end, colour_key)` (one colour per key, e.g. per job),
    and hatched `holds` of `(start, end, colour_key)` drawn above the rows (e.g. idle slots of a job)."""
    cmap = plt.get_cmap("tab20")
    keys = sorted({b[3] for b in bars} | {h[2] for h in holds})
    colour = {k: cmap(i % 20) for i, k in enumerate(keys)}
    for row, start, end, key in bars:
        ax.barh(row, end - start, left=start, height=0.8, color=colour[key], edgecolor="0.2", lw=0.3)
    for i, (start, end, key) in enumerate(holds):
        ax.barh(rows + 0.6 + 0.5 * (i % 2), end - start, left=start, height=0.4, color=colour[key],
                hatch="//", alpha=0.6, edgecolor="0.2", lw=0.3)  # fmt: skip
    ax.set_yticks(range(rows), [f"executor {r}" for r in range(rows)], fontsize=7)
    ax.set_xlabel(xlabel)
