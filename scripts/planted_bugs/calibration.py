"""Planted bugs in the calibration and claims layer (experiments/calibration.py, claims.py, stats.py's
unit checks, the systems' calibration episodes), for `scripts/planted_bugs.py` (docs/testing.md)."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

CAL = "jaxsched/experiments/calibration.py"
CLAIMS = "jaxsched/experiments/claims.py"
STATS = "jaxsched/experiments/stats.py"
T_CAL = "tests/test_calibration.py"
T_CLAIMS = "tests/test_claims.py tests/test_stats.py"

BUGS = [
    ("K1", CAL, '"matched": bool(abs(ratio - 1.0) <= section.tolerance),', '"matched": bool(abs(ratio - 1.0) <= 2 * section.tolerance),', T_CAL),
    ("K2", CAL, "if gap <= RANK_GAP:", "if gap < 0:", T_CAL),
    ("K3", CAL, 'holds = (a["paper"] > b["paper"]) == (a["ours"] > b["ours"])', 'holds = (a["paper"] > b["paper"]) != (a["ours"] > b["ours"])', T_CAL),
    ("K4", CAL, "return math.sqrt(sum(x * x for x in logs) / len(rows))", "return math.sqrt(sum(x * x for x in logs))", T_CAL),
    ("K5", CAL, 'best = min(tried, key=lambda t: t["loss"])', 'best = max(tried, key=lambda t: t["loss"])', T_CAL),
    ("K6", CAL, "per_episode = per_unit(v)  # [E]", "per_episode = np.ravel(v)  # [E]", T_CAL),
    ("K7", STATS, "return v.reshape(-1, v.shape[-1]).mean(axis=0)", "return v.reshape(-1, v.shape[-1]).mean(axis=1)", T_CLAIMS),
    ("K8", STATS, "if n < 2 or np.all(v == v[0]):", "if n < 2 or np.any(v == v[0]):", T_CLAIMS),
    ("K9", CLAIMS, 'and abs(claim["relative"]) < SIZE_SHARE * abs(paper_relative)', 'and abs(claim["relative"]) > SIZE_SHARE * abs(paper_relative)', T_CLAIMS),
    ("K10", CAL, "return with_workload(cfg, **{field: getattr(cfg.workload, field) + CALIBRATION_SEED_OFFSET})", "return with_workload(cfg, **{field: getattr(cfg.workload, field)})", T_CAL),
    ("K11", CAL, "seeds = [cfg.workload.test_seed + i for i in range(cfg.num_seeds)]", "seeds = [cfg.workload.test_seed for i in range(cfg.num_seeds)]", T_CAL),
    ("K12", "jaxsched/systems/sced2/calibration.py", 'best = max(cfg.eval.baselines, key=lambda b: out[b]["avg_effectiveness"].mean())', 'best = min(cfg.eval.baselines, key=lambda b: out[b]["avg_effectiveness"].mean())', T_CAL),
    ("K13", "jaxsched/experiments/calibration.py", "env, params, episodes = bank(with_workload(cfg, test_seed=seed))", "env, params, episodes = bank(cfg)", T_CAL),
    ("K14", "jaxsched/systems/sced2/calibration.py", "c = with_workload(cfg, test_seed=seed)", "c = cfg", T_CAL),
    ("K15", "jaxsched/systems/sced2/calibration.py", "ideal[s:e].mean() for s, e in zip(starts, ends, strict=True)", "ideal.mean() for s, e in zip(starts, ends, strict=True)", T_CAL),
    # a results page's claims block added again on every run instead of replaced
    ("K16", CLAIMS, "    if BLOCK_BEGIN in page:", "    if False:", "tests/test_claims.py"),
    # the block written below the page's prose, not under its title
    ("K17", CLAIMS, '    return f"{title}\\n\\n{block}\\n{body}"', '    return f"{page}\\n{block}\\n"', "tests/test_claims.py"),
]
