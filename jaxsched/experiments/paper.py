"""What every paper-table command shares (`jaxsched table <kind>`): the evaluated configs it reads, the
report it writes (`table.md` under a machine line, `table.json` with the numbers, figures beside them),
its arguments and its comma lists.

    configs = evaluated_configs(paths, SYSTEM)          # [(cfg, eval.json results)]
    report = Report.start(out_dir, "DAG: synthetic")   # table.md's title and machine line
    report.add("table1", table1(configs))              # a section: (markdown lines, numbers)
    text = report.write()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jaxsched.experiments.config import add_run_location
from jaxsched.experiments.report import DASH, machine_line, mean_std, write_json
from jaxsched.experiments.stats import n_tested


def evaluated_configs(paths, system, overrides=()) -> list[tuple]:
    """`[(config, {label: {metric: stats}})]` of trained and evaluated configs (`load_evaluated`, the
    `KEY=VALUE` `overrides` applied to each); none is a `ValueError`."""
    from jaxsched.experiments.evaluate import load_evaluated

    if not paths:
        raise ValueError(f"table {system.kind}: give at least one config")
    return [load_evaluated(p, system, overrides) for p in paths]


def table_overrides(args) -> list[str]:
    """The configs' overrides of `config_arguments`: `--set KEY=VALUE` ..., then `--out-dir`."""
    return [*args.set, *([f"out_dir={args.out_dir}"] if args.out_dir else [])]


@dataclass
class Report:
    """A paper-table report under construction: markdown `lines` and JSON `numbers` for `out`."""

    out: Path
    lines: list = field(default_factory=list)
    numbers: dict = field(default_factory=dict)

    @classmethod
    def start(cls, out_dir, title: str) -> Report:
        """An empty report in `out_dir` (made) headed by `title` and the machine it is measured on."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        machine, info = machine_line()
        return cls(out, [f"# {title}", "", machine, ""], {"machine": info})

    def add(self, name: str | None, section: tuple[list[str], object]) -> None:
        """Append a section's `(lines, numbers)`; its numbers under `name` (None: lines only)."""
        lines, numbers = section
        self.lines += lines
        if name is not None:
            self.numbers[name] = numbers

    def write(self) -> str:
        """`table.md` and `table.json` in `out`; returns the markdown."""
        text = "\n".join(self.lines)
        (self.out / "table.md").write_text(text)
        write_json(str(self.out / "table.json"), self.numbers)
        return text


def config_arguments(parser, kind: str, files: str) -> None:
    """The trained and evaluated configs, where their runs are (`--out-dir`, `--set`, as for `jaxsched
    train`) and `--out` (the folder for `files`)."""
    parser.add_argument(
        "configs", nargs="+", help=f"trained and evaluated {kind} configs (jaxsched eval first)"
    )
    parser.add_argument("--out", required=True, help=f"folder for {files}")
    add_run_location(parser, name=False)  # several configs: their own names


def print_written(text: str, out) -> int:
    print(text)
    print(f"written to {out}/")
    return 0


def parse_numbers(text: str, flag: str, integer: bool = False) -> list:
    """A comma list of positive numbers (`--loads 0.6,0.8`); "" is none; anything else names `flag`."""
    kind = "integers" if integer else "numbers"
    try:
        values = [(int if integer else float)(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{flag} must be a comma-separated list of {kind}, got {text!r}") from None
    if any(not v > 0 for v in values):
        raise ValueError(f"{flag} must be positive, got {text!r}")
    return values


def paper_rows(numbers, source: str, columns, relations: bool = False) -> dict[str, tuple]:
    """`{row: (value, ...)}`: a table of the paper's published numbers (`numbers`: the rows of a system's
    `paper_numbers.csv`, `experiments.calibration.read_paper_numbers`) — for each row of `source`, the value
    of each `(setting, metric)` of `columns`, None where the paper gives none; rows in the file's order,
    a row with no value left out. Levels (a heuristic's, a learner's ...), or with `relations` the
    relations (a ratio or a gap to a `reference`) alone. The tables read the file their calibration
    reads: one source."""
    values = {(n.row, n.setting, n.metric): n.value for n in numbers
              if n.source == source and (n.kind == "relation") == relations}  # fmt: skip
    rows = {r: tuple(values.get((r, s, m)) for s, m in columns) for r, _, _ in values}
    return {r: v for r, v in rows.items() if any(x is not None for x in v)}


# ---- cells -------------------------------------------------------------------------------------------
def head(*headers: str, text: int = 1) -> list[str]:
    """A markdown table's header and alignment rows: the first `text` columns left, the rest right."""
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * text + "---:|" * (len(headers) - text)]


def row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def ratio(a: float | None, b: float | None) -> str:
    """`a ÷ b` as "×1.234"; `DASH` when either is missing or `b` is 0."""
    return DASH if a is None or b is None or b == 0 else f"×{a / b:.3f}"


def with_paper(ours: str, paper: float | None, fmt: str = ",.1f") -> str:
    """Our cell with the paper's number in parentheses (when it gives one)."""
    return ours if paper is None else f"{ours} ({paper:{fmt}})"


def mean_of(results: dict, label: str, metric: str) -> float | None:
    """`results[label][metric]["mean"]`, None when the label or metric was not evaluated."""
    return results.get(label, {}).get(metric, {}).get("mean")


# ---- methods × metrics tables -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Column:
    """A column of a `methods_table`: one number per method (row) from its evaluation results.

    The cell is `metric`'s mean ± std (× `sign`, as the paper prints it) with the paper's value beside
    it (`paper`: its index in the method's row of the paper's table); with `over` (a method, e.g. the
    reference heuristic) or `over_column` (another column's `key` in the same row) it is instead the
    ratio of the two means, the paper's ratio beside it (`value`: the mean before it); with `test`,
    the paired test against the best baseline (`vs_best`). `source` names which results (a table over
    several evaluated configs); `key` names the number in table.json (default: `metric`; ratios and tests
    keep theirs out unless named)."""

    header: str
    metric: str
    paper: int | None = None
    fmt: str = ",.1f"
    sign: float = 1.0
    source: str = ""
    over: str | None = None
    over_column: str | None = None
    value: bool = False
    test: bool = False
    key: str | None = None

    def number(self, results: dict, method: str) -> float | None:
        """The signed mean of `method` (None: not evaluated)."""
        mean = mean_of(results, method, self.metric)
        return None if mean is None else self.sign * mean


def vs_best(test: dict | None) -> str:
    """A paired test as "×(ours ÷ theirs) vs NAME, p = P (n = N)" (its `ratio` is theirs ÷ ours)."""
    if test is None:
        return DASH
    ratio = 1 / max(test["ratio"], 1e-12)
    return f"×{ratio:.3f} vs {test['against']}, p = {test['p']:.2g} ({n_tested(test)})"


def methods_table(
    sources: dict, columns, paper: dict | None = None, names: dict | None = None, order=(), first="method"
) -> tuple[list[str], dict]:
    """A markdown table, a row per method, a cell per `Column`, and its numbers (`{method: {key: value,
    "paper": its paper row}}`). `sources`: `{source: {method: {metric: stats}}}` (a `Column.source` each);
    `paper`: `{method: tuple}` of the paper's rows; `names`: the methods' display names; rows in `order`
    first, then any other method that some source evaluated."""
    paper, names = paper or {}, names or {}
    seen = [m for res in sources.values() for m in res]
    methods = [m for m in dict.fromkeys([*order, *seen]) if m in seen]
    by_key = {c.key or c.metric: c for c in columns if not (c.test or c.over or c.over_column)}
    lines, numbers = head(first, *(c.header for c in columns)), {}
    for m in methods:
        numbers[m], cells = {"paper": paper.get(m)}, []
        for c in columns:
            res = sources[c.source]
            ours, pv = c.number(res, m), _paper_value(paper, m, c.paper)
            if c.test:
                number = res.get(m, {}).get(c.metric, {}).get("vs_best")
                cell = vs_best(number)
            elif c.over or c.over_column:
                base = by_key[c.over_column] if c.over_column else c
                other = c.over or m
                number = ours
                cell = ratio(ours, base.number(sources[base.source], other))
                if pv is not None:
                    cell += f" ({ratio(pv, _paper_value(paper, other, base.paper))})"
                if c.value and ours is not None:
                    cell = f"{ours:{c.fmt}} {cell}"
            else:
                entry, number = res.get(m, {}).get(c.metric), ours
                cell = with_paper(mean_std(entry and {"mean": ours, "std": entry["std"]}, c.fmt), pv, c.fmt)
            cells.append(cell)
            if c.key or not (c.test or c.over or c.over_column):
                numbers[m][c.key or c.metric] = number
        lines.append(row(names.get(m, m), *cells))
    return lines, numbers


def _paper_value(paper: dict, method: str, index: int | None) -> float | None:
    return None if index is None or method not in paper else paper[method][index]
