"""`jaxsched calibrate CONFIG [--fit]`: a simulator against its paper's own baseline numbers.

A system declares a `Calibration`: its paper's published numbers (`paper_numbers.csv` beside the system:
source, setting, row, kind, metric, value, unit, reference, note), how to point a config at its
*calibration* episodes (a bank disjoint from the test bank) and how to evaluate the config's baselines on
its held-out episodes. A config's `calibration:` section (`experiments.config.CalibrationSection`) says
which of the paper's settings it stands for, which rows `--fit` matches and which knobs it searches.

    compare(...)   every published baseline row of the setting: paper / ours / ratio, matched or not,
                   calibration or validation, and the paper's ranking of the baselines where its gap
                   between two rows exceeds `RANK_GAP`
    fit(...)       the knob grid on the calibration episodes (each candidate a config; the systems cache
                   their compiled programs, so a knob that is an env param compiles once), the candidate
                   with the smallest RMS log-ratio over the calibration rows, then every row on the test
                   episodes

Ratios are ours ÷ paper. With `calibration.relative_to: ROW`, a row's value is its ratio to ROW's (both
the paper's and ours): for a paper whose absolute scale comes from a dataset we do not have.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxsched.experiments.config import with_settings
from jaxsched.experiments.stats import per_unit

PAPER_COLUMNS = ("source", "setting", "row", "kind", "metric", "value", "unit", "reference", "note")
# heuristic / planner: a baseline's number, compared here; derived: a baseline number the paper implies
# (the note says how); learned: an agent's, judged in the claims; relation: a ratio between two rows.
PAPER_KINDS = ("heuristic", "planner", "derived", "learned", "relation")
BASELINE_KINDS = ("heuristic", "planner", "derived")
SPREAD_SUFFIX = "_std"  # a published ± (not compared: a spread, not a level)
RANK_GAP = 0.05  # the paper's ranking of two baselines is checked where their gap exceeds this


class PaperNumber(NamedTuple):
    """One number a paper publishes (a row of `paper_numbers.csv`)."""

    source: str  # where: "Table 1", "Fig. 10 (§IV-C text)"
    setting: str  # which experimental setting (a cluster, a 1-GPU share, a dataset)
    row: str  # the method, in the system's names
    kind: str  # PAPER_KINDS
    metric: str  # the system's metric key
    value: float
    unit: str
    reference: str  # a relation's other row; empty otherwise
    note: str


def read_paper_numbers(path: str | Path) -> tuple[PaperNumber, ...]:
    """The rows of a `paper_numbers.csv`; a malformed row is a one-line error naming the file, the line
    and the field."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(header) != PAPER_COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(PAPER_COLUMNS)}, got {header}")
        out = []
        for line, cells in enumerate(reader, start=2):
            if not cells:
                continue
            if len(cells) != len(PAPER_COLUMNS):
                raise ValueError(f"{path}:{line}: {len(cells)} fields, expected {len(PAPER_COLUMNS)}")
            rec = dict(zip(PAPER_COLUMNS, cells, strict=True))
            if rec["kind"] not in PAPER_KINDS:
                raise ValueError(
                    f"{path}:{line}: kind must be one of {', '.join(PAPER_KINDS)}, got {rec['kind']!r}"
                )
            try:
                value = float(rec["value"])
            except ValueError:
                raise ValueError(f"{path}:{line}: value must be a number, got {rec['value']!r}") from None
            if not math.isfinite(value):
                raise ValueError(f"{path}:{line}: value must be finite, got {rec['value']!r}")
            for field in ("source", "setting", "row", "metric"):
                if not rec[field].strip():
                    raise ValueError(f"{path}:{line}: {field} is empty")
            out.append(PaperNumber(**{**rec, "value": value}))
    return tuple(out)


# {row: {metric: [S, E]}}: a config's baselines on its held-out episodes (S seeds, E episodes)
Results = Mapping[str, Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Calibration:
    """What a system declares for `jaxsched calibrate`."""

    numbers: tuple[PaperNumber, ...]
    # held_out(cfg, purpose) -> cfg: the config whose held-out episodes are the "test" episodes (cfg
    # itself) or the "calibration" episodes (another draw of the same workload, disjoint from the test's)
    held_out: Callable[[Any, str], Any]
    # baselines(cfg) -> {row: {metric: [S, E]}}: the config's baselines on its held-out episodes
    baselines: Callable[[Any], Results]
    # fingerprint(cfg) -> [E, ...]: the held-out episodes' jobs (tests assert the two purposes disjoint)
    fingerprint: Callable[[Any], np.ndarray]
    label: Callable[[str], str] = str  # a row's display name
    # rows `baselines` returns beyond the system's heuristics (e.g. the best of them, or the workload's
    # own statistics), which the paper's numbers may name
    aggregates: tuple[str, ...] = ()
    # Knobs that are env params (dotted config key → the params field): candidates that differ only in
    # them run as one vmapped program, `baselines_batch(cfg, {key: [value per candidate]})` -> [Results]
    param_knobs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    baselines_batch: Callable[[Any, Mapping[str, Sequence]], list] | None = None


PURPOSES = ("test", "calibration")
CALIBRATION_SEED_OFFSET = 10_000  # a calibration bank's seed: the test bank's + this


def with_workload(cfg, **changes):
    """`cfg` with fields of its `workload` section replaced (a seed, a bank)."""
    return cfg.replace(workload=dataclasses.replace(cfg.workload, **changes))


def shifted_held_out(cfg, purpose: str, field: str = "test_seed"):
    """The shared `Calibration.held_out` of a generated workload: `cfg` itself for the test episodes, and
    for the calibration episodes the same generator under another seed (`workload.<field>` +
    `CALIBRATION_SEED_OFFSET`): the same law, none of the test episodes."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}, got {purpose!r}")
    if purpose == "test":
        return cfg
    return with_workload(cfg, **{field: getattr(cfg.workload, field) + CALIBRATION_SEED_OFFSET})


def held_out_bank_seeds(cfg) -> list[int]:
    """The seeds of `num_seeds` held-out banks of a deterministic system (`workload.test_seed` + i): a
    heuristic's seed is another bank. The training bank's seed among them is an error naming the fields."""
    seeds = [cfg.workload.test_seed + i for i in range(cfg.num_seeds)]
    if cfg.workload.bank_seed in seeds:
        raise ValueError(
            f"workload.bank_seed ({cfg.workload.bank_seed}) is one of the held-out banks' seeds {seeds} "
            "(workload.test_seed + i, i < num_seeds): the training bank would be a test bank"
        )
    return seeds


def held_out_baselines(ev, cfg, bank, metrics) -> dict:
    """`{name: {metric: [S, E]}}` of the config's baselines (`ev`: its `experiments.evaluate.Evaluation`)
    on `num_seeds` held-out banks (`held_out_bank_seeds`), each with `jaxsched eval`'s keys;
    `bank(config with workload.test_seed = seed) -> (env, test params, episodes)`."""
    from jaxsched.experiments.evaluate import play_baselines

    per_seed = []
    for seed in held_out_bank_seeds(cfg):
        env, params, episodes = bank(with_workload(cfg, test_seed=seed))
        res = play_baselines(ev, cfg, env, params, np.arange(episodes), ev.keys(cfg, episodes))
        per_seed.append({b: {k: np.asarray(r[k])[0] for k in metrics} for b, r in res.items()})
    return {b: {k: np.stack([r[b][k] for r in per_seed]) for k in metrics} for b in per_seed[0]}


# ---- comparing --------------------------------------------------------------------------------------
def _rows_of(numbers, setting: str) -> list[PaperNumber]:
    return [n for n in numbers if n.setting == setting]


def settings_of(numbers) -> list[str]:
    return list(dict.fromkeys(n.setting for n in numbers))


def _key(row: str, metric: str) -> str:
    return f"{row}.{metric}"


def compare(numbers, results: Results, section) -> dict:
    """Every published number of `section.setting` beside ours (`results`: `{row: {metric: [S, E]}}` on
    one purpose's episodes). Returns `{rows: [...], ranking: [...], summary: {...}}`; a row record holds
    `source, row, metric, kind, unit, paper, ours, ours_std, ratio, matched, role` (role: calibration /
    validation / spread / learned / relation / not evaluated)."""
    setting = section.setting
    mine = _rows_of(numbers, setting)
    if not mine:
        known = ", ".join(settings_of(numbers))
        raise ValueError(f"calibration.setting {setting!r} has no published numbers (settings: {known})")
    paper = {_key(n.row, n.metric): n.value for n in mine if n.kind in BASELINE_KINDS}
    ref = section.relative_to
    if ref is not None and ref not in results:
        raise ValueError(
            f"calibration.relative_to {ref!r} is not an evaluated baseline ({', '.join(results)})"
        )
    fit = set(section.fit)
    unknown = fit - set(paper)
    if unknown:
        raise ValueError(f"calibration.fit names rows with no published baseline number: {sorted(unknown)}")

    def ours(row: str, metric: str):
        """(mean, std, standard error of the mean over the E distinct episodes) of ours, relative to `ref`
        when set (the ratio's error by the delta method over the paired episodes)."""
        if row not in results or metric not in results[row]:
            return None
        v = np.asarray(results[row][metric], np.float64)
        per_episode = per_unit(v)  # [E]: seeds averaged, an episode is one unit
        e = len(per_episode)

        def se(x):
            return float(x.std(ddof=1) / np.sqrt(e)) if e > 1 else float("nan")

        if ref is None:
            return float(v.mean()), float(v.std()), se(per_episode)
        r = np.asarray(results[ref][metric], np.float64)
        ref_episode = per_unit(r)
        ratio = float(v.mean() / r.mean())
        return (
            ratio,
            float(v.std() / abs(r.mean())),
            se(per_episode - ratio * ref_episode) / abs(ref_episode.mean()),
        )

    rows = []
    for n in mine:
        rec = {
            "source": n.source,
            "row": n.row,
            "metric": n.metric,
            "kind": n.kind,
            "unit": n.unit,
            "paper": n.value,
            "ours": None,
            "ours_std": None,
            "ratio": None,
            "matched": None,
            "reference": n.reference,
            "note": n.note,
        }
        key = _key(n.row, n.metric)
        if n.metric.endswith(SPREAD_SUFFIX):
            rows.append({**rec, "role": "spread"})
            continue
        if n.kind == "learned":
            rows.append({**rec, "role": "learned"})
            continue
        if n.kind == "relation":
            rows.append({**rec, "role": "relation"})
            continue
        paper_value = n.value
        if ref is not None:
            base = paper.get(_key(ref, n.metric))
            if base is None:
                rows.append({**rec, "role": "not evaluated", "note": f"no paper value of {ref} to divide by"})
                continue
            paper_value = n.value / base
        got = ours(n.row, n.metric)
        if got is None:
            rows.append({**rec, "paper": paper_value, "role": "not evaluated"})
            continue
        mean, std, se = got
        ratio = mean / paper_value if paper_value != 0 else float("nan")
        trivially = ref is not None and n.row == ref  # 1 / 1
        rows.append(
            {
                **rec,
                "paper": paper_value,
                "ours": mean,
                "ours_std": std,
                "ratio": ratio,
                "ratio_se": se / abs(paper_value) if paper_value != 0 else float("nan"),
                "matched": bool(abs(ratio - 1.0) <= section.tolerance),
                "role": "reference" if trivially else ("calibration" if key in fit else "validation"),
            }
        )
    ranking = ranking_checks(rows)
    compared = [r for r in rows if r["role"] in ("calibration", "validation")]
    summary = {
        "compared": len(compared),
        "matched": sum(bool(r["matched"]) for r in compared),
        "validation_matched": sum(bool(r["matched"]) for r in compared if r["role"] == "validation"),
        "validation": sum(r["role"] == "validation" for r in compared),
        "rankings": len(ranking),
        "rankings_held": sum(c["holds"] for c in ranking),
        # rows whose ratio is within 2 standard errors of the tolerance band: unmatched by sampling alone
        "within_noise": sum(
            bool(not r["matched"] and abs(r["ratio"] - 1.0) - section.tolerance <= 2 * r["ratio_se"])
            for r in compared
        ),
        "tolerance": section.tolerance,
        "relative_to": ref,
    }
    return {"setting": setting, "rows": rows, "ranking": ranking, "summary": summary}


def ranking_checks(rows: list[dict]) -> list[dict]:
    """For every metric, every pair of compared baseline rows whose paper values differ by more than
    `RANK_GAP` (relative to the larger): does ours order them the same way?"""
    compared = [
        r for r in rows if r["role"] in ("calibration", "validation", "reference") and r["ours"] is not None
    ]
    out = []
    for metric in dict.fromkeys(r["metric"] for r in compared):
        same = [r for r in compared if r["metric"] == metric]
        for a, b in itertools.combinations(same, 2):
            gap = abs(a["paper"] - b["paper"]) / max(abs(a["paper"]), abs(b["paper"]), 1e-12)
            if gap <= RANK_GAP:
                continue
            holds = (a["paper"] > b["paper"]) == (a["ours"] > b["ours"])
            out.append(
                {
                    "metric": metric,
                    "a": a["row"],
                    "b": b["row"],
                    "paper_gap": gap,
                    "holds": bool(holds),
                    "paper": (a["paper"], b["paper"]),
                    "ours": (a["ours"], b["ours"]),
                }
            )
    return out


def fit_loss(*reports: dict) -> float:
    """RMS of log(ours / paper) over the calibration rows of `reports` (∞ when one is missing)."""
    rows = [r for rep in reports for r in rep["rows"] if r["role"] == "calibration"]
    logs = [math.log(r["ratio"]) for r in rows if r["ratio"] and r["ratio"] > 0]
    if not rows or len(logs) < len(rows):
        return float("inf")
    return math.sqrt(sum(x * x for x in logs) / len(rows))


# ---- evaluating and fitting ---------------------------------------------------------------------------
def evaluate(cal: Calibration, cfg, purpose: str = "test") -> Results:
    """The config's baselines on its `purpose` episodes."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}, got {purpose!r}")
    return cal.baselines(cal.held_out(cfg, purpose))


def candidates(section) -> list[dict[str, Any]]:
    """Every point of the knob grid, as `{dotted key: value}`."""
    grid = section.knob_grid()
    keys = [k for k, _ in grid]
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(v for _, v in grid))]


def fit(cal: Calibration, cfgs, progress: bool = True) -> dict:
    """Search the knobs on the calibration episodes for the smallest `fit_loss`, then compare every row on
    the test episodes at the best candidate. `cfgs`: one config, or several settings that share one
    workload (the same `calibration.knobs`; each its own `calibration.fit` rows), fitted jointly: every
    candidate sets the knobs in all of them. Returns `{candidates: [{settings, loss, ratios, wall_s}],
    best: settings, configs: [fitted config], test: [compare(...) per config]}` (a single config: `config`
    and `test` unlisted)."""
    single = not isinstance(cfgs, (list, tuple))
    cfgs = [cfgs] if single else list(cfgs)
    section = cfgs[0].calibration
    for c in cfgs[1:]:
        if c.calibration.knobs != section.knobs:
            raise ValueError(
                f"{c.name}: calibration.knobs differ from {cfgs[0].name}'s: a joint fit searches one grid"
            )
    if not any(c.calibration.fit for c in cfgs):
        raise ValueError("calibration.fit names no row: --fit needs at least one calibration row")
    points = candidates(section)
    if not points:
        raise ValueError("calibration.knobs names no knob: --fit has nothing to search")
    tried = []
    with _progress(progress, len(points)) as step:
        for group in _param_groups(cal, points):
            what = "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) for p in group)
            step(len(tried), f"{what} …" + (" (compiling)" if not tried else ""))
            t0 = time.perf_counter()
            per_cfg = [_evaluate_group(cal, c, group) for c in cfgs]  # [config][candidate] -> Results
            wall = (time.perf_counter() - t0) / len(group)
            for j, settings in enumerate(group):
                reports = [
                    compare(cal.numbers, res[j], c.calibration) for c, res in zip(cfgs, per_cfg, strict=True)
                ]
                ratios = {
                    (f"{rep['setting']}:" if len(cfgs) > 1 else "") + _key(r["row"], r["metric"]): r["ratio"]
                    for rep in reports
                    for r in rep["rows"]
                    if r["role"] == "calibration"
                }
                loss = fit_loss(*reports)
                tried.append({"settings": settings, "loss": loss, "ratios": ratios, "wall_s": wall})
                shown = ", ".join(f"{k} ×{v:.3f}" for k, v in ratios.items() if v is not None)
                text = ", ".join(f"{k}={v}" for k, v in settings.items())
                step(len(tried), f"{text}: RMS log-ratio {loss:.4f} ({shown})")
    best = min(tried, key=lambda t: t["loss"])
    fitted = [with_settings(c, best["settings"]) for c in cfgs]
    tests = [compare(cal.numbers, evaluate(cal, c, "test"), c.calibration) for c in fitted]
    out = {"candidates": tried, "best": best["settings"], "configs": fitted, "test": tests}
    if single:
        out.update(config=fitted[0], test=tests[0])
    return out


def _param_groups(cal: Calibration, points: list[dict]) -> list[list[dict]]:
    """The candidates grouped by their values of the knobs that are not env params (one group per static
    setting, in grid order); without a batched evaluator every candidate is its own group."""
    if cal.baselines_batch is None or not cal.param_knobs:
        return [[p] for p in points]
    groups: dict[str, list[dict]] = {}
    for p in points:
        static = repr({k: v for k, v in p.items() if k not in cal.param_knobs})
        groups.setdefault(static, []).append(p)
    return list(groups.values())


def _evaluate_group(cal: Calibration, cfg, group: list[dict]) -> list:
    """Results on `cfg`'s calibration episodes of each candidate of `group` (their static knobs equal):
    one vmapped program over the param knobs when the system has one, else one evaluation each."""
    if len(group) == 1 or cal.baselines_batch is None:
        return [evaluate(cal, with_settings(cfg, p), "calibration") for p in group]
    static = {k: v for k, v in group[0].items() if k not in cal.param_knobs}
    base = cal.held_out(with_settings(cfg, static), "calibration")
    varying = {k: [p[k] for p in group] for k in group[0] if k in cal.param_knobs}
    return cal.baselines_batch(base, varying)


class _progress:
    """Progress over the candidates: `with _progress(on, n) as step: step(i, text)`. A rich bar on a
    terminal; a plain line per candidate in a log file (a bar there prints only when it ends)."""

    def __init__(self, on: bool, total: int):
        self.on, self.total, self.bar = on, total, None

    def __enter__(self):
        if not self.on:
            return lambda i, text: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        if not Console().is_terminal:
            t0 = time.perf_counter()
            return lambda i, text: print(
                f"fit {i}/{self.total} [{time.perf_counter() - t0:.0f} s] {text}", flush=True
            )
        self.bar = Progress(
            TextColumn("fit"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
        )
        self.bar.__enter__()
        task = self.bar.add_task("", total=self.total)
        return lambda i, text: self.bar.update(task, completed=i, description=text)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False


# ---- reporting -----------------------------------------------------------------------------------------
def _num(x, digits: int = 4) -> str:
    if x is None:
        return "—"
    if abs(x) >= 1000:
        return f"{x:,.1f}"
    return f"{x:.{digits}g}"


def report_lines(report: dict, label: Callable[[str], str] = str, title: str = "") -> list[str]:
    """Markdown: every published row (paper / ours / ratio), the ranking checks, a summary line."""
    s = report["summary"]
    rel = f", as ratios to {label(s['relative_to'])}" if s["relative_to"] else ""
    out = [title] if title else []
    within = f"within ±{100 * s['tolerance']:g} %"
    out += [
        f"| row | metric | source | role | paper | ours (± std) | ours ÷ paper (± s.e.) | {within} |",
        "|---|---|---|---|---:|---:|---:|:---:|",
    ]
    for r in report["rows"]:
        ours = "—" if r["ours"] is None else f"{_num(r['ours'])} ± {_num(r['ours_std'], 2)}"
        ratio = "—" if r["ratio"] is None else f"×{r['ratio']:.3f}"
        if r.get("ratio_se") is not None and r["role"] != "reference":
            ratio += f" ± {r['ratio_se']:.3f}"
        ok = "" if r["matched"] is None else ("yes" if r["matched"] else "**no**")
        role = r["role"] + (
            f" (vs {label(r['reference'])})" if r["role"] == "relation" and r["reference"] else ""
        )
        out.append(
            f"| {label(r['row'])} | {r['metric']} | {r['source']} | {role} | {_num(r['paper'])} | {ours} | "
            f"{ratio} | {ok} |"
        )
    out += [
        "",
        f"Matched: {s['matched']} of {s['compared']} compared baseline rows{rel} "
        f"({s['validation_matched']} of {s['validation']} validation rows); the paper's ranking holds for "
        f"{s['rankings_held']} of {s['rankings']} pairs whose paper gap exceeds {100 * RANK_GAP:g} %. "
        f"Unmatched rows within two standard errors of the band (sampling alone could explain them): "
        f"{s['within_noise']}.",
    ]
    broken = [c for c in report["ranking"] if not c["holds"]]
    if broken:
        out += ["", "Rankings that do not hold:", ""]
        out += [
            f"- {c['metric']}: paper {label(c['a'])} {_num(c['paper'][0])} vs {label(c['b'])} "
            f"{_num(c['paper'][1])} (gap {100 * c['paper_gap']:.1f} %); ours {_num(c['ours'][0])} vs "
            f"{_num(c['ours'][1])}"
            for c in broken
        ]
    return out


def fit_lines(result: dict) -> list[str]:
    """Markdown: the knob grid on the calibration episodes, best first."""
    tried = sorted(result["candidates"], key=lambda t: t["loss"])
    keys = list(tried[0]["settings"])
    rows = list(tried[0]["ratios"])
    out = [
        "| " + " | ".join(keys) + " | RMS log-ratio | " + " | ".join(f"{r} ÷ paper" for r in rows) + " |",
        "|" + "---:|" * (len(keys) + 1 + len(rows)),
    ]
    for t in tried:
        cells = [str(t["settings"][k]) for k in keys] + [f"{t['loss']:.4f}"]
        cells += ["—" if t["ratios"].get(r) is None else f"×{t['ratios'][r]:.3f}" for r in rows]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _grid_values(tried: list[dict], key: str) -> list[str]:
    """The distinct values of knob `key` over the candidates (as `repr`s: a value may be a list), in the
    grid's order."""
    return list(dict.fromkeys(repr(t["settings"][key]) for t in tried))


def plot_fit_surface(result: dict, out_png: str | Path, tolerance: float, title: str = "") -> Path:
    """One knob: each calibration row's ours ÷ paper against the knob, the ±tolerance band shaded; two
    knobs: the RMS log-ratio as a heat map; more: the loss per candidate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tried = result["candidates"]
    keys = list(tried[0]["settings"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if len(keys) == 1:
        k = keys[0]
        order = tried  # the grid's order (a knob's values may be lists)
        x = [
            t["settings"][k] if isinstance(t["settings"][k], (int, float)) else repr(t["settings"][k])
            for t in order
        ]
        for row in order[0]["ratios"]:
            ax.plot(x, [t["ratios"][row] for t in order], marker="o", label=row)
        ax.axhspan(
            1 - tolerance, 1 + tolerance, color="tab:green", alpha=0.15, label=f"±{100 * tolerance:g} %"
        )
        ax.axhline(1.0, color="k", lw=0.8)
        best = result["best"][k]
        ax.axvline(
            best if isinstance(best, (int, float)) else repr(best),
            color="tab:red",
            ls="--",
            lw=1,
            label="fitted",
        )
        ax.set_xlabel(k)
        ax.set_ylabel("ours ÷ paper (calibration episodes)")
        ax.legend(fontsize=8)
    elif len(keys) == 2:  # a panel per calibration row: its ratio over the grid, annotated
        plt.close(fig)
        a, b = keys
        xs = _grid_values(tried, a)
        ys = _grid_values(tried, b)
        rows = list(tried[0]["ratios"])
        fig, axes = plt.subplots(1, len(rows), figsize=(4.6 * len(rows), 3.9), squeeze=False)
        for ax, row in zip(axes[0], rows, strict=True):
            z = np.full((len(ys), len(xs)), np.nan)
            for t in tried:
                z[ys.index(repr(t["settings"][b])), xs.index(repr(t["settings"][a]))] = (
                    t["ratios"].get(row) or np.nan
                )
            im = ax.imshow(np.abs(np.log(z)), origin="lower", aspect="auto", cmap="viridis_r", vmin=0)
            for (i, j), v in np.ndenumerate(z):
                ax.text(j, i, f"×{v:.2f}", ha="center", va="center", fontsize=8,
                        color="k" if abs(v - 1) <= tolerance else "w")  # fmt: skip
            ax.set_xticks(range(len(xs)), xs, fontsize=7)
            ax.set_yticks(range(len(ys)), ys, fontsize=7)
            ax.plot(xs.index(repr(result["best"][a])), ys.index(repr(result["best"][b])), "r*", ms=12)
            ax.set_xlabel(a)
            ax.set_ylabel(b)
            ax.set_title(f"{row} ÷ paper", fontsize=8)
        fig.colorbar(im, ax=axes[0].tolist(), label="|log(ours ÷ paper)|")
        fig.suptitle(title, fontsize=9)
        out_png = Path(out_png)
        out_png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png, dpi=110)
        plt.close(fig)
        return out_png
    else:
        ax.plot([t["loss"] for t in tried], marker="o")
        ax.set_xlabel("candidate")
        ax.set_ylabel("RMS log(ours ÷ paper)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return out_png


# ---- the command -------------------------------------------------------------------------------------
def run_calibration(
    cal: Calibration, cfgs, do_fit: bool = False, out_dir=None, progress: bool = True
) -> dict:
    """`jaxsched calibrate CONFIG... [--fit]`: print (and with `out_dir`, write `calibration.md`, `.json`
    and, fitting, `fit_surface.png`) every published baseline row of each config's setting beside ours on
    the test episodes; with `do_fit`, first search the knobs on the calibration episodes (several configs:
    jointly, one workload for several settings)."""
    import json

    from rich.console import Console
    from rich.markdown import Markdown

    from jaxsched.experiments.report import machine_line

    cfgs = [cfgs] if not isinstance(cfgs, (list, tuple)) else list(cfgs)
    for c in cfgs:
        if c.calibration.setting is None:
            known = ", ".join(settings_of(cal.numbers))
            raise ValueError(f"{c.name}: calibration.setting is not set (the paper's settings: {known})")
    machine, info = machine_line()
    t0 = time.perf_counter()
    names = ", ".join(c.name for c in cfgs)
    settings = ", ".join(repr(c.calibration.setting) for c in cfgs)
    lines = [f"# Calibration of {names}: the paper's setting {settings}", "", machine, ""]
    record: dict[str, Any] = {"configs": [c.name for c in cfgs], "machine": info}
    if do_fit:
        result = fit(cal, cfgs, progress=progress)
        tests = result["test"]
        rows = ", ".join(
            f"{c.calibration.setting}: {', '.join(c.calibration.fit)}" for c in cfgs if c.calibration.fit
        )
        fitted = ", ".join(f"`{k}: {v}`" for k, v in result["best"].items())
        lines += [
            f"## Fit on the calibration episodes ({rows})",
            "",
            *fit_lines(result),
            "",
            f"Fitted: {fitted}.",
            "",
        ]
        record["fit"] = {"candidates": result["candidates"], "best": result["best"]}
    else:
        tests = [compare(cal.numbers, evaluate(cal, c, "test"), c.calibration) for c in cfgs]
    for c, test in zip(cfgs, tests, strict=True):
        lines += [f"## {c.name} ({c.calibration.setting!r}): every published row on the test episodes", "",
                  *report_lines(test, cal.label), ""]  # fmt: skip
    lines += [f"({time.perf_counter() - t0:.0f} s)"]
    record["test"] = {c.name: t for c, t in zip(cfgs, tests, strict=True)}
    record["wall_s"] = time.perf_counter() - t0
    Console().print(Markdown("\n".join(lines)))
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "calibration.md").write_text("\n".join(lines) + "\n")
        (out / "calibration.json").write_text(json.dumps(record, indent=1, default=_plain) + "\n")
        if do_fit:
            tol = min(c.calibration.tolerance for c in cfgs)
            plot_fit_surface(result, out / "fit_surface.png", tol, title=f"{names} ({info['cpu']})")
        print(f"written: {out}/calibration.md, calibration.json" + (", fit_surface.png" if do_fit else ""))
    return record


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(f"not JSON: {type(x).__name__}")
