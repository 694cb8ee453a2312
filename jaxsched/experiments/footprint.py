"""What a program costs before it runs, and how many envs fit in memory.

`compile_cost` traces, lowers and compiles a jitted function through `jax.stages`, timing each stage, and
reads the compiled program's memory analysis (XLA's buffer assignment: arguments, outputs, temporaries).
`memory_line` fits a program's working set as `fixed + per_env × batch` from two batch sizes (the
params, network weights and code are the fixed part; states, observations and their temporaries grow
with the batch), and `largest_batch` turns that line into the largest batch a memory holds.

The figures are the compiled program's own, for the backend it was compiled for: a CPU program's
temporaries are not a GPU program's (fusion and layouts differ), so a GPU's figure comes from the same
command run there.
"""

from __future__ import annotations

import time

import jax

# Memories a user asks about (bytes): this project's CI machine and a laptop-class CPU, and one H200.
CAPACITIES = {"cpu_24GiB": 24 * 2**30, "h200_141GB": 141 * 10**9}
CAPACITY_LABELS = {"cpu_24GiB": "24 GiB", "h200_141GB": "an H200 (141 GB)"}


def compile_cost(fn, *args) -> tuple[jax.stages.Compiled, dict]:
    """`(compiled, record)` for the jitted `fn` on `args`: `trace_s`, `lower_s`, `compile_s` (seconds of
    each stage, first compilation: no persistent cache is read unless the environment sets one) and the
    compiled program's bytes (`program_bytes`)."""
    t0 = time.perf_counter()
    traced = fn.trace(*args)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    return compiled, {
        "trace_s": t1 - t0,
        "lower_s": t2 - t1,
        "compile_s": t3 - t2,
        **program_bytes(compiled),
    }


def program_bytes(compiled: jax.stages.Compiled) -> dict:
    """A compiled program's bytes from XLA's buffer assignment: `argument_bytes`, `output_bytes`,
    `alias_bytes` (outputs written in place of donated arguments), `temp_bytes`, and `working_bytes` =
    arguments + outputs − aliases + temps, what the program holds at once while it runs."""
    mem = compiled.memory_analysis()
    arg, out, alias, temp = (
        int(getattr(mem, f"{k}_size_in_bytes")) for k in ("argument", "output", "alias", "temp")
    )
    return {
        "argument_bytes": arg,
        "output_bytes": out,
        "alias_bytes": alias,
        "temp_bytes": temp,
        "working_bytes": arg + out - alias + temp,
    }


def tree_bytes(tree) -> int:
    """Bytes of every array leaf of `tree`."""
    return sum(int(x.nbytes) for x in jax.tree.leaves(tree) if hasattr(x, "nbytes"))


def memory_line(small: tuple[int, int], large: tuple[int, int]) -> tuple[float, float]:
    """`(fixed_bytes, per_env_bytes)` of the line through `(batch, bytes)` at two batch sizes. A
    negative fixed part (XLA's buffer reuse is not exactly linear) is kept: it says the line is an
    estimate, and `largest_batch` reads it as it is."""
    (b0, m0), (b1, m1) = small, large
    if b1 <= b0:
        raise ValueError(f"memory_line: the large batch ({b1}) must exceed the small one ({b0})")
    per_env = (m1 - m0) / (b1 - b0)
    return m0 - per_env * b0, per_env


def largest_batch(fixed: float, per_env: float, capacity: float) -> int:
    """The largest batch whose `fixed + per_env × batch` fits in `capacity` bytes (0 when none does)."""
    if per_env <= 0:
        raise ValueError(f"largest_batch: per_env must be > 0 bytes, got {per_env}")
    return max(int((capacity - fixed) // per_env), 0)
