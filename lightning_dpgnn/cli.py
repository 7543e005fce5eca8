"""``dpgnn``: a LightningCLI over the methods and DataModules.

``dpgnn fit`` with no arguments trains the default model on the embedded synthetic graph
(``NodeDataModule("csbm")``, generated in code) and prints test accuracy and the privacy spent.
``dpgnn fit --config zoo/recipes/<name>.yaml`` runs a recipe.
"""

from __future__ import annotations

import math
import os
import sys
from argparse import ArgumentError

import lightning as L
from lightning.pytorch.cli import LightningCLI

DEFAULT_MODEL = "lightning_dpgnn.GAP"
DEFAULT_DATA = "lightning_dpgnn.data.NodeDataModule"


class DPGNNCLI(LightningCLI):
    """LightningCLI that evaluates on the test split after ``fit`` and prints the guarantee."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.set_defaults(
            {
                "model": {"class_path": DEFAULT_MODEL},
                "data": {"class_path": DEFAULT_DATA},
                "trainer.max_epochs": 100,
                "trainer.enable_model_summary": False,
                "trainer.logger": False,
                "trainer.enable_checkpointing": False,
            }
        )

    def after_fit(self) -> None:
        results = self.trainer.test(self.model, datamodule=self.datamodule, verbose=False)
        acc = results[0].get("test/acc") if results else None
        report = self.model.privacy_spent() if hasattr(self.model, "privacy_spent") else None
        lines = []
        if acc is not None:
            lines.append(f"test accuracy: {acc:.4f}")
        if report is not None:
            eps = "inf (non-private)" if math.isinf(report.epsilon) else f"{report.epsilon:.4g}"
            lines.append(f"epsilon spent: {eps}" + (f" (delta={report.delta:.3g}, {report.level}"
                                                    "-level)" if report.delta else ""))
            if report.unit:
                lines.append(f"protects: {report.unit}")
            if report.reproducible_noise:
                lines.append("reproducible noise: not private against anyone who knows the seed")
        if self.trainer.is_global_zero:
            print("\n".join(lines), flush=True)


def _user_message(err: BaseException) -> str:
    """The sentence a user needs from a configuration or privacy error: jsonargparse wraps
    our errors in a list (``Errors: - ...``) followed by noise about other type options."""
    text = str(err).strip()
    if "Errors:" not in text:
        return text
    lines = text.splitlines()
    for i, line in enumerate(lines):
        item = line.strip()
        if not item.startswith("- ") or "Expected a <class" in item:
            continue
        indent = len(line) - len(line.lstrip())
        parts = [item[2:]]
        for more in lines[i + 1 :]:  # the item's own, more indented, continuation lines
            if len(more) - len(more.lstrip()) <= indent:
                break
            parts.append(more.strip())
        return " ".join(parts)
    return text


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``dpgnn`` command (``args`` defaults to ``sys.argv[1:]``).

    A bad argument, an unknown dataset or a fit the privacy checks refuse ends with one
    ``error: ...`` message on stderr and exit status 2; ``--debug`` (or ``DPGNN_DEBUG=1``)
    shows the full traceback instead."""
    given = list(sys.argv[1:] if args is None else args)
    if given[:1] == ["zoo"]:  # the model zoo's own subcommands (lightning_dpgnn.zoo.cli)
        from lightning_dpgnn.zoo.cli import main as zoo_main

        return zoo_main(given[1:])
    debug = "--debug" in given or os.environ.get("DPGNN_DEBUG", "") not in ("", "0")
    if args is None:  # from the command line: LightningCLI reads sys.argv itself
        sys.argv = [sys.argv[0], *(a for a in given if a != "--debug")]
    else:
        args = [a for a in given if a != "--debug"]
    try:
        DPGNNCLI(
            L.LightningModule,
            L.LightningDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            seed_everything_default=0,
            save_config_callback=None,  # no logger by default: no config.yaml in the cwd
            args=args,
            auto_configure_optimizers=False,
            parser_kwargs={"exit_on_error": False},
        )
    except (ValueError, TypeError, KeyError, ArgumentError) as err:
        if debug:
            raise
        print(f"error: {_user_message(err)}", file=sys.stderr)
        print("(run with --debug or DPGNN_DEBUG=1 for the traceback)", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
