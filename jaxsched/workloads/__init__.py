"""Workloads: the `Workload` pytree, trace loaders and generators (HPC), DDL jobs (GPU cloud) and DLT jobs
(GPU-locality cluster: trace loader and the Philly-like generator)."""

from jaxsched.workloads.base import Workload, make_workload, validate_workload
from jaxsched.workloads.ddl import (
    FLUCT_STD,
    MODEL_COMM,
    MODEL_NAMES,
    MODEL_WEIGHTS,
    PERF_CV,
    V100_MACHINE,
    DDLWorkload,
    PAILikeConfig,
    drop_too_large,
    episode_starts,
    fits_empty_cluster,
    generate_pai_like,
    make_ddl_workload,
    scale_load,
    train_test_split,
    validate_ddl_workload,
)
from jaxsched.workloads.dlt import DLT_MODELS, DLTWorkload, load_dlt_csv
from jaxsched.workloads.lublin import LublinConfig, generate, generate_bank
from jaxsched.workloads.pai import load_pai
from jaxsched.workloads.philly import CATEGORY_MODELS, RUNTIME_QUANTILES, PhillyConfig, generate_dlt_bank
from jaxsched.workloads.swf import load_swf, load_swf_with_report, parse_swf_text, write_swf

__all__ = [
    "DLT_MODELS",
    "DLTWorkload",
    "load_dlt_csv",
    "PhillyConfig",
    "generate_dlt_bank",
    "RUNTIME_QUANTILES",
    "CATEGORY_MODELS",
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
    "DDLWorkload",
    "make_ddl_workload",
    "validate_ddl_workload",
    "fits_empty_cluster",
    "drop_too_large",
    "scale_load",
    "train_test_split",
    "episode_starts",
    "PAILikeConfig",
    "generate_pai_like",
    "load_pai",
    "MODEL_NAMES",
    "MODEL_COMM",
    "MODEL_WEIGHTS",
    "PERF_CV",
    "FLUCT_STD",
    "V100_MACHINE",
]
