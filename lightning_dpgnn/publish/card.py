"""Model cards of published private models (:class:`huggingface_hub.ModelCard`): the guarantee,
what it does not cover, the data, accuracy, rebuild command and empirical audit, read from the
model's interface (``guarantees()``, ``describe()``), never from a method class."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

import lightning_dpgnn

if TYPE_CHECKING:  # pragma: no cover
    from .hub import PublishableModel

__all__ = ["MethodCard", "model_card", "card_privacy", "describe_audit"]

@dataclass(frozen=True)
class MethodCard:
    """What a model card says of a method (``PrivateModule.describe()``): method line, paper, notes
    replacing ledger entries' own, and the lines a new graph needs in the usage snippet."""

    method: str
    paper: str
    ledger_notes: dict[str, str] = field(default_factory=dict)
    new_graph: tuple[str, ...] = ()


_TEMPLATE = "---\n{{ card_data }}\n---\n\n{{ body }}\n"


def _ledger_lines(report: Any, notes: dict[str, str]) -> list[str]:
    """One line per ledger entry; ``notes`` (the method's) replace an entry's note."""
    lines = []
    for e in report.ledger:
        what = (
            f"epsilon={e.epsilon:g}" if e.kind == "pure"
            else f"noise_multiplier={e.noise_multiplier:.4g}, sensitivity={e.sensitivity:g}"
        )
        rate = f", sample_rate={e.sample_rate:.4g}" if e.sample_rate else ""
        note = notes.get(e.name, e.note)
        note = f"; {note}" if note else ""
        lines.append(f"  - `{e.name}: {e.kind} x{e.count} ({what}{rate}{note})`")
    return lines or ["  - (none)"]


def guarantee_meta(r: Any) -> dict[str, Any]:
    """One guarantee (a :class:`~lightning_dpgnn.privacy.PrivacyReport`) as YAML metadata."""
    return {
        "level": r.level.value,
        "unit": r.unit or ("" if r.level.private else "none"),
        "epsilon": None if math.isinf(r.epsilon) else round(float(r.epsilon), 6),
        "epsilon_is_infinite": math.isinf(r.epsilon),
        "delta": float(r.delta),
        "accountant": r.accountant,
    }


def card_privacy(model: PublishableModel) -> dict[str, Any]:
    """The guarantee as YAML metadata (several guarantees: each under ``guarantees``)."""
    r = model.privacy_spent()
    if len(r.guarantees) > 1:
        what = {"guarantees": [{"name": n, **guarantee_meta(g)} for n, g in r.guarantees.items()]}
    else:
        what = guarantee_meta(r)
    return {
        **what,
        "secure_randomness": r.secure_randomness,
        "reproducible_noise": r.reproducible_noise,
        "noise_multiplier": model.noise_multiplier,
    }


def _guarantee_lines(parts: dict[str, Any], notes: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for name, g in parts.items():
        indent = "" if len(parts) == 1 else "  "
        if len(parts) > 1:
            lines.append(f"- **{name}**:")
        eps = "∞ (not private)" if math.isinf(g.epsilon) else f"{g.epsilon:.4g}"
        lines += [
            f"{indent}- Level: **{g.level}**; protected unit: {g.unit or '—'}.",
            f"{indent}- epsilon = **{eps}**, delta = **{g.delta:.3g}**.",
            f"{indent}- Accountant and conversion: {g.accountant}.",
            f"{indent}- Mechanisms (ledger):",
            *(f"{indent}{line}" for line in _ledger_lines(g, notes)),
        ]
    return lines


def _protection_lines(guarantees: list[Any], degree_bound_source: str | None) -> list[str]:
    """What each guarantee protects and uses in the clear; where D comes from."""
    lines = []
    for g in guarantees:
        which = f" ({g.name})" if len(guarantees) > 1 else ""
        protects = " ".join((g.protects or g.unit, *g.conditions))
        lines += [f"**Protected{which}:** {protects}.  ", f"**Not protected{which}:** {g.public}."]
    if degree_bound_source:
        lines[-1] += "  "
        lines.append(f"**Degree bound D:** {degree_bound_source}.")
    return lines


def _accuracy_lines(accuracy: dict[str, Any] | None, measured: float | None) -> list[str]:
    lines = []
    if accuracy:
        ci = ""
        if accuracy.get("low") is not None and accuracy.get("high") is not None:
            ci = f" (95% CI {accuracy['low']}–{accuracy['high']})"
        seeds = f" over {accuracy['seeds']} seeds" if accuracy.get("seeds") else ""
        lines.append(
            f"- Expected test accuracy (benchmark): **{accuracy['mean']}%**{ci}{seeds}, "
            f"from `{accuracy.get('source', 'benchmarks/results')}`."
        )
        if accuracy.get("command"):
            lines.append(f"  Measured with: `{accuracy['command']}`")
    if measured is not None:
        lines.append(f"- This model's test accuracy (one run): {100 * measured:.1f}%.")
    if not lines:
        lines.append("- No accuracy recorded for this model.")
    lines.append(
        "- Accuracies are computed on the private test labels and are **not covered by "
        "epsilon**: they are released outside the guarantee."
    )
    return lines


def describe_audit(audit: dict[str, Any]) -> str:
    """The audit headline: ``epsilon = 8; measured MIA AUC 0.51 ± 0.01; ...``."""
    eps = "inf" if audit.get("epsilon") is None else f"{audit['epsilon']:.3g}"
    parts = [f"epsilon = {eps}"]
    for key, name in (("mia_auc", "MIA AUC"), ("link_auc", "link-stealing AUC")):
        if key in audit:
            half = (audit[f"{key}_high"] - audit[f"{key}_low"]) / 2
            parts.append(f"measured {name} {audit[key]:.2f} ± {half:.2f}")
    if "epsilon_lower" in audit:
        parts.append(
            f"DP-SGD audit: epsilon >= {audit['epsilon_lower']:.2f} (its ledger: "
            f"{audit['epsilon_audited']:.2f})"
        )
    if "aggregation_epsilon_lower" in audit:
        parts.append(
            f"aggregation audit: epsilon >= {audit['aggregation_epsilon_lower']:.2f} (its "
            f"ledger, one call: {audit['aggregation_epsilon_audited']:.2f})"
        )
    return "; ".join(parts)


def _audit_lines(audit: dict[str, Any] | None) -> list[str]:
    if not audit:
        return ["No empirical audit recorded (run `dpgnn audit` or the `PrivacyAudit` callback)."]
    lines = [f"**{describe_audit(audit)}**", ""]
    if "mia_auc" in audit:
        lines.append(
            f"- Node membership inference (TSTF shadow-model attack, {audit['mia_repeats']} "
            f"repeats): AUC {audit['mia_auc']:.3f} (95% CI {audit['mia_auc_low']:.3f}–"
            f"{audit['mia_auc_high']:.3f}); 0.5 is chance."
        )
    if "link_auc" in audit:
        lines.append(
            f"- Link stealing (posterior similarity): AUC {audit['link_auc']:.3f} (95% CI "
            f"{audit['link_auc_low']:.3f}–{audit['link_auc_high']:.3f}); 0.5 is chance."
        )
    if "epsilon_lower" in audit:
        lines.append(
            f"- DP-SGD audit ({audit['epsilon_mechanism']}, {audit['epsilon_trials']} gradient-"
            f"canary trials per hypothesis): empirical epsilon >= {audit['epsilon_lower']:.3f} "
            f"at 95% confidence, against {audit['epsilon_audited']:.3f} on its ledger."
        )
    if "aggregation_epsilon_lower" in audit:
        lines.append(
            f"- Aggregation audit ({audit['aggregation_epsilon_mechanism']} canaries, "
            f"{audit['aggregation_epsilon_trials']} trials per hypothesis, one call of the "
            f"model's Gaussian aggregation): empirical epsilon >= "
            f"{audit['aggregation_epsilon_lower']:.3f} at 95% confidence, against "
            f"{audit['aggregation_epsilon_audited']:.3f} on its ledger for that call."
        )
    lines.append(
        "- Attacks give evidence, not a guarantee: a low AUC bounds what these attacks "
        "achieve, epsilon bounds every attack. Their results are computed on the private data "
        "and are **not covered by epsilon**."
    )
    return lines


def model_card(
    model: PublishableModel,
    *,
    name: str | None = None,
    dataset: str | None = None,
    split: str | None = None,
    accuracy: dict[str, Any] | None = None,
    measured_accuracy: float | None = None,
    command: str | None = None,
    recipe: str | None = None,
    audit: dict[str, Any] | None = None,
    degree_bound_source: str | None = None,
    **_: Any,
) -> ModelCard:
    """The model card of ``model``: ``accuracy`` is the benchmark's (percent: ``mean``, ``low``,
    ``high``, ``seeds``, ``source``, ``command``), ``measured_accuracy`` its own (a fraction)."""
    method = type(model).__name__
    card = model.describe()
    privacy = card_privacy(model)
    report = model.privacy_spent()
    audit = audit if audit is not None else model.empirical_audit
    parts = report.guarantees
    noise = (
        "reproducible (explicit noise seed): NOT private against anyone who knows the seed"
        if report.reproducible_noise
        else "OS CSPRNG (secure mode)" if report.secure_randomness
        else "entropy-seeded generator (not replayable)" if report.secure_randomness is False
        else "no noise was drawn"
    )
    data = ModelCardData(
        library_name="lightning-dpgnn",
        license="apache-2.0",
        tags=sorted({"differential-privacy", "graph-neural-network", "lightning-dpgnn",
                     method.lower(), *(f"{g.level}-level-privacy" for g in parts.values())}),
        datasets=[dataset] if dataset else None,
        metrics=["accuracy"],
        model_name=name or method,
        eval_results=[
            EvalResult(
                task_type="node-classification", dataset_type=dataset, dataset_name=dataset,
                metric_type="accuracy", metric_value=float(accuracy["mean"]),
                dataset_split=split or "test",
            )
        ] if accuracy and dataset else None,
        privacy=privacy,
        method=method,
        paper=card.paper,
        library_version=lightning_dpgnn.__version__,
        rebuild_command=command,
        measured_test_accuracy=None if measured_accuracy is None else float(measured_accuracy),
        empirical_audit=audit or None,
    )
    rebuild = command or (f"dpgnn fit --config zoo/recipes/{recipe}.yaml" if recipe else None)
    body = "\n".join([
        f"# {name or method}",
        "",
        f"**Method:** {card.method}.  ",
        f"**Paper:** {card.paper}.  ",
        f"**Library:** lightning-dpgnn {lightning_dpgnn.__version__}.",
        "",
        "## Privacy guarantee" if len(parts) == 1 else
        f"## Privacy guarantees ({len(parts)}, over different units: never added)",
        "",
        *_guarantee_lines(parts, card.ledger_notes),
        f"- Noise: {noise}.",
        "",
        *_protection_lines(model.guarantees(), degree_bound_source),
        "",
        "Everything released here (weights, cached noisy aggregates or locally private "
        "messages, this card's epsilon) is covered by the guarantee above; the accuracy and "
        "the audit results below are computed on private data and are **not covered by "
        "epsilon**. The full report, with the SHA-256 of the weights, config and cached "
        "outputs and of itself, is `privacy_report.json`.",
        "",
        "## Data",
        "",
        f"- Dataset: {dataset or 'not recorded'}.",
        f"- Split: {split or 'not recorded'}.",
        "",
        "## Accuracy",
        "",
        *_accuracy_lines(accuracy, measured_accuracy),
        "",
        "## Use",
        "",
        "```python",
        f"from lightning_dpgnn import {method}",
        f"model = {method}.from_pretrained(\"<repo id or folder>\")",
        "probs = model.predict_step(data, 0)   # data: the training graph (transductive: "
        "cached outputs, no new spend)",
        "# a new graph (inductive inference): the mechanisms run on it, with fresh noise",
        "new_graph.inductive = True",
        *card.new_graph,
        "probs = model.predict_step(new_graph, 0)",
        "print(model.last_inference_report)   # the new graph's own spend",
        "```",
        "",
        "## Rebuild",
        "",
        f"`{rebuild}`" if rebuild else "No rebuild command recorded.",
        "",
        "## Empirical audit",
        "",
        *_audit_lines(audit),
    ])
    return ModelCard.from_template(data, template_str=_TEMPLATE, body=body)
