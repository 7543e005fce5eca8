"""Peak resident memory of each rank during the fit alone, after the data is loaded.

``benchmarks/ddp.py --memory`` adds :class:`FitMemory` to the fits it measures
(``--trainer.callbacks+=fit_memory.FitMemory`` with this folder on ``PYTHONPATH``): at these
graph sizes the peak of a whole ``dpgnn fit`` is reached while the data module loads the graph,
which every rank does, so the stages that sharding changes need their own high-water mark.
Linux only (``/proc/self/clear_refs``, ``VmHWM``).
"""
import json
from pathlib import Path

import lightning as L


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class FitMemory(L.Callback):
    """Resets the kernel's high-water mark of this process when the fit starts (``5`` into
    ``/proc/self/clear_refs``) and writes ``fit-memory-<rank>.json``: the resident memory at
    the start (MiB) and the peak during each stage (the high-water mark between two epoch
    starts, attributed to the stage of the epoch that ends the interval)."""

    def on_fit_start(self, trainer, pl_module):
        Path("/proc/self/clear_refs").write_text("5")
        self.start = _status("VmRSS") / 1024
        self.peaks = {}
        self.stage = None

    def _close(self, stage):
        peak = _status("VmHWM") / 1024
        self.peaks[stage] = max(self.peaks.get(stage, 0.0), peak)
        Path("/proc/self/clear_refs").write_text("5")

    @staticmethod
    def _stage(pl_module):
        staged = getattr(pl_module, "staged", None)
        return 0 if staged is None else staged.current_stage

    def on_train_epoch_start(self, trainer, pl_module):  # noqa: D102
        stage = self._stage(pl_module)
        if self.stage is not None:
            self._close(self.stage)
        self.stage = stage

    def on_train_epoch_end(self, trainer, pl_module):
        self._close(self._stage(pl_module))

    def on_fit_end(self, trainer, pl_module):
        self._close("end")
        out = {"start_mib": self.start, "stage_peak_mib": self.peaks}
        Path(f"fit-memory-{trainer.global_rank}.json").write_text(json.dumps(out))
