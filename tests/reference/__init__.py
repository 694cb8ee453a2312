"""Plain-Python reference simulators, one per env, written from the papers and the envs' documented
semantics (never from the JAX code): ordinary event loops in float64 that the differential tests drive
with the same actions as the JAX envs. A new env adds its own module here (docs/testing.md)."""
