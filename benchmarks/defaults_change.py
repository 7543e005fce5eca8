"""Old defaults beside new ones (issue 13): the GAP and ProGAP benchmark settings re-run with the
library's current defaults, next to the rows the published tables were made with.

The re-runs use the same grid scripts and protocol (``public-v2``, directed edge unit, 10 seeds)
with ``--out results/<benchmark>_defaults_v<N>.jsonl``; only the library changed (``CHANGES``
lists what moved each method, by commit). v2: GAP from ``normalization="none"`` to ``"auto"``
(BatchNorm at edge level and without privacy) and ``normalize_combine=True``; ProGAP from
linear -> norm -> activation blocks and an unnormalized JK output to linear -> activation ->
norm blocks and ``normalize_jk=True``; MLP to the best validation epoch of 100. v3: GAP and
ProGAP count the training labels of each node's in-neighbours (``label_counts``) by default at
edge level and without privacy, so every edge-level and non-private cell was re-run:

    python benchmarks/gap_accuracy.py --seeds 10 --methods GAP-EDP GAP-inf \\
        --out benchmarks/results/gap_accuracy_defaults_v3.jsonl
    python benchmarks/progap_accuracy.py --seeds 10 --methods ProGAP-EDP ProGAP-inf \\
        --out benchmarks/results/progap_accuracy_defaults_v3.jsonl
    python benchmarks/defaults_change.py   # -> results/defaults_change.{md,png}

A cell re-run in a later file replaces the earlier files' rows of it (from 5 seeds on). The plot
puts the old rows, the re-runs and the reference implementation's figures (the cells
``reference_parity.py`` records: GAP K=2 and ProGAP K=2 on the two schools) side by side.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from common import RESULTS, bootstrap_ci, is_valid, load_rows, row_protocol, row_unit

#: each benchmark's published rows, then its re-runs under later defaults, oldest first: a
#: re-run cell (>= 5 seeds) replaces the cell of every earlier file
FILES = {
    "gap": ("gap_accuracy.jsonl", "gap_accuracy_defaults_v2.jsonl",
            "gap_accuracy_defaults_v3.jsonl"),
    "progap": ("progap_accuracy.jsonl", "progap_accuracy_defaults_v2.jsonl",
               "progap_accuracy_defaults_v3.jsonl"),
}  # fmt: skip
#: the default changes, oldest first: (commit, the (method, level) families it moved, what)
_GAP_EDGE = {("GAP", "EDP"), ("GAP", "inf")}
_PROGAP_EDGE = {("ProGAP", "EDP"), ("ProGAP", "inf")}
CHANGES = (
    ("1326a07", _GAP_EDGE, "normalization auto (BatchNorm), normalize_combine"),
    ("1326a07", {("GAP", "NDP")},
     "normalize_combine (normalization 'auto' is none at node level, as before)"),
    ("5c618de", _PROGAP_EDGE | {("ProGAP", "NDP")}, "act -> norm blocks, normalize_jk"),
    ("5c618de", {("MLP", None)},
     "100 epochs, best validation epoch (was: the trainer's 1000, last)"),
    ("c0fdf5a", _GAP_EDGE | _PROGAP_EDGE,
     "label_counts on (noisy counts of the in-neighbours' training labels, same epsilon)"),
)  # fmt: skip
#: a method none of CHANGES names is current from this commit on
SINCE = {"gap": "1326a07", "progap": "5c618de"}


def family(method: str) -> tuple[str, str | None]:
    """``("ProGAP", "EDP")`` of ``ProGAP-LW-EDP``, ``("GAP", "EDP")`` of ``GAP-EDP-K3``,
    ``("MLP", None)`` of ``MLP``: the model and its level (``EDP``, ``NDP``, ``inf``)."""
    parts = method.split("-")
    return parts[0], next((p for p in parts if p in ("EDP", "NDP", "inf")), None)


def changes_of(method: str) -> list[tuple[str, str]]:
    """``(commit, what)`` of every default change that moved ``method``'s rows, oldest first."""
    return [(commit, what) for commit, fams, what in CHANGES if family(method) in fams]


def since(method: str, bench: str) -> str:
    """The commit of ``method``'s last default change: its rows are current from there on."""
    moved = changes_of(method)
    return moved[-1][0] if moved else SINCE[bench]


OUT = RESULTS / "defaults_change.md"
PLOT = RESULTS / "defaults_change.png"
#: reference_parity.REFERENCE cells matching each benchmark's method at its default depth
REFERENCE_CELLS = {"gap": "GAP-K2", "progap": "ProGAP-K2"}


def _contains(revision: str | None, commit: str) -> bool:
    """Whether library ``revision`` (``"<sha>[+dirty]"``) includes ``commit``."""
    import subprocess

    if not revision:
        return False
    rev = revision.split("+")[0]
    root = Path(__file__).resolve().parents[1]
    cmd = ["git", "-C", str(root), "merge-base", "--is-ancestor", commit, rev]
    return subprocess.run(cmd, capture_output=True).returncode == 0


def _settings(path) -> dict[tuple, list[float]]:
    acc = defaultdict(list)
    if not path.exists():
        return acc
    for r in load_rows(path):
        if not is_valid(r):
            continue
        key = (r["dataset"], r["method"], r["target_epsilon"], row_unit(r))
        acc[key, row_protocol(r)].append((100 * r["test_acc"], r.get("revision")))
    return acc


def _generations(bench: str) -> list[dict[tuple, list[tuple]]]:
    """The settings of each re-run file of ``bench`` with >= 5 seeds, oldest file first."""
    return [
        {k: v for k, v in _settings(RESULTS / name).items() if len(v) >= 5}
        for name in FILES[bench][1:]
    ]


def _rerun(bench: str) -> dict[tuple, list[tuple]]:
    """The re-run settings of ``bench``, each from the latest file that has it."""
    merged = {}
    for generation in _generations(bench):
        merged.update(generation)
    return merged


def _old_rows(old: dict, key: tuple, protocol: str) -> tuple[list[tuple], str]:
    """The old rows of a setting: same protocol when there are any, else the published ones
    (``paper-v0`` edge-level rows: the tables in the docs were made from those)."""
    if old.get((key, protocol)):
        return old[key, protocol], protocol
    for (k, p), values in old.items():
        if k == key:
            return values, p
    for (k, p), values in old.items():  # old rows recorded another unit (MLP: the edge unit)
        if k[:3] == key[:3]:
            return values, p
    return [], "–"


def _label(key: tuple) -> str:
    """Tick label of a setting: the method's level (``EDP``, ``NDP``, ``inf``) or name
    (baselines), and epsilon."""
    method, eps, unit = key[1], key[2], key[3]
    level = method.rsplit("-", 1)[-1] if "-" in method else method
    undirected = " undir." if unit == "edge-undirected" else ""
    return level if eps is None or level in ("inf", "MLP") else f"{level} {eps:g}{undirected}"


def _reference_cell(bench: str, key: tuple) -> tuple | None:
    """The ``reference_parity.REFERENCE`` cell of a setting: the reference measured edge level
    (the directed unit) and non-private runs of the benchmark's method at its default depth,
    and MLP."""
    method, eps = key[1], key[2]
    if method == "MLP":
        return ("MLP", None)
    if method.endswith("-inf") or (method.endswith("-EDP") and key[3] == "edge-directed"):
        return (REFERENCE_CELLS[bench], eps)
    return None


def _cell(values: list[float]) -> str:
    if not values:
        return "–"
    mean, lo, hi = bootstrap_ci(values)
    return f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={len(values)})"


def table(benches=tuple(FILES)) -> str:
    """Markdown table of every re-run setting of ``benches`` with >= 5 seeds."""
    lines = [
        "| benchmark | dataset | method | eps | old (protocol) | earlier re-run | new (public-v2) "
        "| diff | change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for bench in benches:
        old, generations = _settings(RESULTS / FILES[bench][0]), _generations(bench)
        new = _rerun(bench)
        for key, protocol in sorted(
            new, key=lambda k: (k[0][0], k[0][1], k[0][2] if k[0][2] is not None else 1e9)
        ):
            values = [v for v, _ in new[key, protocol]]
            old_rows, old_protocol = _old_rows(old, key, protocol)
            before = [v for v, _ in old_rows]
            runs = [g[key, protocol] for g in generations if (key, protocol) in g]
            earlier = [v for v, _ in runs[-2]] if len(runs) > 1 else []  # a re-run re-run
            mean = sum(values) / len(values)
            diff = f"{mean - sum(before) / len(before):+.2f}" if before else "–"
            dataset, method, eps = key[:3]
            moved = [what for commit, what in changes_of(method)
                     if not (old_rows and all(_contains(rev, commit) for _, rev in old_rows))]
            change = "; ".join(moved) or "none (the old rows had today's defaults)"
            if old_protocol != protocol:
                change += f"; {old_protocol} -> {protocol}"
            eps_s = "inf" if eps is None else f"{eps:g}"
            if key[3] == "edge-undirected":
                eps_s += " (undirected unit)"
            lines.append(
                f"| {bench} | {dataset} | {method} | {eps_s} | {_cell(before)} ({old_protocol}) "
                f"| {_cell(earlier)} | {_cell(values)} | {diff} | {change} |"
            )
    return "\n".join(lines) + "\n"


HEADER = """# Benchmark rows before and after the default changes (issue 13)

Test accuracy %, mean and 95% bootstrap CI over seeds. Same grid scripts and seeds; the old
rows are those of the same protocol where the published table had some, else the published
``paper-v0`` rows (then the protocol changed too: see the change column). Edge level: the
directed unit.

"""
DOCS = Path(__file__).resolve().parents[1] / "docs"
BEGIN, END = "<!-- DEFAULTS:BEGIN -->", "<!-- DEFAULTS:END -->"


def splice(page: Path, text: str) -> None:
    """Replace what lies between the DEFAULTS markers of a docs page with ``text``."""
    doc = page.read_text()
    if BEGIN not in doc or END not in doc:
        return
    head, rest = doc.split(BEGIN, 1)
    page.write_text(head + BEGIN + "\n" + text + rest[rest.index(END) :])


def plot(out: Path = PLOT) -> Path:
    """Old rows, re-runs and the reference, test accuracy against epsilon per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from reference_parity import REFERENCE, SCHOOLS

    datasets = sorted({k[0] for b in FILES for k, _ in _rerun(b)})
    fig, axes = plt.subplots(
        len(FILES), len(datasets), figsize=(4 * len(datasets), 3.2 * len(FILES)), squeeze=False
    )
    for row, bench in enumerate(FILES):
        old, new = _settings(RESULTS / FILES[bench][0]), _rerun(bench)
        for col, dataset in enumerate(datasets):
            ax = axes[row][col]
            keys = sorted(
                (k for k in new if k[0][0] == dataset and len(new[k]) >= 5),
                key=lambda k: (_label(k[0]).split()[0], k[0][2] or 1e9),
            )
            xs = list(range(len(keys)))
            labels = [_label(k[0]) for k in keys]
            for shift, source, name in ((-0.15, old, "old rows"), (0.15, new, "current defaults")):
                pts = []
                for x, (key, protocol) in zip(xs, keys, strict=True):
                    values = (
                        [v for v, _ in new[key, protocol]]
                        if source is new
                        else [v for v, _ in _old_rows(old, key, protocol)[0]]
                    )
                    if values:
                        mean, lo, hi = bootstrap_ci(values)
                        pts.append((x + shift, mean, mean - lo, hi - mean))
                if pts:
                    px, py, lo, hi = zip(*pts, strict=True)
                    ax.errorbar(px, py, yerr=[lo, hi], fmt="o", capsize=3, label=name)
            school = dataset.split("/")[-1]
            if school in SCHOOLS:
                ref = [
                    (x, REFERENCE[cell][SCHOOLS.index(school)])
                    for x, k in zip(xs, keys, strict=True)
                    if (cell := _reference_cell(bench, k[0])) in REFERENCE
                ]
                if ref:
                    rx, ry = zip(*ref, strict=True)
                    ax.plot(rx, ry, "k_", markersize=18, mew=2, label="reference code")
            ax.set_xticks(xs, labels)
            ax.set_title(f"{bench}: {dataset}", fontsize=9)
            ax.set_xlabel("setting (EDP: edge epsilon, directed; NDP: node epsilon)", fontsize=7)
            ax.tick_params(axis="x", labelsize=6, rotation=45)
            ax.set_ylabel("test accuracy %")
            ax.grid(alpha=0.3)
            if row == 0 and col == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> None:
    import shutil

    shutil.copyfile(plot(), DOCS / "img" / PLOT.name)
    text = HEADER + table()
    OUT.write_text(text)
    print(text)
    for bench in FILES:
        splice(DOCS / f"{bench}.md", table((bench,)))


if __name__ == "__main__":
    main()
