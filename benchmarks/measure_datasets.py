"""Measure the shared datasets: writes ``lightning_dpgnn/data/known_datasets.json``.

For every dataset the package knows whose raw files are in the data root: the counts of the
loader's output with the default target and options (nodes, directed edges, features, classes;
graphs for graph datasets) and the SHA-256 and size of each raw file. The data layer checks a
fresh build against these (see ``lightning_dpgnn.data.validation``).

    DPGNN_DATA=../shared/datasets DPGNN_CACHE=$(mktemp -d) python benchmarks/measure_datasets.py
    # smoke: python benchmarks/measure_datasets.py --datasets cora --out /tmp/known.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lightning_dpgnn.data import registry, validation
from lightning_dpgnn.data.paths import resolve_root
from lightning_dpgnn.data.validation import KNOWN_FILE, file_digest, graph_counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="*", default=None, help="subset (default: every one)")
    p.add_argument("--out", type=Path, default=KNOWN_FILE, help="default: the package's file")
    args = p.parse_args()
    root = resolve_root(None)
    assert root is not None, "set DPGNN_DATA"
    validation.known_datasets.cache_clear()
    validation.KNOWN_FILE = Path("/nonexistent")  # measure without comparing to the old values
    counts: dict[str, dict] = {}
    digests: dict[str, dict] = {}
    for name in registry.available_datasets():
        spec = registry.get_spec(name)
        if not spec.needs_files or spec.extra.get("mat_folder"):
            continue
        if args.datasets and spec.name not in args.datasets:
            continue
        files = registry._raw_file_keys(spec, root / spec.subpath)
        if not all(f.is_file() for f in files.values()):
            continue
        load = registry.load_dataset if spec.kind == "node" else registry.load_graph_dataset
        counts[spec.name] = graph_counts(load(name))
        digests.update({key: file_digest(f) for key, f in files.items()})
        print(spec.name, counts[spec.name], flush=True)
    known = {"counts": counts, "files": digests}
    args.out.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
