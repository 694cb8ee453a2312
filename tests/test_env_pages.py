"""Every env page (`docs/envs/<env>.md`) tells the truth about its env's spaces: each row of its
observation and action tables — field, shape (in the page's symbols), dtype and bounds — equals
`core.spaces.describe` of the env's `observation_space` / `action_space`, in the same order, with no field
missing or extra. The symbols are read from the env's static config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import jaxsched
from jaxsched.core.spaces import I32_MAX, describe

PAGES = Path(__file__).resolve().parents[1] / "docs" / "envs"

# page -> (a registered name to build, its symbols from the env's static config)
SYMBOLS = {
    "hpc": ("dbf-quick", lambda c: {"N": c.n_cores, "M": c.window_size}),
    "gpu_cloud": ("das-quick", lambda c: {"N": c.n_slots, "M": c.n_machines}),
    "gpu_locality": (
        "sced2-quick",
        lambda c: {"N": c.n_servers, "M": c.gpus_per_server, "J": c.window, "k": c.n_levels},
    ),
    "dag": (
        "dag-quick",
        lambda c: {"J": c.max_slots, "S": c.max_stages, "k": c.n_executors, "L": c.idle_levels},
    ),
    "deferrable": ("osdec-quick", lambda c: {"P": c.pending_slots, "R": c.running_slots, "K": c.history}),
}


def tables(text: str) -> dict[str, list[list[str]]]:
    """`{"observation": rows, "action": rows}`: the first table under each `## Observation` / `## Action`
    heading, each row its cells."""
    out = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        kind = part.split()[0].lower().rstrip(":")
        if kind in ("observation", "action"):
            rows = [line for line in part.splitlines() if line.startswith("|")][2:]  # past header and rule
            out[kind] = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return out


def evaluate(text: str, symbols: dict) -> str:
    """The page's `[N + 5·M]` or `{0..J·S - 1}` with every arithmetic expression evaluated: `[306]`."""
    names = {**symbols, "I32_MAX": I32_MAX}

    def value(expr: str) -> str:
        expr = expr.strip()
        if expr in ("∞", "-∞", "bool", "") or expr == "I32_MAX":
            return expr
        return str(eval(expr.replace("·", "*"), {"__builtins__": {}}, names))  # the page's own arithmetic

    parts = re.split(r"(\[|\]|, |\{|\}|\.\.| × )", text)
    return "".join(p if re.fullmatch(r"\[|\]|, |\{|\}|\.\.| × ", p) else value(p) for p in parts)


def rendered(row: tuple) -> list[str]:
    field, shape, dtype, bounds = row
    return [field or "(action)", "[" + ", ".join(map(str, shape)) + "]", dtype, bounds]


@pytest.mark.parametrize("page", SYMBOLS)
def test_env_page_tables_equal_the_env_spaces(page):
    name, symbols_of = SYMBOLS[page]
    env, params = jaxsched.make(name)
    symbols = symbols_of(env.config)
    text = (PAGES / f"{page}.md").read_text()
    assert f'jaxsched.make("{name}")' in text or f'"{name}"' in text
    got = tables(text)
    for kind, space in (("observation", env.observation_space(params)), ("action", env.action_space(params))):
        doc = [
            [cells[0], evaluate(cells[1], symbols), cells[2], evaluate(cells[3], symbols)]
            for cells in got[kind]
        ]
        assert doc == [rendered(r) for r in describe(space)], f"docs/envs/{page}.md, {kind} table"


def test_the_index_lists_every_registered_name_once():
    index = (PAGES / "README.md").read_text()
    for name in jaxsched.registered():
        assert index.count(f"`{name}`") == 1, name
