"""Does each zoo entry's recipe reproduce the benchmark rows its card cites?

One ``dpgnn zoo build`` is one run (the recipe's split, one seed of weights, fresh noise), so it
is compared with the spread of the benchmark's single runs, not with the card's interval (the
95% CI of a mean over seeds). This script builds an entry ``--seeds`` times through the zoo's
own path (``zoo.registry.build`` into a temporary folder) as the benchmark ran it: seed ``k``
seeds the weights (``--seed_everything k``) and the data module's split
(``--data.init_args.seed k``; a fixed split such as Planetoid's public one stays fixed). The
table puts the builds' mean and 95% bootstrap CI beside the card's: the recipe path reproduces
the benchmark when the two intervals overlap. ``--fixed-split`` keeps the recipe's own split
(what ``dpgnn zoo build`` trains on) to show how far it sits from the mean over splits.

    DPGNN_DATA=$(realpath ../shared/datasets) python benchmarks/zoo_check.py pgc-cora --seeds 10
    python benchmarks/summarize.py zoo_check
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's zoo/

from common import RESULTS, quiet, run_cells  # noqa: E402


def build_once(name: str, seed: int, overrides: list[str]) -> dict:
    """One build of ``name`` with ``overrides``; its measured test accuracy."""
    from huggingface_hub import ModelCard

    from lightning_dpgnn.publish import hub
    from zoo import registry

    with tempfile.TemporaryDirectory() as tmp:
        folder = registry.build(name, Path(tmp) / name, overrides=overrides)
        data = ModelCard.load(folder / hub.CARD).data.to_dict()
    return {"test_acc": data["measured_test_accuracy"]}


def cells(names: list[str], seeds: int, fixed_split: bool, extra: list[str]):
    for seed in range(seeds):
        for name in names:
            over = ["--seed_everything", str(seed)]
            if not fixed_split:
                over += ["--data.init_args.seed", str(seed)]
            split = "recipe" if fixed_split else "seed"
            key = f"{name}|{seed}|{split}|{' '.join(extra)}"
            meta = dict(key=key, entry=name, seed=seed, split=split, overrides=extra)
            yield meta, partial(build_once, name, seed, [*over, *extra])


def main() -> None:
    from zoo import registry

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="zoo entries (default: every entry with rows)")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--fixed-split", action="store_true",
                   help="keep the recipe's split (default: seed k splits as the benchmark did)")
    p.add_argument("--override", nargs=argparse.REMAINDER, default=[],
                   help="extra `dpgnn fit` arguments (a smoke run); must come last")
    p.add_argument("--out", type=Path, default=RESULTS / "zoo_check.jsonl")
    args = p.parse_args()
    quiet()
    names = args.names or [n for n, e in registry.entries().items() if e.benchmark_accuracies()]
    failed = run_cells(cells(names, args.seeds, args.fixed_split, args.override), args.out)
    import summarize

    print(summarize.write("zoo_check", args.out, doc=not args.override))
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
