"""Workloads: the `Workload` pytree, trace loaders and generators."""

from jaxsched.workloads.base import Workload, make_workload, validate_workload
from jaxsched.workloads.lublin import LublinConfig, generate, generate_bank
from jaxsched.workloads.swf import load_swf, load_swf_with_report, parse_swf_text, write_swf

__all__ = [
    "Workload",
    "make_workload",
    "validate_workload",
    "load_swf",
    "load_swf_with_report",
    "parse_swf_text",
    "write_swf",
    "LublinConfig",
    "generate",
    "generate_bank",
]
