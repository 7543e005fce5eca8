"""The zoo registry (``zoo/registry.yaml``): list, inspect, build, load and publish entries.

``build`` trains an entry's recipe exactly as ``dpgnn zoo build NAME`` (= ``dpgnn fit --config
zoo/recipes/<recipe>.yaml``) does, tests it, and writes a hub-ready folder
(:mod:`lightning_dpgnn.publish.hub`) whose card carries the entry's dataset, split, benchmark
accuracy and rebuild command. ``load`` returns a ready model from a local build, or from the hub
(cached; ``HF_HUB_OFFLINE`` and ``HF_ENDPOINT`` are honoured) when the entry is published there,
or builds it on demand (``build=True``). An entry the registry marks unpublished is never
looked up on the public hub, and an unreachable hub is asked once, with a short timeout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# `hub` (torch, huggingface_hub, the privacy layer) is imported by the functions that talk to
# the hub: `dpgnn zoo list` and `info` read only the registry and start in a fraction of a second

__all__ = ["ZooEntry", "entries", "entry", "table", "build_dir", "build", "load", "push"]

REGISTRY = Path(__file__).parent / "registry.yaml"
RECIPES = Path(__file__).parent / "recipes"
#: where ``build`` writes (``$DPGNN_ZOO_DIR/<name>``; default ``./zoo-build/<name>``)
BUILD_ENV = "DPGNN_ZOO_DIR"


@dataclass(frozen=True)
class ZooEntry:
    """One published model of the zoo (see ``zoo/registry.yaml``)."""

    name: str
    recipe: str
    method: str
    dataset: str
    split: str
    level: str
    unit: str
    epsilon: float
    repo_id: str
    published: bool = False
    accuracy: dict[str, Any] | None = None
    note: str | None = None
    #: node level: where the recipe's degree bound D comes from (stated on the card)
    degree_bound_source: str | None = None
    #: the logged test metric the benchmark's accuracy and the card's one-run figure are
    #: (GW-LDP: ``test/svm_acc``, the server's SVM on the release)
    metric: str = "test/acc"

    @property
    def recipe_path(self) -> Path:
        return RECIPES / f"{self.recipe}.yaml"

    def data(self):
        """The graph this entry is trained on, preprocessed and split as its recipe says (the
        recipe's data module; split seed included): what a transductive prediction reads,
        through the model's cached mechanism outputs only."""
        import yaml
        from jsonargparse import ArgumentParser

        from lightning_dpgnn.data import NodeDataModule

        spec = yaml.safe_load(self.recipe_path.read_text())["data"]
        parser = ArgumentParser(exit_on_error=False)
        parser.add_argument("--data", type=NodeDataModule)
        dm = parser.instantiate_classes(parser.parse_object({"data": spec})).data
        return dm.data

    def benchmark_accuracies(self) -> list[float]:
        """Test accuracy (%) of each run of the benchmark rows behind ``accuracy`` (its
        ``source`` file, the rows matching ``rows``): the spread one build is compared with.
        Empty when the entry cites no rows or the results file is not here (an installed
        package without the repository's ``benchmarks/``)."""
        a = self.accuracy or {}
        source = REGISTRY.parent.parent / str(a.get("source", ""))
        if not a.get("rows") or not source.is_file():
            return []
        import json

        out = []
        for line in source.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if row and all(row.get(k) == v for k, v in a["rows"].items()):
                value = row.get("test_acc", row.get("test_metric"))
                if value is not None:
                    out.append(100 * value if value <= 1 else value)
        return out

    def compare_build(self, measured: float | None) -> str:
        """Where one build's test accuracy (a fraction) falls: inside or outside the range
        of the benchmark's single runs (a build is one run; the card's interval is the CI of
        a mean over seeds, which one run is not expected to hit)."""
        runs = self.benchmark_accuracies()
        if measured is None or not runs:
            return "no benchmark runs to compare with"
        lo, hi, acc = min(runs), max(runs), 100 * measured
        where = "within" if lo - 0.05 <= acc <= hi + 0.05 else "OUTSIDE"
        return (f"{acc:.1f}% is {where} the range of the benchmark's {len(runs)} runs "
                f"({lo:.1f}–{hi:.1f}%; their mean {sum(runs) / len(runs):.1f}%)")

    @property
    def command(self) -> str:
        """The command that rebuilds this entry."""
        return f"dpgnn zoo build {self.name}"

    def card_kwargs(self) -> dict[str, Any]:
        return dict(
            name=self.name, dataset=self.dataset, split=self.split, accuracy=self.accuracy,
            command=f"{self.command}   # = dpgnn fit --config zoo/recipes/{self.recipe}.yaml",
            recipe=self.recipe, degree_bound_source=self.degree_bound_source,
        )


def entries(registry: Path | None = None) -> dict[str, ZooEntry]:
    """Every entry of the registry, by name."""
    raw = yaml.safe_load((registry or REGISTRY).read_text())["models"]
    return {name: ZooEntry(name=name, **fields) for name, fields in raw.items()}


def entry(name: str, registry: Path | None = None) -> ZooEntry:
    """The entry ``name``, with a clear error listing the known ones."""
    known = entries(registry)
    if name not in known:
        raise ValueError(f"unknown zoo model {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def _acc(a: dict[str, Any] | None) -> str:
    if not a:
        return "–"
    return f"{a['mean']} ({a['low']}–{a['high']})"


def table(registry: Path | None = None):
    """The registry as a :class:`pandas.DataFrame` (one row per model)."""
    import pandas as pd

    rows = [
        {
            "name": e.name, "method": e.method, "dataset": e.dataset, "level": e.level,
            "epsilon": e.epsilon, "unit": e.unit, "test acc % (95% CI)": _acc(e.accuracy),
            "repo_id": e.repo_id, "published": e.published,
        }
        for e in entries(registry).values()
    ]
    return pd.DataFrame(rows).set_index("name")


def build_dir(name: str, root: str | Path | None = None) -> Path:
    """The folder ``build`` writes entry ``name`` to."""
    base = Path(root) if root is not None else Path(os.environ.get(BUILD_ENV, "zoo-build"))
    return base / name


def build(
    name: str,
    out: str | Path | None = None,
    *,
    overrides: list[str] | None = None,
    registry: Path | None = None,
) -> Path:
    """Train entry ``name`` from its recipe, test it, and write a hub-ready folder with its
    card (refused, before anything is written, if the model may not be published).

    ``overrides`` are extra ``dpgnn fit`` arguments (e.g. ``["--trainer.max_epochs", "2"]``);
    they make a different model than the entry's, so the card records them."""
    import lightning as L

    from lightning_dpgnn._cli import DPGNNCLI  # the recipe runner, not the `dpgnn` entry point

    e = entry(name, registry)
    # the hub folder is the build's only output: no checkpoint of the fit (optimizer moments
    # included) is left in the working directory, as `dpgnn fit` would (an override may ask)
    args = ["--config", str(e.recipe_path), "--trainer.enable_checkpointing=false"]
    cli = DPGNNCLI(
        L.LightningModule, L.LightningDataModule, subclass_mode_model=True,
        subclass_mode_data=True, seed_everything_default=0, save_config_callback=None,
        args=[*args, *(overrides or [])], run=False, auto_configure_optimizers=False,
    )
    blockers = cli.model.publication_blockers()
    if blockers:  # known before any fit (a paper-code mode)
        from lightning_dpgnn.publish import hub

        raise hub.PublishError(f"refusing to build {name}:\n  - " + "\n  - ".join(blockers))
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    results = cli.trainer.test(cli.model, datamodule=cli.datamodule, verbose=False)
    measured = results[0].get(e.metric) if results else None
    kwargs = e.card_kwargs()
    if overrides:
        kwargs["command"] = f"{e.command} --override {' '.join(overrides)}"
        kwargs["accuracy"] = None  # the benchmark measured the entry's settings, not these
    folder = Path(out) if out is not None else build_dir(name)
    cli.model.save_pretrained(
        folder, model_card_kwargs={**kwargs, "measured_accuracy": measured}
    )
    return folder


_build_entry = build  # ``load(build=True)`` shadows the name


def _method_class(e: ZooEntry):
    import lightning_dpgnn

    return getattr(lightning_dpgnn, e.method)


def _not_available(name: str, folder: Path, why: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"zoo model {name!r} is not built here ({folder}) and {why}. Build it with "
        f"`dpgnn zoo build {name}` (or zoo.load({name!r}, build=True))."
    )


def load(
    name: str,
    *,
    local_dir: str | Path | None = None,
    repo_id: str | None = None,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    prefer_local: bool = True,
    build: bool = False,
    registry: Path | None = None,
):
    """A ready model for entry ``name``: from ``local_dir`` (default: its build folder, when
    it exists and ``prefer_local``), else from the hub repository (``repo_id``, default the
    entry's) through the hub cache. The folder's report is verified before the model is
    built.

    The public hub is not asked for an entry the registry marks unpublished (``published:
    false``) unless ``repo_id`` names a repository; an unreachable hub is asked once, with a
    short timeout (:func:`~lightning_dpgnn.publish.hub.hub_unreachable`), and only the hub cache
    is read then. When none of these holds the model, ``build=True`` trains it from its recipe
    into its build folder (``dpgnn zoo build NAME``, with the fit's progress bar) and loads that;
    otherwise a one-line :class:`FileNotFoundError` says how to build it."""
    from lightning_dpgnn.publish import hub

    e = entry(name, registry)
    folder = Path(local_dir) if local_dir is not None else build_dir(name)
    built = folder.is_dir()
    if prefer_local and built:
        return _method_class(e).from_pretrained(folder)
    if repo_id is None and not e.published:
        why = f"it is not published on the hub yet ({e.repo_id}: published: false in the registry)"
    else:
        target = repo_id or e.repo_id
        try:
            return _method_class(e).from_pretrained(target, revision=revision,
                                                    cache_dir=cache_dir)
        except hub.VerificationError:
            raise
        except hub.HubUnreachableError as err:
            why = str(err)
        except Exception as err:  # noqa: BLE001 - hub errors vary; say what to do instead
            why = (f"{target} is not available from the hub at {hub.hub_endpoint()} "
                   f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})")
    if built and not prefer_local:
        why += f"; a local build exists at {folder} (zoo.load({name!r}) loads it)"
        raise FileNotFoundError(f"zoo model {name!r}: {why}")
    if not build:
        raise _not_available(name, folder, why)
    print(f"zoo: {name} is not built here and {why}; building it from "
          f"zoo/recipes/{e.recipe}.yaml into {folder} (= dpgnn zoo build {name})", flush=True)
    return _method_class(e).from_pretrained(_build_entry(name, folder, registry=registry))


def push(
    name: str,
    repo_id: str | None = None,
    *,
    local_dir: str | Path | None = None,
    token: str | None = None,
    registry: Path | None = None,
) -> str:
    """Publish the built folder of entry ``name`` to ``repo_id`` (default: the entry's)."""
    from lightning_dpgnn.publish import hub

    e = entry(name, registry)
    folder = Path(local_dir) if local_dir is not None else build_dir(name)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist: run `dpgnn zoo build {name}` first")
    return hub.push_folder(folder, repo_id or e.repo_id, token=token)
