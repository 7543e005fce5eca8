"""The hub format of a private model: what may be published, how it is written, verified, pushed
and pulled.

A published model is a folder (or a Hugging Face Hub repository) in the
:class:`huggingface_hub.ModelHubMixin` layout:

* ``model.safetensors`` — the parameters (``state_dict``);
* ``config.json`` — the hyper-parameters (the method's ``__init__`` arguments, with the public
  sizes ``num_features`` / ``num_classes`` and the calibrated ``noise_multiplier``);
* ``mechanism_outputs.safetensors`` — the recorded mechanisms' cached outputs (GAP's noisy hops,
  ProGAP's noisy stage aggregates, the LDP collection) and values public at the model's level
  (PGC link prediction's edge split): what transductive prediction on the training graph needs;
* ``privacy_report.json`` — the :class:`~lightning_dpgnn.privacy.PrivacyReport`, the accountant
  it was computed from, the noise multiplier, and the SHA-256 of the three files above;
* ``README.md`` — the model card (:mod:`lightning_dpgnn.zoo.card`).

It holds exactly what a checkpoint may hold (``PrivateModule.privacy_state()``, docs/privacy.md
"Checkpoints") minus optimizer moments and training-loop state: nothing else computed from
private data (design invariant 9).

Publishing is refused (:class:`PublishError`) for a model whose noise was reproducible, whose
report is missing, or whose fit stopped before its plan or spent more than its target. Loading is
refused (:class:`VerificationError`) when the report is missing or disagrees with the config,
the weights, the cached outputs or the accountant it claims to summarize.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from huggingface_hub import HfApi, constants, hf_hub_download
from safetensors import safe_open
from safetensors.torch import save_file

from lightning_dpgnn.privacy import PrivacyAccountant, PrivacyReport

if TYPE_CHECKING:  # pragma: no cover
    from lightning_dpgnn.methods.base import PrivateModule

__all__ = [
    "FILES",
    "PublishError",
    "VerificationError",
    "publication_refusals",
    "check_publishable",
    "model_config",
    "write_folder",
    "read_report",
    "read_folder",
    "resolve_folder",
    "push_folder",
    "hub_endpoint",
    "hub_offline",
]

WEIGHTS = "model.safetensors"
OUTPUTS = "mechanism_outputs.safetensors"
CONFIG = constants.CONFIG_NAME  # "config.json"
REPORT = "privacy_report.json"
CARD = "README.md"
#: files whose SHA-256 the report carries (the card is derived from them)
HASHED = (WEIGHTS, OUTPUTS, CONFIG)
FILES = (*HASHED, REPORT, CARD)
FORMAT = "lightning-dpgnn/1"


class PublishError(ValueError):
    """The model may not be published: its guarantee would not hold or cannot be stated."""


class VerificationError(ValueError):
    """A published folder's report is missing or disagrees with what the folder holds."""


# -- environment ---------------------------------------------------------------------------
def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def hub_endpoint() -> str:
    """The hub to talk to: ``HF_ENDPOINT`` as set now (huggingface_hub reads it only at
    import), else huggingface_hub's default."""
    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE=1`` as set now, or as huggingface_hub read it at import."""
    return _env_true("HF_HUB_OFFLINE") or bool(constants.HF_HUB_OFFLINE)


# -- what may be published -------------------------------------------------------------------
def publication_refusals(model: PrivateModule) -> list[str]:
    """Every reason ``model`` may not be published (empty: it may)."""
    reasons: list[str] = []
    report = model.privacy_spent()
    if not any(True for _ in model.parameters()):
        return ["the model has no parameters yet: fit it (or load a fitted checkpoint) first"]
    if any(v is None for v in model.mechanism_outputs().values()):
        reasons.append(
            "its privacy report is missing: no recorded mechanism output is cached (the model "
            "was not fitted); fit it, or load a fitted checkpoint"
        )
    elif (model.privacy != "none" and model.calibrates_noise()
          and not any(e.count for e in model.accountant.ledger)):
        reasons.append("its privacy report is missing: no mechanism is recorded; fit it first")
    blockers = getattr(model, "publication_blockers", None)
    if callable(blockers):  # a method's own refusals (e.g. GW-LDP's paper-code mode)
        reasons.extend(blockers())
    if report.reproducible_noise or model.noise_seed is not None:
        reasons.append(
            f"its noise is reproducible (noise_seed={model.noise_seed!r}): the guarantee does "
            "not hold against anyone who knows the seed; retrain without noise_seed"
        )
    if model.privacy == "none":
        return reasons  # non-private: published as such, the card says epsilon = inf
    try:
        planned = model.planned_accountant(model.noise_multiplier)
    except RuntimeError:
        planned = None
    if model.privacy_halted or (
        planned is not None and planned.total_count() > model.accountant.total_count()
    ):
        reasons.append(
            "its fit was halted before the end of its plan (PrivacyBudget stop or an "
            "interrupted fit): retrain it to completion"
        )
    target = model.target_epsilon
    if target is not None and math.isfinite(target) and report.epsilon > target * (1 + 1e-9):
        reasons.append(
            f"it spent epsilon {report.epsilon:.6g}, over its target {target:g}"
        )
    return reasons


def check_publishable(model: PrivateModule) -> None:
    """Raise :class:`PublishError` listing every reason ``model`` may not be published."""
    reasons = publication_refusals(model)
    if reasons:
        raise PublishError(
            f"refusing to publish this {type(model).__name__}:\n  - " + "\n  - ".join(reasons)
        )


# -- nested state <-> safetensors ----------------------------------------------------------------
def _flatten(obj: Any, key: str, tensors: dict[str, torch.Tensor]) -> Any:
    """A JSON skeleton of ``obj`` whose tensors are moved into ``tensors`` (sparse tensors as
    their COO indices and values)."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu()
        if t.is_sparse:
            t = t.coalesce()
            tensors[f"{key}.indices"] = t.indices().contiguous().clone()
            tensors[f"{key}.values"] = t.values().contiguous().clone()
            return {"__sparse__": key, "size": list(t.shape)}
        tensors[key] = t.contiguous().clone()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        return {"__dict__": {str(k): _flatten(v, f"{key}.{k}", tensors) for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        kind = "__list__" if isinstance(obj, list) else "__tuple__"
        return {kind: [_flatten(v, f"{key}.{i}", tensors) for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot publish a value of type {type(obj).__name__} at {key!r}")


def _unflatten(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(skeleton, dict):
        if "__tensor__" in skeleton:
            return tensors[skeleton["__tensor__"]]
        if "__sparse__" in skeleton:
            k = skeleton["__sparse__"]
            return torch.sparse_coo_tensor(
                tensors[f"{k}.indices"], tensors[f"{k}.values"], skeleton["size"]
            ).coalesce()
        if "__dict__" in skeleton:
            return {k: _unflatten(v, tensors) for k, v in skeleton["__dict__"].items()}
        if "__list__" in skeleton:
            return [_unflatten(v, tensors) for v in skeleton["__list__"]]
        if "__tuple__" in skeleton:
            return tuple(_unflatten(v, tensors) for v in skeleton["__tuple__"])
        raise VerificationError(f"unknown entry in {OUTPUTS}: {sorted(skeleton)}")
    return skeleton


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _class_path(cls: type) -> str:
    """``lightning_dpgnn.GAP`` for the library's methods (their public import path)."""
    import lightning_dpgnn

    if getattr(lightning_dpgnn, cls.__name__, None) is cls:
        return f"lightning_dpgnn.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def model_config(model: PrivateModule) -> dict[str, Any]:
    """The hyper-parameters that rebuild ``model``: its ``__init__`` arguments as the fit left
    them (public sizes and the calibrated noise multiplier included), JSON-ready."""
    config = {}
    from lightning_dpgnn._init_args import init_arguments

    accepted = init_arguments(type(model))
    for k, v in dict(model.hparams).items():
        if k not in accepted:
            continue
        try:
            json.dumps(v)
        except TypeError as err:
            raise PublishError(f"hyper-parameter {k}={v!r} cannot be written to JSON") from err
        config[k] = list(v) if isinstance(v, tuple) else v
    return config


# -- write / read a folder ---------------------------------------------------------------------
def write_folder(model: PrivateModule, folder: Path) -> dict[str, Any]:
    """Write weights, config, cached outputs and the report of ``model`` into ``folder``
    (after :func:`check_publishable`); return the report file's content."""
    import lightning_dpgnn

    check_publishable(model)
    folder.mkdir(parents=True, exist_ok=True)
    state = model.privacy_state()
    weights = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    save_file(weights, folder / WEIGHTS, metadata={"format": "pt"})
    tensors: dict[str, torch.Tensor] = {}
    skeleton = _flatten({"outputs": state["outputs"], "public": state["public"]}, "s", tensors)
    save_file(tensors, folder / OUTPUTS, metadata={"skeleton": json.dumps(skeleton)})
    (folder / CONFIG).write_text(json.dumps(model_config(model), sort_keys=True, indent=2))
    content = {
        "format": FORMAT,
        "library": "lightning-dpgnn",
        "library_version": lightning_dpgnn.__version__,
        "method": _class_path(type(model)),
        "report": state["report"],
        "accountant": state["accountant"],
        "noise_multiplier": state["noise_multiplier"],
        "sha256": {name: _sha256(folder / name) for name in HASHED},
    }
    audit = getattr(model, "empirical_audit", None)
    if audit:  # measured by attacks (PrivacyAudit), outside the guarantee
        content["empirical_audit"] = audit
    (folder / REPORT).write_text(json.dumps(content, indent=2))
    return content


def read_report(folder: Path) -> dict[str, Any]:
    """The report file of a published folder, checked against the files it hashes and the
    accountant it summarizes (:class:`VerificationError` otherwise)."""
    path = folder / REPORT
    if not path.is_file():
        raise VerificationError(
            f"{folder} has no {REPORT}: its privacy guarantee is unknown, refusing to load it"
        )
    try:
        content = json.loads(path.read_text())
        report = PrivacyReport.from_dict(content["report"])
        accountant = PrivacyAccountant.from_state_dict(content["accountant"])
        hashes = content["sha256"]
    except (KeyError, TypeError, ValueError) as err:
        raise VerificationError(f"{path} is not a lightning-dpgnn privacy report: {err}") from err
    if content.get("format") != FORMAT:
        raise VerificationError(f"{path}: unknown format {content.get('format')!r}")
    for name in HASHED:
        if not (folder / name).is_file():
            raise VerificationError(f"{folder} lacks {name}, which its report hashes")
        if _sha256(folder / name) != hashes.get(name):
            raise VerificationError(
                f"{folder / name} does not match the SHA-256 in {REPORT}: the file was changed "
                "after the report was written, so the report does not describe it"
            )
    private = report.level != "none"
    recomputed = PrivacyReport.from_accountant(accountant, private=private)
    if recomputed.to_dict() != report.to_dict():
        raise VerificationError(
            f"{path}: the report (epsilon {report.epsilon}) disagrees with the accountant it "
            f"carries (epsilon {recomputed.epsilon})"
        )
    _check_card(folder, report)
    return content


def _check_card(folder: Path, report: PrivacyReport) -> None:
    """The card's ``privacy`` metadata, when there is a card, must state the report's
    guarantee: its prose may be edited, the numbers people read may not."""
    from huggingface_hub import ModelCard

    path = folder / CARD
    if not path.is_file():
        return
    stated = ModelCard.load(path).data.to_dict().get("privacy") or {}
    eps = None if math.isinf(report.epsilon) else report.epsilon
    claims = {"level": report.level, "unit": report.unit or stated.get("unit"),
              "delta": report.delta, "epsilon": eps}
    wrong = [k for k, v in claims.items()
             if not (stated.get(k) == v or (isinstance(v, float) and isinstance(
                 stated.get(k), (int, float)) and math.isclose(stated[k], v, rel_tol=1e-5)))]
    if wrong:
        raise VerificationError(
            f"{path} states a guarantee other than {REPORT}'s ({', '.join(wrong)}: "
            f"{ {k: stated.get(k) for k in wrong} } vs {({k: claims[k] for k in wrong})})"
        )


def _check_config(config: dict[str, Any], content: dict[str, Any], folder: Path) -> None:
    report = content["report"]
    level = config.get("privacy", "ldp" if report["level"] == "ldp" else None)
    if level is not None and level != report["level"]:
        raise VerificationError(
            f"{folder}: {CONFIG} says privacy={level!r} but {REPORT} reports level "
            f"{report['level']!r}"
        )
    if config.get("noise_multiplier") != content.get("noise_multiplier") and (
        "noise_multiplier" in config
    ):
        raise VerificationError(
            f"{folder}: {CONFIG} noise_multiplier={config.get('noise_multiplier')} disagrees "
            f"with {REPORT} ({content.get('noise_multiplier')})"
        )


def read_folder(cls: type[PrivateModule], folder: Path, **overrides: Any) -> PrivateModule:
    """Build a ``cls`` from a verified published folder (see :func:`read_report`)."""
    from safetensors.torch import load_file

    content = read_report(folder)
    config = json.loads((folder / CONFIG).read_text())
    _check_config(config, content, folder)
    method = content["method"]
    if _class_path(cls) != method and method.rsplit(".", 1)[-1] != cls.__name__:
        from lightning_dpgnn.methods.base import PrivateModule

        if cls is not PrivateModule:
            raise VerificationError(f"{folder} holds a {method}, not a {cls.__name__}")
        cls = _import(method)
    fixed = sorted(k for k, v in overrides.items() if k in config and config[k] != v)
    if fixed:
        raise ValueError(
            f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} fixed by the published "
            f"{CONFIG} (covered by its report); load the model as published"
        )
    from lightning_dpgnn.methods.ap import AggregationPerturbationModule

    if issubclass(cls, AggregationPerturbationModule) and "label_counts" not in config:
        config["label_counts"] = False  # published before label counts existed (now default)
    model = cls(**{**config, **overrides})
    try:
        missing, unexpected = model.load_state_dict(load_file(folder / WEIGHTS), strict=False)
    except RuntimeError as err:  # a tensor of another shape than the config builds
        raise VerificationError(
            f"{folder / WEIGHTS} does not fit {cls.__name__}({CONFIG}): {err}"
        ) from err
    if missing or unexpected:
        raise VerificationError(
            f"{folder / WEIGHTS} does not fit {cls.__name__}({CONFIG}): missing {missing}, "
            f"unexpected {unexpected}"
        )
    with safe_open(folder / OUTPUTS, framework="pt") as f:
        skeleton = json.loads(f.metadata()["skeleton"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open API
    saved = _unflatten(skeleton, tensors)
    model.load_privacy_state({
        "accountant": content["accountant"],
        "noise_multiplier": content["noise_multiplier"],
        "outputs": saved["outputs"],
        "public": saved["public"],
    })
    model.eval()
    return model


def _import(path: str) -> type:
    import importlib

    module, _, name = path.rpartition(".")
    if not module.startswith("lightning_dpgnn"):
        raise VerificationError(f"refusing to import {path!r}: not a lightning-dpgnn method")
    return getattr(importlib.import_module(module), name)


# -- hub transfer ------------------------------------------------------------------------------
def resolve_folder(
    repo_or_dir: str | Path,
    *,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    force_download: bool = False,
    token: str | bool | None = None,
    local_files_only: bool = False,
) -> Path:
    """A local folder with the published files: ``repo_or_dir`` itself when it is a folder,
    else the hub cache (downloading what is missing unless offline)."""
    path = Path(repo_or_dir)
    if path.is_dir():
        return path
    text = str(repo_or_dir)
    if path.is_absolute() or text.startswith((".", "~")) or text.count("/") > 1:
        raise FileNotFoundError(f"no published model folder at {text}")
    offline = local_files_only or hub_offline()
    kw = dict(
        repo_id=str(repo_or_dir), revision=revision, cache_dir=cache_dir, token=token,
        force_download=force_download, local_files_only=offline, endpoint=hub_endpoint(),
    )
    report = Path(hf_hub_download(filename=REPORT, **kw))
    for name in (*HASHED, CARD):
        hf_hub_download(filename=name, **kw)
    return report.parent


def push_folder(
    folder: Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool | None = None,
    branch: str | None = None,
    commit_message: str = "Upload private model (lightning-dpgnn)",
) -> str:
    """Create ``repo_id`` (if needed) and upload a verified ``folder``; return the commit URL."""
    read_report(folder)  # never push a folder whose report does not verify
    api = HfApi(endpoint=hub_endpoint(), token=token)
    repo_id = api.create_repo(repo_id=repo_id, private=private, exist_ok=True).repo_id
    info = api.upload_folder(
        repo_id=repo_id, repo_type="model", folder_path=folder, revision=branch,
        commit_message=commit_message, allow_patterns=list(FILES),
    )
    return str(info)
