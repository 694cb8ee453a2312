"""Statistics of Decima's TPC-H job DAGs, and the tables `jaxsched/workloads/tpch_tables.py` embeds.

    python scripts/tpch_stats.py [SRC] [--write]

SRC defaults to `../shared/data/dag/tpch` relative to the repository root (Decima's folders `2g` ...
`100g`, 22 queries each). The pickled duration files are converted with `convert_tpch(...,
allow_pickle=True)` (a trusted source: Decima's published data) into a temporary `.npz` and read back with
`load_tpch`; nothing is kept. Prints, per input size, the distributions of stage counts, DAG depth (edges on
the longest path), max width (the most stages on one level, a stage's level being the edges on the longest
path from a root to it), tasks per stage, task durations (Decima's rough duration rounded to ms) and total
work (Σ tasks · duration); with `--write` it rewrites `jaxsched/workloads/tpch_tables.py`, the tables the
TPC-H-like generator (`jaxsched/workloads/dag_gen.py`) samples from:

  LEVEL_PROFILES   per query, the number of stages on each level (root level first). The DAG shapes are the
                   same at every input size (checked here), so one tuple per query.
  TASKS_PMF        per size and stage role, the (tasks per stage, count) pairs. Roles: "root" (no parent),
                   "sink" (no child, not a root), "inner" (the rest).
  DURATION_Q       per size and role, the 11 deciles (p = 0, 0.1, ..., 1; numpy's linear quantiles, 0.1 ms)
                   of the task durations.
  RANK_CORR        per size and role, the correlation of the normal scores of tasks and durations (mid-ranks
                   (r - 1/2) / n for ties, 3 decimals).
  COPULA_R         per size and role, the Gaussian copula parameter that ties the generator's two draws,
                   calibrated by bisection (25 steps, 20,000 pairs drawn by `dag_gen.copula_draw` with the
                   same seed at every step) until the generated pairs have RANK_CORR: with mostly tied task
                   counts, a copula at RANK_CORR itself would give a weaker correlation.
  WORK_Q           per size, the 11 deciles of a job's total work (s, 0.1 s; a target the tests check, not
                   sampled).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from jaxsched.workloads.dag_bank import topological_order  # noqa: E402
from jaxsched.workloads.dag_gen import copula_draw  # noqa: E402
from jaxsched.workloads.tpch import convert_tpch, load_tpch  # noqa: E402

DEFAULT_SRC = REPO.parent / "shared" / "data" / "dag" / "tpch"
TABLES = REPO / "jaxsched" / "workloads" / "tpch_tables.py"
ROLES = ("root", "inner", "sink")
DECILES = np.linspace(0.0, 1.0, 11)


def levels(adj: np.ndarray) -> np.ndarray:
    """Per stage, the edges on the longest path from a root to it."""
    lv = np.zeros(adj.shape[0], np.int64)
    for v in topological_order(adj):
        ps = np.flatnonzero(adj[:, v])
        lv[v] = lv[ps].max() + 1 if ps.size else 0
    return lv


def roles(adj: np.ndarray) -> np.ndarray:
    """0 root (no parent), 2 sink (no child, has a parent), 1 inner."""
    root, sink = ~adj.any(axis=0), ~adj.any(axis=1)
    return np.where(root, 0, np.where(sink, 2, 1))


def normal_score_corr(x: np.ndarray, y: np.ndarray) -> float:
    zx = stats.norm.ppf((stats.rankdata(x) - 0.5) / x.size)
    zy = stats.norm.ppf((stats.rankdata(y) - 0.5) / y.size)
    return float(np.corrcoef(zx, zy)[0, 1]) if zx.std() > 0 and zy.std() > 0 else 0.0


def calibrate(pmf, deciles, target: float, n: int = 20_000, steps: int = 25) -> float:
    """The copula parameter whose `copula_draw` pairs have normal-score correlation `target`."""
    lo, hi = -0.999, 0.999
    for _ in range(steps):
        mid = (lo + hi) / 2
        t, d = copula_draw(np.random.default_rng(1), pmf, deciles, mid, n)
        lo, hi = (mid, hi) if normal_score_corr(t, d) < target else (lo, mid)
    return round((lo + hi) / 2, 3)


def job_records(src: Path = DEFAULT_SRC) -> list[dict]:
    """Per template: size, query, adj, tasks, duration, levels, roles (via a temporary safe .npz)."""
    with tempfile.TemporaryDirectory() as tmp:
        npz = convert_tpch(src, Path(tmp) / "tpch.npz", allow_pickle=True)
        tm = load_tpch(npz)
    out = []
    for t, name in enumerate(tm.name):
        n = int(tm.n_stages[t])
        adj = np.array([[(tm.parents[t, c] >> p) & 1 for c in range(n)] for p in range(n)], bool)
        _, size, q = name.split("-")
        tasks, dur = tm.n_tasks[t, :n].astype(np.int64), tm.duration[t, :n].astype(np.int64)
        out.append(
            {
                "size": size,
                "query": int(q[1:]),
                "adj": adj,
                "tasks": tasks,
                "duration": dur,
                "levels": levels(adj),
                "roles": roles(adj),
            }
        )
    return out


def tables(src: Path = DEFAULT_SRC, recs: list[dict] | None = None) -> dict:
    """The embedded tables (see the module doc), from the data at `src` (or its `job_records`)."""
    recs = job_records(src) if recs is None else recs
    sizes = list(dict.fromkeys(r["size"] for r in recs))
    queries = sorted({r["query"] for r in recs})
    by = {(r["size"], r["query"]): r for r in recs}
    profiles = []
    for q in queries:
        shapes = {tuple(np.bincount(by[(s, q)]["levels"]).tolist()) for s in sizes}
        same = all(np.array_equal(by[(s, q)]["adj"], by[(sizes[0], q)]["adj"]) for s in sizes)
        if len(shapes) != 1 or not same:
            raise SystemExit(f"query {q}: the DAG differs between input sizes; the tables assume one shape")
        profiles.append(shapes.pop())
    pmf, dq, rc, cr, wq = {}, {}, {}, {}, {}
    for s in sizes:
        rs = [r for r in recs if r["size"] == s]
        role = np.concatenate([r["roles"] for r in rs])
        tasks = np.concatenate([r["tasks"] for r in rs])
        dur = np.concatenate([r["duration"] for r in rs])
        pmf[s], dq[s], rc[s], cr[s] = {}, {}, {}, {}
        for i, name in enumerate(ROLES):
            m = role == i
            vals, counts = np.unique(tasks[m], return_counts=True)
            pmf[s][name] = tuple((int(v), int(c)) for v, c in zip(vals, counts, strict=True))
            dq[s][name] = tuple(round(float(x), 1) for x in np.quantile(dur[m], DECILES))
            rc[s][name] = round(normal_score_corr(tasks[m], dur[m]), 3)
            cr[s][name] = calibrate(pmf[s][name], dq[s][name], rc[s][name])
        work = np.array([float((r["tasks"] * r["duration"]).sum()) / 1000 for r in rs])
        wq[s] = tuple(round(float(x), 1) for x in np.quantile(work, DECILES))
    return {
        "SIZES": tuple(sizes),
        "LEVEL_PROFILES": tuple(profiles),
        "TASKS_PMF": pmf,
        "DURATION_Q": dq,
        "RANK_CORR": rc,
        "COPULA_R": cr,
        "WORK_Q": wq,
    }


def render(tab: dict) -> str:
    """The source of `jaxsched/workloads/tpch_tables.py`."""
    lines = [
        '"""Tables of the TPC-H-like generator (`dag_gen.tpch_like_templates`), measured on Decima\'s',
        "TPC-H DAGs (hongzimao/decima-sim). Generated by `python scripts/tpch_stats.py --write` (its doc",
        "says what each table is); do not edit by hand. tests/test_dag_workloads.py recomputes them when the",
        'data is present."""',
        "",
        "SIZES = (" + ", ".join(f'"{s}"' for s in tab["SIZES"]) + ")",
        "",
        "LEVEL_PROFILES = (",
        *[f"    {p!r}," for p in tab["LEVEL_PROFILES"]],
        ")",
    ]
    for name in ("TASKS_PMF", "DURATION_Q", "RANK_CORR", "COPULA_R"):
        lines += ["", f"{name} = {{"]
        for s, per in tab[name].items():
            one = f'    "{s}": {{' + ", ".join(f'"{r}": {v!r}' for r, v in per.items()) + "},"
            if len(one) <= 110:
                lines.append(one)
                continue
            lines.append(f'    "{s}": {{')
            lines += [f'        "{r}": {v!r},' for r, v in per.items()]
            lines.append("    },")
        lines.append("}")
    lines += ["", "WORK_Q = {", *[f'    "{s}": {v!r},' for s, v in tab["WORK_Q"].items()], "}", ""]
    return "\n".join(lines)


def report(recs: list[dict]) -> None:
    def dist(x) -> str:
        v, c = np.unique(x, return_counts=True)
        return " ".join(f"{a}:{b}" for a, b in zip(v, c, strict=True))

    def q(x) -> str:
        return " ".join(f"{v:.0f}" for v in np.quantile(x, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]))

    for s in dict.fromkeys(r["size"] for r in recs):
        rs = [r for r in recs if r["size"] == s]
        tasks = np.concatenate([r["tasks"] for r in rs])
        dur = np.concatenate([r["duration"] for r in rs])
        work = np.array([(r["tasks"] * r["duration"]).sum() / 1000 for r in rs])
        print(f"== {s}: {len(rs)} jobs, {tasks.size} stages")
        print(f"  stages       {dist([r['adj'].shape[0] for r in rs])}")
        print(f"  depth        {dist([r['levels'].max() for r in rs])}")
        print(f"  max width    {dist([np.bincount(r['levels']).max() for r in rs])}")
        print(f"  edges - (n-1) {dist([r['adj'].sum() - r['adj'].shape[0] + 1 for r in rs])}")
        print(f"  tasks/stage  q0,10,25,50,75,90,100: {q(tasks)}   mean {tasks.mean():.1f}")
        print(f"  duration ms  q0,10,25,50,75,90,100: {q(dur)}   mean {dur.mean():.1f}")
        print(f"  work s       q0,10,25,50,75,90,100: {q(work)}   mean {work.mean():.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--write", action="store_true", help=f"rewrite {TABLES.relative_to(REPO)}")
    a = ap.parse_args()
    recs = job_records(a.src)
    report(recs)
    text = render(tables(a.src, recs))
    print(text)
    if a.write:
        TABLES.write_text(text)
        print(f"# wrote {TABLES}")


if __name__ == "__main__":
    main()
