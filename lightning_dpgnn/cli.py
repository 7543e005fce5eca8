"""``dpgnn``: a LightningCLI over the methods and DataModules.

``dpgnn fit`` with no arguments trains the default model on the embedded synthetic graph
(``NodeDataModule("csbm")``, generated in code) and prints test accuracy and the privacy spent.
``dpgnn fit --config zoo/recipes/<name>.yaml`` runs a recipe.
"""

from __future__ import annotations

import math
import sys

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


def main(args: list[str] | None = None) -> None:
    """Entry point of the ``dpgnn`` command (``args`` defaults to ``sys.argv[1:]``)."""
    DPGNNCLI(
        L.LightningModule,
        L.LightningDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        seed_everything_default=0,
        save_config_callback=None,  # no logger by default: it would litter the cwd with config.yaml
        args=args,
        auto_configure_optimizers=False,
    )


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
