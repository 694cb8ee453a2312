"""The Deep Back-Filling paper's metrics (the HPC env's episode metrics) as result columns."""

from jaxsched.experiments.system import Metric

HPC_METRICS = (
    Metric("avg_wait", "avg wait (s)", ",.0f"),
    Metric("avg_queue_len", "avg queue len", ".1f"),
    Metric("utilization", "utilization", ".3f", lower_is_better=False),
    Metric("avg_job_load", "avg job load", ",.0f"),
    Metric("avg_bsld", "avg bsld", ".1f"),
)
