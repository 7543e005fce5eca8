"""The hub format of a private model (``ModelHubMixin`` layout, plus the cached mechanism outputs
and ``privacy_report.json``): what may be published, how it is written, verified, pushed and
pulled. A model is a :class:`PublishableModel`: this module never imports ``methods/``."""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import tempfile
import urllib.error
import urllib.request
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from huggingface_hub import HfApi, ModelCard, ModelHubMixin, constants, hf_hub_download
from huggingface_hub.utils import LocalEntryNotFoundError
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import lightning_dpgnn
from lightning_dpgnn._init_args import init_arguments
from lightning_dpgnn.levels import Level
from lightning_dpgnn.privacy import (
    PrivacyAccountant,
    PrivacyReport,
    SeveralGuarantees,
    report_from_dict,
)
from lightning_dpgnn.privacy.guarantee import Guarantee

if TYPE_CHECKING:  # pragma: no cover
    from .card import MethodCard

__all__ = [
    "FILES", "PublishableModel", "PublishError", "VerificationError", "HubUnreachableError",
    "publication_refusals", "check_publishable", "folder_refusals", "check_folder_publishable",
    "model_config", "write_folder", "report_digest", "read_report", "read_folder", "resolve_folder",
    "push_folder", "save_pretrained", "push_to_hub", "from_pretrained", "hub_endpoint",
    "hub_offline", "hub_unreachable",
]

WEIGHTS = "model.safetensors"
OUTPUTS = "mechanism_outputs.safetensors"
CONFIG = constants.CONFIG_NAME  # "config.json"
REPORT = "privacy_report.json"
CARD = "README.md"
#: files whose SHA-256 the report carries (the card is derived from them)
HASHED = (WEIGHTS, OUTPUTS, CONFIG)
FILES = (*HASHED, REPORT, CARD)
FORMAT = "lightning-dpgnn/2"
#: written before the report hashed itself and carried the publishing gate: loads, with a
#: warning; never pushed
OLD_FORMATS = ("lightning-dpgnn/1",)


class PublishError(ValueError):
    """The model may not be published: its guarantee would not hold or cannot be stated."""


class VerificationError(ValueError):
    """A published folder's report is missing or disagrees with what the folder holds."""


class HubUnreachableError(ConnectionError):
    """The hub cannot be reached and the hub cache does not hold what was asked for."""


class Planner(Protocol):
    """The accounting a model holds (``model.ledgers``), as far as publishing reads it."""

    def planned_accountant(self, noise_multiplier: float | None) -> PrivacyAccountant | None: ...


class PublishableModel(Protocol):
    """What publishing reads from a model (``PrivateModule`` has all of it)."""

    level: Level
    noise_seed: int | None
    noise_multiplier: float | None
    privacy_halted: bool
    accountant: PrivacyAccountant
    hparams: Any
    empirical_audit: dict[str, Any] | None
    legacy_hparams: dict[str, Any]

    def guarantees(self) -> list[Guarantee]: ...
    def describe(self) -> MethodCard: ...
    def publication_blockers(self) -> list[str]: ...
    def privacy_spent(self) -> PrivacyReport: ...
    def privacy_state(self) -> dict[str, Any]: ...
    def load_privacy_state(self, state: dict[str, Any]) -> None: ...
    def mechanism_outputs(self) -> dict[str, Any]: ...
    def calibrates_noise(self) -> bool: ...
    @property
    def ledgers(self) -> Planner: ...
    def parameters(self) -> Any: ...
    def state_dict(self) -> dict[str, torch.Tensor]: ...


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` as set now (huggingface_hub reads it at import only), else the default."""
    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE=1`` as set now, or as huggingface_hub read it at import."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return offline or bool(constants.HF_HUB_OFFLINE)


#: seconds :func:`hub_unreachable` waits for the hub (``DPGNN_HUB_TIMEOUT`` overrides)
HUB_TIMEOUT = 3.0


def hub_unreachable(endpoint: str | None = None, timeout: float | None = None) -> str | None:
    """Why the hub cannot be reached (``None``: it answers): offline mode, or no answer to one
    request within ``timeout`` seconds (``DPGNN_HUB_TIMEOUT``, default 3; no retries)."""
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    endpoint = endpoint or hub_endpoint()
    if timeout is None:
        timeout = float(os.environ.get("DPGNN_HUB_TIMEOUT", HUB_TIMEOUT))
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout)
    except urllib.error.HTTPError:
        return None  # an answer (401, 404, 405, ...): the hub is there
    except (OSError, ValueError) as err:  # URLError, timeouts, refused, bad URL
        reason = getattr(err, "reason", err)
        return f"{endpoint} did not answer within {timeout:g} s ({reason})"
    return None


# -- what may be published -------------------------------------------------------------------
_NOT_FITTED = (
    "its privacy report is missing: no recorded mechanism output is cached (the model "
    "was not fitted); fit it, or load a fitted checkpoint"
)
_NO_MECHANISM = "its privacy report is missing: no mechanism is recorded; fit it first"
_HALTED = (
    "its fit was halted before the end of its plan (PrivacyBudget stop or an interrupted "
    "fit): retrain it to completion"
)


def _reproducible(seed: Any) -> str:
    return (
        f"its noise is reproducible (noise_seed={seed!r}): the guarantee does not hold "
        "against anyone who knows the seed; retrain without noise_seed"
    )


def _over_budget(epsilon: float, target: float | None) -> str | None:
    if target is not None and math.isfinite(target) and epsilon > target * (1 + 1e-9):
        return f"it spent epsilon {epsilon:.6g}, over its target {target:g}"
    return None


def _planned_count(model: PublishableModel) -> int | None:
    """Mechanism invocations the model's plan calls for (``None``: it cannot plan)."""
    if not model.level.private:
        return None
    try:
        planned = model.ledgers.planned_accountant(model.noise_multiplier)
    except RuntimeError:
        return None
    return None if planned is None else planned.total_count()


def _refusals(
    *, outputs: dict[str, Any], private: bool, calibrates: bool, accountant: PrivacyAccountant,
    blockers: list[str], reproducible: bool, seed: Any, halted: bool, planned: int | None,
    budgets: dict[str, tuple[float, float | None]],
) -> list[str]:  # fmt: skip
    """The gate of a model and of a folder alike; ``budgets``: name -> (epsilon, target)."""
    reasons: list[str] = []
    if any(v is None for v in outputs.values()):
        reasons.append(_NOT_FITTED)
    elif private and calibrates and not any(e.count for e in accountant.ledger):
        reasons.append(_NO_MECHANISM)
    reasons.extend(blockers)  # a method's own (e.g. a paper-code mode)
    if reproducible or seed is not None:
        reasons.append(_reproducible(seed))
    if not private:
        return reasons  # non-private: published as such, the card says epsilon = inf
    if halted or (planned is not None and planned > accountant.total_count()):
        reasons.append(_HALTED)
    for name, (epsilon, target) in budgets.items():
        over = _over_budget(epsilon, target)
        if over:
            reasons.append(over if len(budgets) == 1 else f"{name}: {over}")
    return reasons


def publication_refusals(model: PublishableModel) -> list[str]:
    """Every reason ``model`` may not be published (empty: it may)."""
    spent = model.privacy_spent()
    guarantees = model.guarantees()  # the model's own first
    own = guarantees[0]
    if not any(True for _ in model.parameters()):
        return ["the model has no parameters yet: fit it (or load a fitted checkpoint) first"]
    return _refusals(
        outputs=model.mechanism_outputs(), private=own.level.private,
        calibrates=model.calibrates_noise(), accountant=own.accountant,
        blockers=model.publication_blockers(), reproducible=spent.reproducible_noise,
        seed=model.noise_seed, halted=model.privacy_halted,
        planned=_planned_count(model) if own.level.private else None,
        budgets={g.name: (spent.guarantees[g.name].epsilon, g.target) for g in guarantees},
    )


def _refuse(what: str, reasons: list[str]) -> None:
    if reasons:
        raise PublishError(f"refusing to publish {what}:\n  - " + "\n  - ".join(reasons))


def check_publishable(model: PublishableModel) -> None:
    """Raise :class:`PublishError` listing every reason ``model`` may not be published."""
    _refuse(f"this {type(model).__name__}", publication_refusals(model))


def folder_refusals(folder: str | Path) -> list[str]:
    """:func:`publication_refusals` of the published ``folder``, read from its own (verified)
    report and config (:class:`VerificationError` when it does not verify)."""
    folder = Path(folder)
    if not (folder / REPORT).is_file():
        return [f"its privacy report is missing: {folder} has no {REPORT}"]
    content, config = _verified(folder)
    if content.get("format") in OLD_FORMATS:
        return [
            f"its {REPORT} was written by an older lightning-dpgnn ({content['format']}): it "
            "does not hash itself nor record whether the fit completed; load it and save it "
            "again with save_pretrained (or rebuild it)"
        ]
    spent = report_from_dict(content["report"])
    own = next(iter(spent.guarantees.values()))  # the model's own guarantee
    gate = content["publication"]
    targets = {**gate.get("other_targets", {}), None: gate.get("target_epsilon")}
    return _refusals(
        outputs=_read_outputs(folder)["outputs"], private=own.level.private,
        calibrates=bool(gate.get("calibrates_noise")),
        accountant=PrivacyAccountant.from_state_dict(content["accountant"]), blockers=[],
        reproducible=spent.reproducible_noise, seed=config.get("noise_seed"),
        halted=bool(gate.get("halted")), planned=gate.get("planned_count"),
        budgets={n: (g.epsilon, targets.get(None if g is own else n))
                 for n, g in spent.guarantees.items()},
    )


def check_folder_publishable(folder: str | Path) -> None:
    """Raise :class:`PublishError` listing every reason ``folder`` may not be published."""
    _refuse(str(folder), folder_refusals(folder))


# -- nested state <-> safetensors ----------------------------------------------------------------
def _flatten(obj: Any, key: str, tensors: dict[str, torch.Tensor]) -> Any:
    """A JSON skeleton of ``obj`` whose tensors go to ``tensors``."""
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
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _class_path(cls: type) -> str:
    """``lightning_dpgnn.<Name>`` for the library's methods (their public import path)."""
    if cls.__name__ in lightning_dpgnn.__all__ and cls.__module__.startswith("lightning_dpgnn."):
        return f"lightning_dpgnn.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def model_config(model: PublishableModel) -> dict[str, Any]:
    """The ``__init__`` arguments that rebuild ``model`` as the fit left it, JSON-ready."""
    config = {}
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
def report_digest(content: dict[str, Any]) -> str:
    """``report_sha256`` of a report: the SHA-256 of the rest of its content as sorted JSON."""
    body = {k: v for k, v in content.items() if k != "report_sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def write_folder(model: PublishableModel, folder: Path) -> dict[str, Any]:
    """Write the files of ``model`` but its card into ``folder``; return the report's content."""
    check_publishable(model)
    folder.mkdir(parents=True, exist_ok=True)
    state = model.privacy_state()
    weights = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    save_file(weights, folder / WEIGHTS, metadata={"format": "pt"})
    tensors: dict[str, torch.Tensor] = {}
    skeleton = _flatten({"outputs": state["outputs"], "public": state["public"]}, "s", tensors)
    save_file(tensors, folder / OUTPUTS, metadata={"skeleton": json.dumps(skeleton)})
    (folder / CONFIG).write_text(json.dumps(model_config(model), sort_keys=True, indent=2))
    own, *others = model.guarantees()
    content: dict[str, Any] = {
        "format": FORMAT,
        "library": "lightning-dpgnn",
        "library_version": lightning_dpgnn.__version__,
        "method": _class_path(type(model)),
        "report": state["report"],
        "accountant": state["accountant"],
        # the accountants of the model's other guarantees (several guarantees, never added)
        "guarantees": state.get("guarantees", {}),
        "noise_multiplier": state["noise_multiplier"],
        # what the publishing gate reads again before any push (check_folder_publishable)
        "publication": {
            "halted": bool(model.privacy_halted),
            "planned_count": _planned_count(model),
            "target_epsilon": own.target,
            "calibrates_noise": bool(model.calibrates_noise()),
            "other_targets": {g.name: g.target for g in others if g.target is not None},
        },
        "sha256": {name: _sha256(folder / name) for name in HASHED},
    }
    audit = model.empirical_audit
    if audit:  # measured by attacks (PrivacyAudit), outside the guarantee
        content["empirical_audit"] = audit
    content = json.loads(json.dumps(content))  # as it reads back (tuples as lists)
    content["report_sha256"] = report_digest(content)
    (folder / REPORT).write_text(json.dumps(content, indent=2))
    return content


def read_report(folder: Path) -> dict[str, Any]:
    """The report file of a published folder, checked against its own SHA-256, the files it
    hashes, its accountant and the card (:class:`VerificationError` otherwise)."""
    path = folder / REPORT
    if not path.is_file():
        raise VerificationError(
            f"{folder} has no {REPORT}: its privacy guarantee is unknown, refusing to load it"
        )
    try:
        content = json.loads(path.read_text())
        report = report_from_dict(content["report"])
        accountant = PrivacyAccountant.from_state_dict(content["accountant"])
        others = {n: PrivacyAccountant.from_state_dict(s)
                  for n, s in content.get("guarantees", {}).items()}
        hashes = content["sha256"]
    except (KeyError, TypeError, ValueError) as err:
        raise VerificationError(f"{path} is not a lightning-dpgnn privacy report: {err}") from err
    fmt = content.get("format")
    if fmt in OLD_FORMATS:
        warnings.warn(
            f"{path} was written by an older lightning-dpgnn ({fmt}): the report does not hash "
            "itself, so an edit of it would go unnoticed; save the model again to upgrade it "
            "(it cannot be pushed as it is)",
            UserWarning,
            stacklevel=3,
        )
    elif fmt != FORMAT:
        raise VerificationError(f"{path}: unknown format {fmt!r}")
    elif content.get("report_sha256") != report_digest(content) or not isinstance(
        content.get("publication"), dict
    ):
        raise VerificationError(
            f"{path} does not match its own SHA-256 (report_sha256): the report was changed "
            "after it was written, so it does not state the guarantee the model was published "
            "with"
        )
    for name in HASHED:
        if not (folder / name).is_file():
            raise VerificationError(f"{folder} lacks {name}, which its report hashes")
        if _sha256(folder / name) != hashes.get(name):
            raise VerificationError(
                f"{folder / name} does not match the SHA-256 in {REPORT}: the file was changed "
                "after the report was written, so the report does not describe it"
            )
    recomputed = _recompute(report, accountant, others)
    if recomputed.to_dict() != report.to_dict():
        claimed = {n: g.epsilon for n, g in report.guarantees.items()}
        actual = {n: g.epsilon for n, g in recomputed.guarantees.items()}
        raise VerificationError(
            f"{path}: the report (epsilon {_one_or_all(claimed)}) disagrees with the "
            f"accountant it carries (epsilon {_one_or_all(actual)})"
        )
    _check_card(folder, report)
    return content


def _one_or_all(values: dict[str, Any]) -> Any:
    return next(iter(values.values())) if len(values) == 1 else values


def _recompute(
    report: Any, accountant: PrivacyAccountant, others: dict[str, PrivacyAccountant]
) -> Any:
    """The report the carried accountants give (several: the model's own first)."""
    own = next(iter(report.guarantees.values()))
    main = PrivacyReport.from_accountant(accountant, private=own.level.private)
    if len(report.guarantees) == 1 and not others:
        return main
    parts = [(next(iter(report.guarantees)), main)]
    parts += [(n, PrivacyReport.from_accountant(a)) for n, a in others.items()]
    try:
        return SeveralGuarantees(tuple(parts))
    except ValueError as err:
        raise VerificationError(
            f"the report's guarantees do not match its accountants: {err}"
        ) from err


def _check_card(folder: Path, report: Any) -> None:
    """The card's ``privacy`` metadata, if any, must state the report's guarantee and noise
    source (its prose may be edited)."""
    path = folder / CARD
    if not path.is_file():
        return
    stated = ModelCard.load(path).data.to_dict().get("privacy") or {}
    claims = {"reproducible_noise": report.reproducible_noise,
              "secure_randomness": report.secure_randomness}
    if len(report.guarantees) == 1:
        claims.update(_guarantee_claims(report, stated))
    else:
        listed = {g.get("name"): g for g in stated.get("guarantees") or []}
        for name, g in report.guarantees.items():
            part = listed.get(name, {})
            claims.update({f"{name}.{k}": v for k, v in _guarantee_claims(g, part).items()})
            stated.update({f"{name}.{k}": part.get(k) for k in _guarantee_claims(g, part)})
    wrong = [k for k, v in claims.items()
             if not (stated.get(k) == v or (isinstance(v, float) and isinstance(
                 stated.get(k), (int, float)) and math.isclose(stated[k], v, rel_tol=1e-5)))]
    if wrong:
        raise VerificationError(
            f"{path} states a guarantee other than {REPORT}'s ({', '.join(wrong)}: "
            f"{ {k: stated.get(k) for k in wrong} } vs {({k: claims[k] for k in wrong})})"
        )


def _guarantee_claims(g: PrivacyReport, stated: dict[str, Any]) -> dict[str, Any]:
    eps = None if math.isinf(g.epsilon) else g.epsilon
    return {"level": g.level, "unit": g.unit or stated.get("unit"), "delta": g.delta,
            "epsilon": eps}


def _verified(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The folder's verified report content and its config, checked against each other."""
    content = read_report(folder)
    config = json.loads((folder / CONFIG).read_text())
    report = content["report"]
    if "guarantees" in report:  # several: the model's own comes first
        parts = report["guarantees"]
        report = {**parts[0], "reproducible_noise": any(
            p.get("reproducible_noise", True) for p in parts)}
    level = config.get("privacy", "ldp" if Level.of(report["level"]) is Level.LDP else None)
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
    if config.get("noise_seed") is not None and not report.get("reproducible_noise", True):
        raise VerificationError(
            f"{folder}: {CONFIG} sets noise_seed={config['noise_seed']!r} but {REPORT} says the "
            "noise was not reproducible"
        )
    return content, config


def _read_outputs(folder: Path) -> dict[str, Any]:
    """``{"outputs": ..., "public": ...}`` of the folder's cached mechanism outputs."""
    with safe_open(folder / OUTPUTS, framework="pt") as f:
        skeleton = json.loads(f.metadata()["skeleton"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open API
    return _unflatten(skeleton, tensors)


def read_folder(cls: type, folder: Path, **overrides: Any) -> PublishableModel:
    """Build a ``cls`` (or the subclass of it the folder names) from a verified published
    folder; ``cls.legacy_hparams`` fills hyper-parameters older folders lack."""
    content, config = _verified(folder)
    method = content["method"]
    if _class_path(cls) != method and method.rsplit(".", 1)[-1] != cls.__name__:
        module, _, name = method.rpartition(".")
        if not module.startswith("lightning_dpgnn"):
            raise VerificationError(f"refusing to import {method!r}: not a lightning-dpgnn method")
        held = getattr(importlib.import_module(module), name)
        if not (isinstance(held, type) and issubclass(held, cls)):
            raise VerificationError(f"{folder} holds a {method}, not a {cls.__name__}")
        cls = held
    fixed = sorted(k for k, v in overrides.items() if k in config and config[k] != v)
    if fixed:
        raise ValueError(
            f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} fixed by the published "
            f"{CONFIG} (covered by its report); load the model as published"
        )
    for k, v in cls.legacy_hparams.items():
        config.setdefault(k, v)  # published before the hyper-parameter existed
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
    saved = _read_outputs(folder)
    model.load_privacy_state({
        "accountant": content["accountant"],
        "guarantees": content.get("guarantees", {}),
        "noise_multiplier": content["noise_multiplier"],
        "outputs": saved["outputs"],
        "public": saved["public"],
        "halted": bool((content.get("publication") or {}).get("halted", False)),
    })
    model.eval()
    return model


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
    """``repo_or_dir`` when it is a folder, else its hub cache folder (downloading what is
    missing); when the hub does not answer, a cache miss raises :class:`HubUnreachableError`."""
    path = Path(repo_or_dir)
    if path.is_dir():
        return path
    text = str(repo_or_dir)
    if path.is_absolute() or text.startswith((".", "~")) or text.count("/") > 1:
        raise FileNotFoundError(f"no published model folder at {text}")
    endpoint = hub_endpoint()
    down = None if local_files_only else hub_unreachable(endpoint)
    kw = dict(
        repo_id=text, revision=revision, cache_dir=cache_dir, token=token,
        force_download=force_download and down is None,
        local_files_only=local_files_only or down is not None, endpoint=endpoint,
    )
    try:
        report = Path(hf_hub_download(filename=REPORT, **kw))
        for name in (*HASHED, CARD):
            hf_hub_download(filename=name, **kw)
    except Exception as err:
        if down is not None and isinstance(err, LocalEntryNotFoundError):
            raise HubUnreachableError(
                f"{text} is not in the hub cache and the hub cannot be reached ({down})"
            ) from None
        raise
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
    """Upload ``folder`` to ``repo_id`` after :func:`check_folder_publishable`."""
    folder = Path(folder)
    check_folder_publishable(folder)  # never push a folder whose guarantee would not hold
    endpoint = hub_endpoint()
    down = hub_unreachable(endpoint)
    if down is not None:
        raise HubUnreachableError(f"cannot push {folder} to {repo_id}: {down}")
    api = HfApi(endpoint=endpoint, token=token)
    repo_id = api.create_repo(repo_id=repo_id, private=private, exist_ok=True).repo_id
    info = api.upload_folder(
        repo_id=repo_id, repo_type="model", folder_path=folder, revision=branch,
        commit_message=commit_message, allow_patterns=list(FILES),
    )
    return str(info)


def save_pretrained(
    model: PublishableModel, save_directory: str | Path, **kwargs: Any
) -> str | None:
    """Write ``model`` in the hub layout through ``ModelHubMixin.save_pretrained`` (its
    ``model_card_kwargs`` go to ``model_card``), after :func:`check_publishable`."""
    check_publishable(model)
    folder = Path(save_directory)
    (folder / CARD).unlink(missing_ok=True)  # the card describes these weights only
    return ModelHubMixin.save_pretrained(model, folder, config=model_config(model), **kwargs)


def push_to_hub(
    model: PublishableModel,
    repo_id: str,
    *,
    model_card_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> str:
    """Publish ``model`` to ``repo_id`` on the hub; return the commit URL. ``token``,
    ``private``, ``branch`` and ``commit_message`` go to :func:`push_folder`; the other
    arguments of ``ModelHubMixin.push_to_hub`` are ignored."""
    keep = {k: kwargs[k] for k in ("token", "private", "branch", "commit_message") if k in kwargs}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        save_pretrained(model, folder, model_card_kwargs=model_card_kwargs)
        return push_folder(folder, repo_id, **keep)


def from_pretrained(
    cls: type,
    pretrained_model_name_or_path: str | Path,
    *,
    force_download: bool = False,
    token: str | bool | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
    revision: str | None = None,
    **model_kwargs: Any,
) -> PublishableModel:
    """Load a verified published model from a local folder or a hub repository."""
    folder = resolve_folder(
        pretrained_model_name_or_path, revision=revision, cache_dir=cache_dir,
        force_download=force_download, token=token, local_files_only=local_files_only,
    )
    return read_folder(cls, folder, **model_kwargs)
