"""Paired significance tests for the result tables (no SciPy dependency).

`wilcoxon_signed_rank(x, y)`: the exact two-sided Wilcoxon signed-rank test of paired samples (the
paper's Table 3 test): zero differences are dropped, tied |differences| get their average rank, and the
p-value is exact under the null (every sign pattern equally likely), computed by dynamic programming over
the doubled rank sums — exact for any n, ties included.

`wilcoxon_power(diffs, shift)`: that test's power against a stated mean difference, by a bootstrap of
the observed pairs' noise — what "not significant" is worth.

A pair is one distinct unit (a test episode, a job): the same episode evaluated under several seeds, or
one evaluation repeated for every training seed of another row, is still one unit. Every test here takes
1-D samples with one value per unit and refuses a pair that repeats (`distinct_pairs`); `per_unit(x)`
averages `[..., units]` arrays over their leading axes (seeds) first.
"""

from __future__ import annotations

import numpy as np


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n of `a`, ties sharing their average rank."""
    order = np.argsort(a, kind="stable")
    ranks = np.empty(len(a), np.float64)
    sorted_a = a[order]
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def per_unit(values, axis: int = -1) -> np.ndarray:
    """`[..., U]` (units on `axis`, e.g. `[seeds, episodes]`) → `[U]`: each unit's mean over the other
    axes — the one value per distinct unit a paired test takes."""
    v = np.asarray(values, np.float64)
    v = np.moveaxis(np.atleast_1d(v), axis, -1)
    return v.reshape(-1, v.shape[-1]).mean(axis=0)


def _repeats_in_blocks(v: np.ndarray) -> int:
    """The largest k ≥ 2 such that `v` ([n] or [n, 2]) is k identical consecutive blocks, or 0 (a
    constant sample is not counted: equal values of distinct units are no repetition)."""
    n = len(v)
    if n < 2 or np.all(v == v[0]):
        return 0
    for k in range(n, 1, -1):
        if n % k == 0 and np.all(v.reshape(k, n // k, *v.shape[1:]) == v[: n // k]):
            return k
    return 0


def distinct_pairs(x, y) -> tuple[np.ndarray, np.ndarray]:
    """`x`, `y` as float64 1-D paired samples, refusing the two ways a unit gets counted twice: inputs
    that are not 1-D (`[seeds, episodes]`: average with `per_unit` first) and a sample that is one block
    repeated (an evaluation tiled per training seed of another row: the pairs, or either side alone)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(
            f"paired samples must be 1-D, one value per distinct unit (got shapes {x.shape} and {y.shape}): "
            "average repeated evaluations of a unit first (stats.per_unit)"
        )
    if x.shape != y.shape:
        raise ValueError(f"paired samples must have the same size, got {x.size} and {y.size}")
    sides = (("the pairs", np.stack([x, y], axis=1)), ("the first sample", x), ("the second sample", y))
    for what, v in sides:
        k = _repeats_in_blocks(v)
        if k:
            raise ValueError(
                f"{what} repeat one block of {len(x) // k} values {k} times: a paired test counts each "
                "distinct unit once (average repeated evaluations of a unit first, stats.per_unit)"
            )
    return x, y


def wilcoxon_signed_rank(x, y) -> dict:
    """Exact two-sided test of `x − y` over paired 1-D samples, one value per distinct unit
    (`distinct_pairs`). Returns `{n, pairs, w_plus, w_minus, p}` (n: the nonzero differences, the
    units the test counts; pairs: all units, ties included; p = 1 when n = 0)."""
    x, y = distinct_pairs(x, y)
    return {**_signed_rank(x - y), "pairs": int(len(x))}


def n_tested(test: dict) -> str:
    """A table cell's count: "n = 4", or "n = 2 of 4, 2 tied" where ties left units out of the test."""
    n, pairs = test["n"], test.get("pairs", test["n"])
    return f"n = {n}" if pairs == n else f"n = {n} of {pairs}, {pairs - n} tied"


def units_tested(test: dict) -> str:
    """"over 4 episodes", or "over 2 of 4 episodes (2 tied: left out)" where ties dropped some (a
    Wilcoxon test counts only the nonzero differences)."""
    n, pairs = test["n"], test.get("pairs", test["n"])
    if pairs == n:
        return f"over {n} episodes"
    return f"over {n} of {pairs} episodes ({pairs - n} tied: left out)"


def _signed_rank(d: np.ndarray) -> dict:
    """`wilcoxon_signed_rank` on the differences `d` [n] (no unit check: the bootstrap's resamples)."""
    d = d[d != 0]
    n = len(d)
    if n == 0:
        return {"n": 0, "w_plus": 0.0, "w_minus": 0.0, "p": 1.0}
    ranks = _average_ranks(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    w_minus = float(ranks[d < 0].sum())
    doubled = np.rint(2 * ranks).astype(np.int64)  # average ranks are multiples of 1/2
    total = int(doubled.sum())
    counts = np.zeros(total + 1, np.float64)  # counts[s]: sign patterns whose doubled W+ is s
    counts[0] = 1.0
    for r in doubled:
        counts[r:] = counts[r:] + counts[: total + 1 - r].copy()
    probs = counts / counts.sum()
    w = int(round(2 * w_plus))
    p = 2.0 * min(probs[: w + 1].sum(), probs[w:].sum())
    return {"n": n, "w_plus": w_plus, "w_minus": w_minus, "p": float(min(1.0, p))}


def wilcoxon_power(diffs, shift: float, alpha: float = 0.05, n_sim: int = 1000, seed: int = 0) -> float:
    """How often the exact two-sided test at `alpha` would find a true mean difference of `shift` with
    these pairs' noise: `n_sim` bootstrap samples of the centred paired differences `diffs − mean(diffs)`
    (as many pairs as `diffs`, drawn with replacement), each shifted by `shift`, counted when p < `alpha`
    with the sample mean on `shift`'s side. Power against a stated effect (e.g. the paper's gap), not
    the observed one. Few pairs bound it: with n pairs the smallest p is 2 / 2^n (n ≤ 5: power 0 at 0.05)."""
    d = np.asarray(diffs, np.float64)
    if d.ndim != 1:
        raise ValueError(f"diffs must be 1-D, one difference per distinct unit, got shape {d.shape}")
    if d.size == 0:
        raise ValueError("wilcoxon_power needs at least one paired difference")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    rng = np.random.default_rng(seed)
    centred = d - d.mean()
    hits = 0
    for _ in range(n_sim):
        sample = rng.choice(centred, size=d.size, replace=True) + shift
        res = _signed_rank(sample)
        hits += res["p"] < alpha and np.sign(sample.mean()) == np.sign(shift)
    return hits / n_sim


DECISIVE_POWER = 0.8  # a test this likely to find the claimed gap, finding none, rejects the claim


def claim_verdict(lower, higher, alpha: float = 0.05) -> dict:
    """A claim that `lower` is below `higher`, paired (same shape, e.g. per test episode): the exact
    Wilcoxon test and a verdict — reproduced (p < alpha, lower mean below), not reproduced (p < alpha,
    above), undecided (p ≥ alpha). Returns `{diff, relative, pairs, p, verdict}` (diff: mean difference;
    relative: mean(lower) / mean(higher) − 1)."""
    a, b = distinct_pairs(lower, higher)
    test = wilcoxon_signed_rank(a, b)
    diff = float((a - b).mean())
    if test["p"] >= alpha:
        verdict = "undecided"
    else:
        verdict = "reproduced" if diff < 0 else "not reproduced"
    relative = float(a.mean() / b.mean() - 1.0) if b.mean() != 0 else float("nan")
    return {"diff": diff, "relative": relative, "pairs": int(a.size), "p": test["p"], "verdict": verdict}


def verdict_with_power(claim: dict, power: float | None, threshold: float = DECISIVE_POWER) -> str:
    """`claim_verdict`'s verdict, sharpened by the test's power against the claimed gap: an undecided
    claim whose test had at least `threshold` power to find that gap is not reproduced (no difference
    where the claimed one would have shown)."""
    if claim["verdict"] == "undecided" and power is not None and power >= threshold:
        return f"not reproduced (no difference at power {power:.2f})"
    return claim["verdict"]


def run_stats(values) -> dict:
    """`[runs, episodes]` (or `[episodes]`: one run) → `{mean, std, per_seed, per_episode}`: mean and std
    over every value, one mean per run (a learner's seeds; 1 for a heuristic), one mean over runs per
    episode."""
    v = np.atleast_2d(np.asarray(values, np.float64))
    return {
        "mean": float(v.mean()),
        "std": float(v.std()),
        "per_seed": v.mean(axis=1).tolist(),
        "per_episode": v.mean(axis=0).tolist(),
    }


def paired_tests(this: dict, other: dict, name: str, keys) -> dict:
    """Per metric of `keys`: the Wilcoxon test of `this`'s per-episode means (`run_stats`) against
    `other`'s (named `name`), and `ratio` = other's mean / this one's."""
    return {
        key: {
            "against": name,
            "ratio": other[key]["mean"] / max(this[key]["mean"], 1e-9),
            # per_episode: one mean over runs per episode, so each test episode is one pair
            **wilcoxon_signed_rank(this[key]["per_episode"], other[key]["per_episode"]),
        }
        for key in keys
    }


def favouring(test: dict, lower_is_better: bool) -> float:
    """A paired test's ratio of means (`paired_tests`: the other's over this one's) turned so that > 1
    favours this one. Records written before the shared evaluator (SCED²'s, with `baseline` where
    `against` is now) hold that ratio already."""
    if "baseline" in test or lower_is_better:
        return test["ratio"]
    return 1.0 / max(test["ratio"], 1e-9)


def opponent(test: dict) -> str:
    """The policy a paired test compared against (`against`; `baseline` in SCED²'s older records)."""
    return test.get("against", test.get("baseline", "?"))


def best_of(results: dict, labels, metric: str, lower_is_better: bool = True) -> str:
    """The label among `labels` whose mean `metric` (`results[label][metric]["mean"]`) is the best."""
    pick = min if lower_is_better else max
    return pick(labels, key=lambda b: results[b][metric]["mean"])
