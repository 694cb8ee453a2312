"""`jaxsched claims`: every headline claim of the five papers from the stored evaluation records.

A system declares `claims(results_dir) -> [Claim]`, reading its own records under `docs/results/` (never
re-running anything); this module judges a paired claim the one way every system shares (`judge`: the
exact Wilcoxon test over distinct test episodes, its power against the paper's gap, `stats`'s verdicts)
and writes `docs/results/claims.md` and the claims block that leads each system's results page
(`docs/results/<kind>.md`). A claim whose record is missing or holds no per-episode values says
so in its verdict rather than borrowing a number from prose.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from jaxsched.experiments.stats import claim_verdict, verdict_with_power, wilcoxon_power

NO_RECORD = "no per-episode record"
# A significant gap in the paper's direction but below this share of the paper's gap: "direction only".
SIZE_SHARE = 0.5


class Claim(NamedTuple):
    """One headline claim of a paper and what our stored records say about it."""

    claim: str  # what the paper claims, one line ("DAS below FIFO-FirstFit, Small")
    paper: str  # the paper's number for it ("−11.4 %")
    ours: str  # ours ("+0.5 %: 1,796.8 vs 1,787.0 min")
    verdict: str  # reproduced / not reproduced / undecided / ... (stats.claim_verdict, verdict_with_power)
    p: float | None  # exact Wilcoxon over distinct test episodes
    pairs: int | None  # how many (distinct episodes)
    power: float | None  # the test's power against the paper's gap
    budget: str  # training budget, ours ÷ the paper's where it gives one
    preset: str  # the config it ran on
    record: str  # the stored record it was read from


def judged(name: str, paper: str, ours: str, c: dict, budget: str, preset: str, record: str) -> Claim:
    """A claim with `judge`'s (or `stats.claim_verdict`'s) test `c`."""
    return Claim(name, paper, ours, c["verdict"], c["p"], c["pairs"], c.get("power"), budget, preset, record)


def unjudged(name: str, paper: str, ours: str, verdict: str, budget: str, preset: str, record: str) -> Claim:
    """A claim without a paired test (a missing record, no per-episode values, not run)."""
    return Claim(name, paper, ours, verdict, None, None, None, budget, preset, record)


def load_record(results_dir: Path, relative: str) -> dict | None:
    """The JSON record `results_dir / relative`, or None when it is not stored."""
    path = Path(results_dir) / relative
    return json.loads(path.read_text()) if path.is_file() else None


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f} %"


def judge(lower, higher, paper_relative: float | None, n_sim: int = 1000, seed: int = 0) -> dict:
    """The claim "`lower` is below `higher`" over paired per-episode values (`[E]` each, one per distinct
    test episode): `stats.claim_verdict` (exact Wilcoxon) with its power against the paper's relative gap
    (`paper_relative` = paper's lower ÷ higher − 1), the verdict sharpened by that power."""
    a, b = np.asarray(lower, np.float64), np.asarray(higher, np.float64)
    claim = claim_verdict(a, b)
    power = None
    if paper_relative is not None:
        power = wilcoxon_power(a - b, paper_relative * b.mean(), n_sim=n_sim, seed=seed)
    claim["verdict"] = verdict_with_power(claim, power)
    if (
        claim["verdict"] == "reproduced"
        and paper_relative
        and abs(claim["relative"]) < SIZE_SHARE * abs(paper_relative)
    ):
        claim["verdict"] = "direction only (less than half the paper's gap)"
    return {**claim, "power": power}


def per_episode(entry: Mapping) -> np.ndarray | None:
    """A stored metric entry's one value per test episode (`per_episode`, or the seed-mean of `values`
    `[seeds][episodes]`), None when the record holds neither."""
    if "per_episode" in entry:
        return np.asarray(entry["per_episode"], np.float64)
    if "values" in entry:
        return np.asarray(entry["values"], np.float64).mean(axis=0)
    return None


def table_lines(claims: Sequence[Claim]) -> list[str]:
    """Markdown: one paper's claims as a table (or a line saying there is none yet)."""
    if not claims:
        return ["(no claim recorded yet)", ""]
    out = [
        "| claim | paper | ours | verdict | p (pairs) | power | budget | preset | record |",
        "|---|---:|---|---|---:|---:|---|---|---|",
    ]
    for c in claims:
        p = "—" if c.p is None else f"{c.p:.2g} ({c.pairs})"
        power = "—" if c.power is None else f"{c.power:.2f}"
        out.append(
            f"| {c.claim} | {c.paper} | {c.ours} | **{c.verdict}** | {p} | {power} | {c.budget} | "
            f"`{c.preset}` | `{c.record}` |"
        )
    return [*out, ""]


# The verdicts' leading words, in the order a tally names them (`stats.claim_verdict` adds qualifiers).
VERDICTS = ("reproduced", "direction only", "not reproduced", "undecided", "not run")


def tally(claims: Sequence[Claim]) -> str:
    """One line of how a paper's claims stand: "7 reproduced, 1 not reproduced, 1 undecided" (verdicts
    counted by their leading words; "no claim recorded" when there is none)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for c in claims:
        lead = max((v for v in VERDICTS if c.verdict.startswith(v)), key=len, default=None)
        if lead is None:
            raise ValueError(f"claim {c.claim!r}: verdict {c.verdict!r} starts with none of {VERDICTS}")
        counts[lead] += 1
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no claim recorded"


def claims_lines(by_system: Mapping[str, Sequence[Claim]], titles: Mapping[str, str]) -> list[str]:
    """Markdown: one table per paper."""
    intro = (
        "Generated by `jaxsched claims` from the evaluation records under `docs/results/` (nothing re-run). "
        "Pairs are distinct held-out test episodes (a learned row: its mean over seeds per episode); p is "
        "the exact two-sided Wilcoxon signed-rank test; power is how often that test, with these episodes' "
        "noise, "
        "finds the paper's own gap (`experiments.stats.wilcoxon_power`); a claim whose test had power ≥ 0.8 "
        "and found no difference is *not reproduced*. Budget: our training ÷ the paper's, where the paper "
        "states one. The preset names the config the run used: runs on the settings before calibration "
        "(`docs/results/calibration.md`) say so."
    )
    out = ["# The papers' claims, from the stored records", "", intro, ""]
    for kind, claims in by_system.items():
        out += [f"## {titles.get(kind, kind)}", "", *table_lines(claims)]
    return out


# A results page's claims block: between these markers, right under the page's title (`with_claims`).
BLOCK_BEGIN = "<!-- claims: generated by `jaxsched claims`; edits between these markers are overwritten -->"
BLOCK_END = "<!-- claims: end -->"


def page_block(claims: Sequence[Claim]) -> list[str]:
    """Markdown: a results page's leading block — its paper's claims table, then how to reproduce it."""
    return [
        BLOCK_BEGIN,
        "## Claims judged from the stored records",
        "",
        "Generated by `jaxsched claims` from the evaluation records under `docs/results/` (the columns are "
        "explained in `docs/results/claims.md`).",
        "",
        *table_lines(claims),
        "To reproduce a row: train and evaluate its preset (`jaxsched train CONFIG`, then `jaxsched eval "
        "CONFIG --checkpoint runs/NAME`, NAME the config's `name`), store the evaluation JSON at the "
        "record's path under `docs/results/`, and run `jaxsched claims`, which rewrites this table and "
        "`docs/results/claims.md`.",
        BLOCK_END,
    ]


def with_claims(page: str, claims: Sequence[Claim]) -> str:
    """`page` (a results page's markdown) with its claims block replaced, or inserted under its first
    line (the `# title`) when it has none yet."""
    block = "\n".join(page_block(claims))
    if BLOCK_BEGIN in page:
        head, rest = page.split(BLOCK_BEGIN, 1)
        if BLOCK_END not in rest:
            raise ValueError(f"a claims block opens ({BLOCK_BEGIN!r}) and never ends ({BLOCK_END!r})")
        return head + block + rest.split(BLOCK_END, 1)[1]
    title, _, body = page.partition("\n")
    return f"{title}\n\n{block}\n{body}"


def write_claims(
    systems: Mapping[str, tuple[str, Callable[[Path], list[Claim]]]], results_dir, out_path, pages_dir=None
) -> Path:
    """Collect every system's claims (`{kind: (title, claims_fn)}`) and write the page; with `pages_dir`,
    also the claims block at the top of each system's results page there (`<kind>.md`, where it exists)."""
    results_dir = Path(results_dir)
    by_system = {kind: fn(results_dir) for kind, (_, fn) in systems.items()}
    titles = {kind: title for kind, (title, _) in systems.items()}
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("\n".join(claims_lines(by_system, titles)) + "\n")
    if pages_dir is not None:  # each system's results page leads with its own table
        for kind, claims in by_system.items():
            page = Path(pages_dir) / f"{kind}.md"
            if page.exists():
                page.write_text(with_claims(page.read_text(), claims))
    return out_path
