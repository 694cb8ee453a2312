"""Workloads: the `Workload` pytree, trace loaders and generators."""

from jaxsched.workloads.base import Workload, make_workload, validate_workload

__all__ = ["Workload", "make_workload", "validate_workload"]
