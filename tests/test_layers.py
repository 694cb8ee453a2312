"""The package's import layers (docs/architecture.md), read from the source with `ast` (function-level
imports included): imports flow `core ← workloads ← envs ← policies / nn / adapters ← agents ← experiments ←
systems ← cli`, and the algorithms know no env, policy or paper's network (those reach them by
injection)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxsched"
RANK = {"core": 0, "workloads": 1, "envs": 2, "policies": 3, "nn": 3, "adapters": 3, "agents": 4,
        "experiments": 5, "systems": 6, "cli": 7}  # fmt: skip
ALGORITHMS = ("agents/pg.py", "agents/ppo.py", "agents/mappo.py", "agents/imitation.py", "agents/dqn.py",
              "agents/reinforce.py")  # fmt: skip
# What an algorithm may import from the package: the env contract and its helpers, the other algorithm
# modules, and the generic MLPs (the default networks).
ALGORITHM_MAY_IMPORT = ("jaxsched.core", "jaxsched.agents.pg", "jaxsched.agents.ppo", "jaxsched.agents.mappo",
                        "jaxsched.nn.mlp")  # fmt: skip


def package_imports(path: Path) -> list[str]:
    """Every `jaxsched.*` module `path` imports, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxsched"):
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("jaxsched")]
    return out


def layer(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_imports_flow_down_the_layers():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if own not in RANK:
            continue
        for module in package_imports(path):
            target = layer(module)
            sideways = own in ("policies", "nn") and target in ("policies", "nn") and target != own
            if (target in RANK and RANK[target] > RANK[own]) or sideways:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_algorithms_import_no_env_policy_or_paper_network(algorithm):
    imports = package_imports(PACKAGE / algorithm)
    assert imports, "the parser found no imports: the test would pass vacuously"
    wrong = [m for m in imports if not m.startswith(ALGORITHM_MAY_IMPORT)]
    assert not wrong, f"{algorithm} imports {wrong}"


def test_the_shared_experiment_layer_names_and_imports_no_system():
    from jaxsched.systems import systems

    kinds = set(systems())
    for path in (PACKAGE / "experiments").rglob("*.py"):
        assert not any(k in path.stem for k in kinds), f"experiments/{path.name} is named after a system"
        assert not [m for m in package_imports(path) if layer(m) == "systems"], path.name
        # no env, policy, network or workload module by name: the shared layer reaches them through the
        # front door (`envs.registry.make`) and the tables keyed by env (`policies.make_heuristic`)
        by_name = [m for m in package_imports(path)
                   if layer(m) in ("envs", "policies", "nn", "workloads")
                   and m not in ("jaxsched.envs", "jaxsched.envs.registry", "jaxsched.policies")]  # fmt: skip
        assert not by_name, f"experiments/{path.name} imports {by_name}"


def test_a_system_imports_neither_the_registry_nor_another_system():
    """Only the CLI knows which systems exist (`jaxsched.systems`); a system reaches the shared layer
    beneath it, never a sibling."""
    wrong = []
    for path in (PACKAGE / "systems").rglob("*.py"):
        rel = path.relative_to(PACKAGE / "systems")
        if len(rel.parts) < 2:
            continue  # the registry itself
        own = f"jaxsched.systems.{rel.parts[0]}"
        for module in package_imports(path):
            registry = module == "jaxsched.systems"
            sibling = module.startswith("jaxsched.systems.") and not (module + ".").startswith(own + ".")
            if registry or sibling:
                wrong.append(f"systems/{rel} imports {module}")
    assert not wrong, "\n".join(wrong)
