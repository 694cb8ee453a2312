"""The idle-slot DAG paper's Table 1 and Figs. 4–6 from trained and evaluated configs (`jaxsched table dag`).

    jaxsched table dag configs/dag/synthetic.yaml configs/dag/mixed.yaml --out docs/results/dag \\
        --loads 0.6,0.8 --jobs 20,40,60,80,100 --mus 30,50,70,90 --rates 0.6,0.7,0.8,0.9

Every config is trained and evaluated first (`jaxsched train C`, then `jaxsched eval C --checkpoint
runs/<name>`, which writes `<run dir>/eval.json`). Table 1 reads those files; the figures re-evaluate the
first synthetic config's trained variants (each seed's last checkpoint, the policy sampled as `jaxsched
eval` samples it) and heuristics on its test bank regenerated with one workload knob changed — the same
`eval.episodes` episodes of the same generator seed, the same per-episode action keys — through the
evaluator's own programs (`experiments.evaluate.Replay`):

  * Table 1: a row per config, named by its `workload.source`: the average JCT of full / no_features /
    no_idle (mean ± std over seeds × episodes) beside the paper's (`paper_numbers.csv`), each ablation over
    full (ours and the paper's), the best heuristic, and the paired Wilcoxon p of full against each
    ablation (from eval.json). A variant the config did not train is "—".
  * Fig. 4 (`--loads`): the CDF of the per-job JCTs at each load, a panel each: the trained variants
    (full, no_idle, and replace / no_features when trained) and FIFO, the paper's "default scheduler";
    `fig4.png`, the JCTs in `fig4_jct.npz`.
  * Fig. 5 (`--jobs`): average JCT and makespan against the jobs per episode (executors fixed): full,
    no_idle and SJF, mean ± std over seeds × episodes; `fig5.png`. The banks are padded to one shape
    (`workloads.dag_bank.pad_bank`: the same episodes, one compiled program for every job count).
  * Fig. 6 (`--mus`, `--rates`): the full agent's inserted idle per delayed stage and per selection
    against the long jobs' mean length μ (`long_len_s`) and against the arrival rate λ (as `load`), the
    other knob at the config's value, the long length drawn from N(μ, μ/6) in both (`long_std_frac`);
    `fig6.png`.

Everything lands in `--out`: `table.md`, `table.json` (the numbers), the PNGs. An empty list (`--loads ''`)
leaves a figure out. One line per re-evaluation goes to stderr.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxsched.experiments.evaluate import Replay
from jaxsched.experiments.paper import (
    Report,
    config_arguments,
    evaluated_configs,
    head,
    paper_rows,
    parse_numbers,
    print_written,
    table_overrides,
)
from jaxsched.experiments.plots import plot_cdf_panels, plot_line_panels
from jaxsched.experiments.report import DASH, mean_std
from jaxsched.experiments.stats import best_of, n_tested
from jaxsched.systems.dag.calibration import CALIBRATION
from jaxsched.systems.dag.config import DAGSystemConfig, build_params, make_env
from jaxsched.systems.dag.evaluation import EVALUATION, LEARNER_LABELS
from jaxsched.workloads.dag_bank import pad_bank

HELP = "the idle-slot DAG paper's Table 1 and Figs. 4–6 (loads, job counts, long-job length and rate)"

# Table 1: average JCT (the paper's unit, seconds) of the paper's agent, without the selected features
# (critical path, average width) and without idle time, on the synthetic set and the mixed set (α = 0.5):
# `{set: {variant: JCT}}`, from `paper_numbers.csv` (the calibration's).
PAPER_TABLE1 = {
    w: {v: x for v, (x,) in paper_rows(CALIBRATION.numbers, "Table 1", [(w, "avg_jct")]).items()}
    for w in ("synthetic", "mixed")
}
TABLE1_VARIANTS = ("full", "no_features", "no_idle")
TABLE1_HEADERS = {"full": "full", "no_features": "w/o selected features", "no_idle": "w/o idle time"}
FIG4_VARIANTS = ("full", "no_idle", "replace", "no_features")  # drawn when trained
FIG4_DEFAULT = "fifo"  # the paper's "default scheduler"
FIG5_VARIANTS = ("full", "no_idle")
FIG5_BASELINE = "sjf"
FIG5_METRICS = (("avg_jct", "average JCT (s)"), ("makespan", "makespan (s)"))
FIG6_VARIANT = "full"
FIG6_STD_FRAC = 1 / 6  # σ = μ/6
FIG6_METRICS = (("idle_per_delayed", "idle / delayed stage"), ("idle_per_selection", "idle / selection"))
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


def _mean_std(entry: dict) -> dict:
    return {"mean": entry["mean"], "std": entry["std"]}


# ---- Table 1 ----------------------------------------------------------------------------------------
def table1(configs) -> tuple[list[str], dict]:
    """Table 1's markdown lines and numbers (module docstring)."""
    lines = [
        "## Table 1: average JCT (s) of the paper's agent and its ablations (held-out episodes)",
        "",
        *head(
            "workload",
            "config",
            *(f"{TABLE1_HEADERS[v]} (paper)" for v in TABLE1_VARIANTS),
            "w/o features / full (paper)",
            "w/o idle / full (paper)",
            "best heuristic",
            "p: full vs w/o idle",
            "p: full vs w/o features",
            text=2,
        ),  # fmt: skip
    ]
    numbers: dict = {}
    for cfg, results in configs:
        source = cfg.workload.source
        paper = PAPER_TABLE1.get(source, {})
        ours = {
            v: results[LEARNER_LABELS[v]]["avg_jct"] for v in TABLE1_VARIANTS if LEARNER_LABELS[v] in results
        }
        cells = [
            f"{mean_std(ours.get(v))} ({paper[v]:g})" if v in paper else mean_std(ours.get(v))
            for v in TABLE1_VARIANTS
        ]
        ratios, paper_ratios = {}, {}
        for v in ("no_features", "no_idle"):
            if v in ours and "full" in ours:
                ratios[v] = ours[v]["mean"] / max(ours["full"]["mean"], 1e-9)
            if v in paper and "full" in paper:
                paper_ratios[v] = paper[v] / paper["full"]
            ours_txt = f"×{ratios[v]:.3f}" if v in ratios else DASH
            cells.append(ours_txt + (f" (×{paper_ratios[v]:.3f})" if v in paper_ratios else ""))
        heuristics = [b for b in cfg.eval.baselines if b in results]
        best = best_of(results, heuristics, "avg_jct") if heuristics else None
        cells.append(DASH if best is None else f"{best} {mean_std(results[best]['avg_jct'])}")
        tests = {}
        for v in ("no_idle", "no_features"):
            test = ours.get("full", {}).get(f"vs_{LEARNER_LABELS[v]}")
            tests[v] = test
            cells.append(DASH if test is None else f"{test['p']:.3g} ({n_tested(test)})")
        lines.append(f"| {source} | {cfg.name} | " + " | ".join(cells) + " |")
        numbers[cfg.name] = {
            "source": source,
            "avg_jct": {v: _mean_std(e) for v, e in ours.items()},
            "paper": dict(paper),
            "ratio_to_full": ratios,
            "paper_ratio_to_full": paper_ratios,
            "best_heuristic": None if best is None else {"name": best, **_mean_std(results[best]["avg_jct"])},
            "wilcoxon_full_vs": {v: t for v, t in tests.items() if t is not None},
        }
    lines += [
        "",
        "Mean ± std over seeds × held-out episodes (`eval.json`); the paper's numbers in parentheses. "
        "Ratios > 1: the ablation's average JCT is higher than the full agent's. p: exact two-sided "
        "Wilcoxon signed-rank test over the per-episode means (seed-averaged), n nonzero pairs.",
        "",
    ]
    return lines, numbers


# ---- re-evaluation ------------------------------------------------------------------------------------
@dataclass
class Reevaluator:
    """A config's trained variants and its heuristics (`experiments.evaluate.Replay`), played on its test
    bank regenerated with workload changes: `eval.episodes` episodes, `jaxsched eval`'s keys."""

    replay: Replay
    shape: tuple[int, int]  # (jobs, templates) of the config's own test bank

    @classmethod
    def of(cls, cfg: DAGSystemConfig) -> Reevaluator:
        replay = Replay.of(EVALUATION, cfg)
        return cls(replay, _shape(replay.test_params))

    @property
    def cfg(self) -> DAGSystemConfig:
        return self.replay.cfg

    @property
    def episodes(self) -> int:
        return len(self.replay.episodes)

    def trained(self, variants) -> list[str]:
        return [v for v in variants if v in self.replay.policies]

    def bank(self, **workload):
        """The test params of the config with `workload` changes."""
        changed = self.cfg.replace(workload=dataclasses.replace(self.cfg.workload, **workload))
        return build_params(changed, make_env(changed), "test")

    def run(self, what: str, params, variants=(), baselines=()) -> tuple[dict, dict]:
        """`Replay.run` for those of `variants` that were trained and `baselines`: `(results, {label:
        per-job JCTs})`; one progress line."""
        t0 = time.perf_counter()
        results, arrays = self.replay.run(params, variants, baselines)
        n = int(np.max(np.asarray(params.bank.n_jobs)))
        print(
            f"table dag: {self.cfg.name} {what}: {', '.join(results)} on {self.episodes} test episodes × "
            f"{n} jobs in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        return results, {label: a["jct"] for label, a in arrays.items()}


def _shape(params) -> tuple[int, int]:
    return params.bank.max_jobs, int(params.bank.n_stages.shape[0])


def _heuristics(cfg: DAGSystemConfig, *needed: str) -> tuple[str, ...]:
    """The config's baselines and `needed`: one heuristics program serves every figure and `jaxsched eval`."""
    return tuple(dict.fromkeys((*cfg.eval.baselines, *needed)))


def _jcts(jct: np.ndarray) -> np.ndarray:
    """Per-job JCTs (s) of every run and episode, unfinished jobs and padding (−1) left out."""
    v = np.asarray(jct).ravel()
    return np.sort(v[v >= 0] / 1000.0)


# ---- Fig. 4 ---------------------------------------------------------------------------------------------
def fig4(ev: Reevaluator, loads, out: Path) -> tuple[list[str], dict]:
    variants = ev.trained(FIG4_VARIANTS)
    baselines = _heuristics(ev.cfg, FIG4_DEFAULT, FIG5_BASELINE)
    panels, numbers, arrays = {}, {}, {}
    lines = [
        f"## Fig. 4: CDF of the job completion times ({ev.cfg.name}, {ev.episodes} test episodes per load)",
        "",
        *head("load", "policy", "avg JCT (s)", "p50", "p90", "p99", "unfinished", text=2),
    ]
    for load in loads:
        results, jct = ev.run(f"fig4 load {load:g}", ev.bank(load=load), variants, baselines)
        shown = [LEARNER_LABELS[v] for v in variants if LEARNER_LABELS[v] in results] + [FIG4_DEFAULT]
        key = f"{load:g}"
        panels[f"load {load:.0%}"] = {p: _jcts(jct[p]) for p in shown}
        numbers[key] = {}
        for p in shown:
            samples = panels[f"load {load:.0%}"][p]
            q = np.quantile(samples, QUANTILES) if samples.size else np.full(len(QUANTILES), np.nan)
            numbers[key][p] = {
                "avg_jct": _mean_std(results[p]["avg_jct"]),
                "quantiles_s": dict(zip((f"p{round(100 * x)}" for x in QUANTILES), q.tolist(), strict=True)),
                "unfinished": results[p]["unfinished"]["mean"],
            }
            arrays[f"load{key}_{p}"] = samples
            qs = numbers[key][p]["quantiles_s"]
            lines.append(
                f"| {load:.0%} | {p} | {mean_std(results[p]['avg_jct'])} | {qs['p50']:,.1f} | "
                f"{qs['p90']:,.1f} | {qs['p99']:,.1f} | {results[p]['unfinished']['mean']:.2f} |"
            )
    plot_cdf_panels(
        panels, out / "fig4.png", "job completion time (s)", f"Fig. 4: JCT CDF, {ev.cfg.name} (FIFO: default)"
    )
    np.savez_compressed(out / "fig4_jct.npz", **arrays)
    lines += [
        "",
        f"Per-job JCTs pooled over seeds × episodes (`fig4_jct.npz`, s); {FIG4_DEFAULT.upper()} is the "
        "paper's default scheduler. The agents were trained at the config's load only.",
        "",
    ]
    return lines, numbers


# ---- Fig. 5 ---------------------------------------------------------------------------------------------
def fig5(ev: Reevaluator, jobs, out: Path) -> tuple[list[str], dict]:
    variants = ev.trained(FIG5_VARIANTS)
    baselines = _heuristics(ev.cfg, FIG4_DEFAULT, FIG5_BASELINE)
    banks = {n: ev.bank(jobs_per_episode=n) for n in jobs}
    # One shape for every job count, and the config's own when no sweep bank is larger (the programs of
    # `jaxsched eval` and Fig. 4 serve them all).
    n_max = max([ev.shape[0]] + [_shape(p)[0] for p in banks.values()])
    t_max = max([ev.shape[1]] + [_shape(p)[1] for p in banks.values()])
    shown = [LEARNER_LABELS[v] for v in variants] + [FIG5_BASELINE]
    series: dict = {key: {p: ([], []) for p in shown} for key, _ in FIG5_METRICS}
    numbers: dict = {}
    for n, params in banks.items():
        padded = params.replace(bank=pad_bank(params.bank, n_max, t_max))
        results, _ = ev.run(f"fig5 {n} jobs", padded, variants, baselines)
        numbers[str(n)] = {p: {k: _mean_std(results[p][k]) for k, _ in FIG5_METRICS} for p in shown}
        for key, _ in FIG5_METRICS:
            for p in shown:
                series[key][p][0].append(results[p][key]["mean"])
                series[key][p][1].append(results[p][key]["std"])
    panels = {
        f"({'ab'[i]}) {header}": (list(jobs), series[key], "jobs per episode", header)
        for i, (key, header) in enumerate(FIG5_METRICS)
    }
    w, e = ev.cfg.workload, ev.cfg.env
    plot_line_panels(
        panels,
        out / "fig5.png",
        f"Fig. 5: {ev.cfg.name}, {e.n_executors} executors, load {w.load:g} (mean ± std, seeds × episodes)",
    )
    lines = [
        f"## Fig. 5: against the jobs per episode ({ev.cfg.name}, {e.n_executors} executors)",
        "",
        *head("jobs", "policy", *(h for _, h in FIG5_METRICS), text=2),
    ]
    for n in jobs:
        for p in shown:
            cells = [mean_std(numbers[str(n)][p][k]) for k, _ in FIG5_METRICS]
            lines.append(f"| {n} | {p} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"The test bank regenerated with each job count at the config's load ({w.load:g}: the arrival rate "
        "is fixed, so more jobs make longer episodes), padded to one shape. Mean ± std over seeds × "
        "episodes.",
        "",
    ]
    return lines, numbers


# ---- Fig. 6 ---------------------------------------------------------------------------------------------
def fig6(ev: Reevaluator, mus, rates, out: Path) -> tuple[list[str], dict]:
    w = ev.cfg.workload
    label = LEARNER_LABELS[FIG6_VARIANT]
    if not ev.trained([FIG6_VARIANT]):
        return [f"## Fig. 6: skipped ({ev.cfg.name} has no trained {FIG6_VARIANT} variant)", ""], {}
    sweeps = {
        "mu": ("μ (s)", "μ: long jobs' mean length (s)", [(mu, dict(long_len_s=mu)) for mu in mus]),
        "rate": ("λ (load)", "λ: arrival rate (load)", [(r, dict(load=r)) for r in rates]),
    }
    numbers: dict = {}
    panels = {}
    lines = [
        f"## Fig. 6: the full agent's inserted idle time ({ev.cfg.name})",
        "",
        *head("knob", "value", *(f"{h} (s)" for _, h in FIG6_METRICS), "delayed stages", "avg JCT (s)"),
    ]
    for name, (knob, xlabel, points) in sweeps.items():
        if not points:
            continue
        series = {h: ([], []) for _, h in FIG6_METRICS}
        numbers[name] = {}
        for x, change in points:
            params = ev.bank(long_std_frac=FIG6_STD_FRAC, **change)
            results, _ = ev.run(f"fig6 {name} {x:g}", params, [FIG6_VARIANT])
            res = results[label]
            keys = [k for k, _ in FIG6_METRICS] + ["n_delayed", "avg_jct"]
            numbers[name][f"{x:g}"] = {k: _mean_std(res[k]) for k in keys}
            for key, header in FIG6_METRICS:
                series[header][0].append(res[key]["mean"])
                series[header][1].append(res[key]["std"])
            cells = [mean_std(res[k], ".2f") for k in keys[:-1]] + [mean_std(res["avg_jct"])]
            lines.append(f"| {knob} | {x:g} | " + " | ".join(cells) + " |")
        other = f"load {w.load:g}" if name == "mu" else f"μ = {w.long_len_s:g} s"
        panels[f"against {knob.split()[0]} ({other}, σ = μ/6)"] = (
            [x for x, _ in points],
            series,
            xlabel,
            "inserted idle (s)",
        )
    plot_line_panels(panels, out / "fig6.png", f"Fig. 6: inserted idle time, {ev.cfg.name} ({label})")
    lines += [
        "",
        f"The test bank regenerated with the long jobs' length drawn from N(μ, μ/6) (short jobs "
        f"{w.short_len_s:g} s), μ = {w.long_len_s:g} s or λ = {w.load:g} (the config's) for the other "
        "sweep; the agent was trained on the config's workload. Idle per delayed stage averages the "
        "episodes' means (0 for an episode without a delay). Mean ± std over seeds × episodes.",
        "",
    ]
    return lines, numbers


# ---- the command ----------------------------------------------------------------------------------------
def dag_table(config_paths, out_dir, loads=(), jobs=(), mus=(), rates=(), overrides=()) -> str:
    """Table 1 and Figs. 4–6 (module docstring) into `out_dir`; returns table.md's text."""
    from jaxsched.systems.dag import SYSTEM

    configs = evaluated_configs(config_paths, SYSTEM, overrides)
    report = Report.start(out_dir, f"Idle-slot DAG scheduling: {', '.join(c.name for c, _ in configs)}")
    report.add("table1", table1(configs))
    synthetic = next((c for c, _ in configs if c.workload.source == "synthetic"), None)
    if synthetic is None and (loads or jobs or mus or rates):
        report.add(None, (["Figs. 4–6: skipped (no synthetic config given).", ""], None))
    elif loads or jobs or mus or rates:
        ev = Reevaluator.of(synthetic)
        report.numbers["figures"] = {
            "config": synthetic.name,
            "episodes": ev.episodes,
            "updates": ev.replay.steps,
        }
        out = report.out
        if loads:
            report.add("fig4", fig4(ev, loads, out))
        if jobs:
            report.add("fig5", fig5(ev, jobs, out))
        if mus or rates:
            report.add("fig6", fig6(ev, mus, rates, out))
    return report.write()


def add_arguments(parser) -> None:
    config_arguments(parser, "dag", "table.md, table.json and the figures")
    parser.add_argument(
        "--loads", default="0.6,0.8", help="Fig. 4: loads of the JCT CDFs (default 0.6,0.8; '' leaves it out)"
    )
    parser.add_argument(
        "--jobs", default="20,40,60,80,100", help="Fig. 5: jobs per episode (default 20,...,100)"
    )
    parser.add_argument(
        "--mus", default="30,50,70,90", help="Fig. 6: long jobs' mean length μ, s (default 30,...,90)"
    )
    parser.add_argument(
        "--rates", default="0.6,0.7,0.8,0.9", help="Fig. 6: arrival rates λ as loads (default 0.6,...,0.9)"
    )


def run_from_args(args) -> int:
    text = dag_table(
        args.configs,
        args.out,
        loads=parse_numbers(args.loads, "--loads"),
        jobs=parse_numbers(args.jobs, "--jobs", integer=True),
        mus=parse_numbers(args.mus, "--mus"),
        rates=parse_numbers(args.rates, "--rates"),
        overrides=table_overrides(args),
    )
    return print_written(text, args.out)
