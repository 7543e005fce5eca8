"""Non-private staged fits run under DDP on CPU (2 processes, gloo); private fits refuse it.

The script runs in a subprocess: Lightning's DDP launcher starts rank 1 by re-running it."""

import json
import subprocess
import sys

import pytest

SCRIPT = r'''
import json, sys, warnings
warnings.filterwarnings("ignore")
import lightning as L
import torch
from lightning_dpgnn import GAP, MLP, ProGAP
from lightning_dpgnn.data import NodeDataModule

def trainer():
    return L.Trainer(strategy="ddp", devices=2, accelerator="cpu", logger=False,
                     enable_checkpointing=False, enable_model_summary=False,
                     enable_progress_bar=True, default_root_dir=sys.argv[1])

out = {}
models = {
    "GAP": GAP(privacy="none", encoder_epochs=2, classifier_epochs=2, hops=1),
    "ProGAP": ProGAP(privacy="none", depth=1, epochs_per_stage=2),
    "MLP": MLP(privacy="none", epochs=2),
}
for name, model in models.items():
    t = trainer()
    t.fit(model, NodeDataModule("csbm", seed=0))
    acc = t.test(model, NodeDataModule("csbm", seed=0), verbose=False)[0]["test/acc"]
    params = float(sum(p.double().sum() for p in model.parameters()))
    out[name] = {"epochs": t.current_epoch, "acc": acc, "params": params}
try:
    trainer().fit(GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1),
                  NodeDataModule("csbm", seed=0))
    out["private"] = "ran"
except NotImplementedError as err:
    out["private"] = str(err)
with open(f"{sys.argv[1]}/result-{t.global_rank}.json", "w") as fh:  # ranks share stdout
    json.dump(out, fh)
'''


@pytest.mark.slow
def test_non_private_staged_fits_run_on_two_cpu_processes(tmp_path):
    script = tmp_path / "fit_ddp.py"
    script.write_text(SCRIPT)
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    results = {
        rank: json.loads((tmp_path / f"result-{rank}.json").read_text())
        for rank in (0, 1) if (tmp_path / f"result-{rank}.json").is_file()
    }
    assert set(results) == {0, 1}, run.stdout[-2000:] + run.stderr[-4000:]
    for name, epochs in (("GAP", 4), ("ProGAP", 4), ("MLP", 2)):
        r0, r1 = results[0][name], results[1][name]
        assert r0["epochs"] == r1["epochs"] == epochs
        assert r0["params"] == r1["params"]  # DDP kept the replicas in sync
        assert r0["acc"] == r1["acc"] and 0 < r0["acc"] <= 1
    for rank in (0, 1):
        assert "private training on 2 processes is not supported" in results[rank]["private"]
    assert "Traceback" not in run.stderr
