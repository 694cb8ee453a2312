"""Planted bugs in the compile-and-memory helpers (`jaxsched/experiments/footprint.py`) and the
reference-ratio benchmark's players (`benchmarks/reference_ratio.py`), for `scripts/planted_bugs.py`
(docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

FOOT = "jaxsched/experiments/footprint.py"
RATIO = "benchmarks/reference_ratio.py"
TF = "tests/test_footprint.py"
TR = "tests/test_reference_ratio.py"

BUGS = [
    # donated (aliased) bytes counted twice
    ("F1", FOOT, '"working_bytes": arg + out - alias + temp,', '"working_bytes": arg + out + temp,', TF),
    # the memory line's slope over the wrong batch gap
    ("F2", FOOT, "per_env = (m1 - m0) / (b1 - b0)", "per_env = (m1 - m0) / b1", TF),
    # the largest batch ignores the fixed part
    ("F3", FOOT, "return max(int((capacity - fixed) // per_env), 0)", "return max(int(capacity // per_env), 0)", TF),
    # the DAS player's episode ends only by truncation
    ("F4", RATIO, 'return out["terminated"] or out["truncated"]', 'return out["truncated"]', TR),
    # the OSDEC player's episode never ends (off by the horizon)
    ("F5", RATIO, "return self.ref.t >= self.horizon", "return self.ref.t > self.horizon + 1", TR),
    # the SCED² player acts on any slot, valid or not
    ("F6", RATIO, "_, _, terminated, truncated = self.ref.step(rng.choice(np.flatnonzero(self.ref.mask())))", "_, _, terminated, truncated = self.ref.step(rng.integers(len(self.ref.mask())))", TR),
]
