"""The ``dpgnn`` LightningCLI and the zoo recipes."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
import yaml

from lightning_dpgnn import zoo
from lightning_dpgnn.cli import PREDICTIONS_FILE, RUN_FILE, main

QUIET = ["--trainer.enable_progress_bar=false"]


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
    """The CLI writes checkpoints and run files under the working directory by default."""
    monkeypatch.chdir(tmp_path)


def _quick(*argv: str) -> subprocess.CompletedProcess:
    code = (
        "import sys; from lightning_dpgnn.cli import main; main(sys.argv[1:]); "
        "heavy = [m for m in ('lightning', 'torch_geometric', 'torch') if m in sys.modules]; "
        "print('HEAVY', heavy)"
    )
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)


def test_help_lists_every_command_without_importing_lightning_pyg_or_torch():
    run = _quick("--help")
    assert run.returncode == 0
    for sub in ("fit", "validate", "test", "predict", "audit", "plot", "zoo"):
        assert f"\n  {sub} " in run.stdout
    assert "HEAVY []" in run.stdout


def test_zoo_list_imports_neither_lightning_nor_pyg_nor_torch():
    run = _quick("zoo", "list")
    assert run.returncode == 0 and "gap-edge-rutgers89-eps4" in run.stdout
    assert "HEAVY []" in run.stdout


def test_plot_help_prints_one_percent_sign():
    run = _quick("plot", "--help")
    assert "(95% CI" in run.stdout and "%%" not in run.stdout


def test_audit_help_shows_the_audit_options_and_then_fits(capsys):
    with pytest.raises(SystemExit) as e:
        main(["audit", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for option in ("--audit_repeats", "--audit_epsilon_trials", "--audit_aggregation_trials",
                   "--audit_no_links", "--audit_no_membership", "--trainer"):
        assert option in out


@pytest.mark.parametrize("argv,message", [
    (["test"], "dpgnn test evaluates a fitted model: give --ckpt_path"),
    (["predict"], "dpgnn predict evaluates a fitted model: give --ckpt_path"),
    (["test", "--ckpt_path", "missing.ckpt"], "--ckpt_path missing.ckpt: no such checkpoint"),
    (["predict", "--ckpt_path=missing.ckpt"], "--ckpt_path missing.ckpt: no such checkpoint"),
    (["nosuch"], "unknown command 'nosuch'"),
])
def test_a_missing_checkpoint_is_one_error_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message}" in err and "Traceback" not in err


@pytest.mark.parametrize("config,hint", [
    ({"model": {"class_path": "lightning_dpgnn.GAP", "init_args": {"epsilonn": 2.0}}},
     "did you mean 'epsilon'?"),
    ({"trainer": {"max_epochz": 3}}, "did you mean 'max_epochs'?"),
    ({"data": {"init_args": {"nme": "cora"}}}, "did you mean 'name'?"),
    ({"modell": {"x": 1}}, "did you mean 'model'?"),
])
def test_a_typo_in_a_config_gets_a_suggestion(config, hint, tmp_path, capsys):
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(SystemExit):
        main(["fit", "--config", str(path)])
    assert hint in capsys.readouterr().err


def test_fit_without_arguments_trains_gap_on_the_embedded_graph_and_prints_epsilon(
    capsys, recwarn
):
    main(
        [
            "fit",
            "--trainer.enable_progress_bar=false",
            "--model.encoder_epochs=20",
            "--model.classifier_epochs=20",
        ]
    )
    out = capsys.readouterr().out
    acc, eps = (_number(out, key) for key in ("test accuracy", "epsilon spent"))
    assert acc > 0.3  # 5 balanced classes: chance is 0.2
    assert 0.99 <= eps <= 1.0  # GAP's default budget, edge level
    assert "edge-level" in out
    # the CLI's default max_epochs is not the user's: no line says a Trainer length applies
    assert not [w for w in recwarn if "max_epochs" in str(w.message)]


def test_bad_argument_is_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--model.privacy=graph"])
    assert "privacy" in capsys.readouterr().err


@pytest.mark.parametrize("name", zoo.recipes())
def test_every_recipe_parses_into_the_model_and_data_it_names(name, capsys):
    assert len(zoo.recipes()) >= 15
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", "--config", str(zoo.recipe_path(name)), "--print_config"])
    assert exit_info.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)
    source = yaml.safe_load(zoo.recipe_path(name).read_text())
    assert printed["model"]["class_path"] == source["model"]["class_path"]
    for key, value in source["model"]["init_args"].items():
        assert printed["model"]["init_args"][key] == value
    assert printed["data"]["init_args"]["name"] == source["data"]["init_args"]["name"]


@pytest.mark.parametrize(
    "recipe,short,level,budget",
    [
        ("gap-node-rutgers89", ["--data.classes=null", "--data.dataset_kwargs={}",
                                "--model.encoder_epochs=1", "--model.classifier_epochs=1",
                                "--model.max_degree=21"], "node", 8.0),
        # ProGAP: all its stages in one fit
        ("progap-edge-facebook", ["--model.epochs_per_stage=2"], "edge", 1.0),
    ],
)
def test_a_recipe_runs_end_to_end_on_the_embedded_graph(recipe, short, level, budget, capsys):
    on_csbm = ["--data.name=csbm", "--data.target=null", "--data.min_class_size=null"]
    main(["fit", "--config", str(zoo.recipe_path(recipe)), *on_csbm, *short, *QUIET])
    out = capsys.readouterr().out
    assert f"{level}-level" in out and _number(out, "epsilon spent") <= budget


def test_unknown_recipe_lists_the_known_ones():
    with pytest.raises(ValueError, match="gap-edge-rutgers89"):
        zoo.recipe_path("nope")


def _private_recipes() -> list[str]:
    return [n for n in zoo.recipes() if "-inf-" not in n and not n.startswith("mlp-")]


@pytest.mark.parametrize("name", _private_recipes())
def test_every_private_recipe_passes_the_pre_fit_privacy_checks_on_its_dataset(name):
    """What a user runs must not be refused: no private read in preprocessing, classes public
    where labels are protected, and at node level a degree bound the real graph keeps."""
    from lightning_dpgnn.cli import DPGNNCLI
    from lightning_dpgnn.privacy import check_degree_promise

    cli = DPGNNCLI(
        L.LightningModule, L.LightningDataModule, subclass_mode_model=True,
        subclass_mode_data=True, run=False, save_config_callback=None,
        auto_configure_optimizers=False, args=["--config", str(zoo.recipe_path(name))],
    )
    model, dm = cli.model, cli.datamodule
    assert dm.private_reads(model.privacy) == []
    if model.labels_private():
        assert dm.public_num_classes, "labels are protected: the recipe must declare classes"
    if model.privacy == "node" and "max_degree" in model.hparams:
        check_degree_promise(dm.data.edge_index, dm.data.num_nodes, model.hparams.max_degree, name)


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["--data.init_args.name", "nosuchdata"], "unknown dataset 'nosuchdata'"),
        (["--model.init_args.epsilon", "0"], "epsilon must be > 0"),
        (["--model.init_args.epsilon", "-1"], "epsilon must be > 0"),
        (["--model.init_args.hops", "0"], "hops must be an integer >= 1"),
        (["--model.init_args.delta", "1.5"], "delta must be in the open interval"),
        (["--model.privacy=graph"], "privacy"),
        (["--model=lightning_dpgnn.SAGE", "--model.hidden=0"], "hidden must be an integer >= 1"),
        (["--model=lightning_dpgnn.PGC", "--model.x_epsilon=-1"], "x_epsilon must be > 0"),
        (["--model=lightning_dpgnn.PGC", "--model.epsilon=1"], "'epsilon' is not accepted"),
    ],
)
def test_bad_input_ends_with_one_error_line_and_exit_2(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", *argv])
    assert exit_info.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[0].startswith("error: ") and expected in err[0]
    assert len(err) <= 3 and "Traceback" not in "\n".join(err)


def test_bad_input_in_a_shell_prints_the_error_first(tmp_path):
    """As a user's terminal shows it (Lightning's own log lines included, which ``capsys``
    does not see): the first line on stderr is the error, and the exit status is 2. One
    process runs the issue's inputs in turn (one interpreter start, not four)."""
    cases = [["--data.init_args.name", "nosuchdata"], ["--model.init_args.epsilon", "0"],
             ["--model.init_args.epsilon", "-1"], ["--model.init_args.hops", "0"]]
    script = (
        "import sys\nfrom lightning_dpgnn.cli import main\n"
        f"for argv in {cases!r}:\n"
        "    try:\n        main(['fit', *argv])\n"
        "    except SystemExit as e:\n        print(f'--- exit {e.code}', file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    sections = run.stderr.split("--- exit ")
    assert len(sections) == len(cases) + 1, run.stderr
    for before, after in zip(sections[:-1], sections[1:], strict=True):
        assert after.startswith("2\n"), run.stderr
        lines = [line for line in before.splitlines() if line.strip()]
        if before is not sections[0]:
            lines = lines[1:]  # the previous exit status
        assert lines[0].startswith("error: "), run.stderr
    assert "unknown dataset 'nosuchdata'" in sections[0] and "hops must be" in sections[3]


def test_missing_or_damaged_data_ends_with_an_error_naming_the_file(
    tmp_path, monkeypatch, capsys
):
    """A raw file cut in the middle of a line, and raw files that are not there: one
    ``error:`` message naming the file, exit 2, and nothing written to the processed cache."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    monkeypatch.setenv("DPGNN_CACHE", str(cache))
    twitch = root / "musae/twitch_en"
    shutil.copytree(Path(os.environ["DPGNN_DATA"]) / "musae/twitch_en", twitch)
    lines = (twitch / "edges.csv").read_text().splitlines()
    (twitch / "edges.csv").write_text("\n".join(lines[:100]) + "\n2134,")
    cases = [
        ("twitch", f"error: {twitch / 'edges.csv'}, line 101: cannot read this file"),
        ("cora", "error: raw files of dataset 'cora' not found"),
    ]
    for name, expected in cases:
        with pytest.raises(SystemExit) as exit_info:
            main(["fit", *QUIET, f"--data.name={name}", f"--data.root={root}"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(expected) and "Traceback" not in err
    assert not [p for p in cache.rglob("*") if p.is_file() and "processed" in p.parts]


def test_debug_shows_the_traceback(monkeypatch):
    with pytest.raises(ValueError, match="unknown dataset"):
        main(["fit", "--data.init_args.name", "nosuchdata", "--debug"])
    monkeypatch.setenv("DPGNN_DEBUG", "1")  # the same, from the environment
    with pytest.raises(ValueError, match="hops must be an integer >= 1"):
        main(["fit", "--model.init_args.hops", "0"])


def _number(out: str, key: str) -> float:
    """The number after ``key:`` in the CLI's output."""
    return float(out.split(f"{key}:")[1].split()[0])


def _summary(out: str) -> dict[str, str]:
    """The ``key: value`` lines of the fit summary."""
    keys = ("test accuracy", "test AUC", "epsilon spent", "delta", "level", "protects")
    return {
        k: line.split(": ", 1)[1] for line in out.splitlines() for k in keys
        if line.startswith(k + ": ")
    }


def test_fit_keeps_a_checkpoint_that_test_and_predict_read_back(tmp_path, capsys):
    main(["fit", *QUIET, "--model.epsilon=4", "--model.hops=3", "--model.encoder_epochs=2",
          "--model.classifier_epochs=2", "--trainer.default_root_dir=run"])
    fitted = _summary(capsys.readouterr().out)
    ckpt = tmp_path / "run/checkpoints/last.ckpt"
    assert ckpt.is_file()
    state = torch.load(ckpt, weights_only=True)
    assert state["dpgnn_privacy"]["report"]["epsilon"] == pytest.approx(4, rel=1e-3)
    # recorded absolute (dpgnn plot counts a checkpoint once, wherever its run files are)
    assert json.loads((tmp_path / "run" / RUN_FILE).read_text())["checkpoint"] == str(
        ckpt.resolve()
    )

    # hyper-parameters (epsilon 4, hops 3) come back from the checkpoint itself
    main(["test", *QUIET, f"--ckpt_path={ckpt}", "--trainer.default_root_dir=again"])
    tested = _summary(capsys.readouterr().out)
    assert tested == fitted and float(tested["epsilon spent"]) == pytest.approx(4, rel=1e-3)

    main(["predict", *QUIET, f"--ckpt_path={ckpt}", "--trainer.default_root_dir=again"])
    out = capsys.readouterr().out
    path = tmp_path / "again" / PREDICTIONS_FILE
    assert f"predictions (2000 rows): {path.relative_to(tmp_path)}" in out
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 2000 and rows[0].keys() == {"node_id", "class", *(
        f"prob_{k}" for k in range(5))}
    assert sorted(int(r["node_id"]) for r in rows) == list(range(2000))
    for r in rows[:50]:
        probs = [float(r[f"prob_{k}"]) for k in range(5)]
        assert sum(probs) == pytest.approx(1, abs=1e-4)
        assert int(r["class"]) == probs.index(max(probs))


def test_run_bookkeeping_one_checkpoint_one_record_per_model(tmp_path, capsys):
    short = [*QUIET, "--model.encoder_epochs=1", "--model.classifier_epochs=1"]
    main(["fit", *short, "--trainer.default_root_dir=runs/a"])
    ckpt = (tmp_path / "runs/a/checkpoints/last.ckpt").resolve()
    assert f"checkpoint: {ckpt}" in capsys.readouterr().out  # the summary names it
    # a second fit in the same root replaces last.ckpt (no last-v1.ckpt): the documented
    # `--ckpt_path runs/a/checkpoints/last.ckpt` then tests the newest model
    main(["fit", *short, "--model.epsilon=4", "--trainer.default_root_dir=runs/a"])
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "runs/a/checkpoints").iterdir()) == ["last.ckpt"]
    main(["test", *QUIET, "--ckpt_path=runs/a/checkpoints/last.ckpt"])
    tested = _summary(capsys.readouterr().out)
    assert float(tested["epsilon spent"]) == pytest.approx(4, rel=1e-3)
    # test rewrote the run's own record (not a second one in the cwd), naming the checkpoint
    assert not (tmp_path / RUN_FILE).exists()
    record = json.loads((tmp_path / "runs/a" / RUN_FILE).read_text())
    assert record["checkpoint"] == str(ckpt) and record["command"] == "test"
    # a test written elsewhere names the same checkpoint: plot counts the model once
    main(["test", *QUIET, "--ckpt_path=runs/a/checkpoints/last.ckpt",
          "--trainer.default_root_dir=runs/elsewhere"])
    from lightning_dpgnn.plotting import load_runs

    assert len(load_runs(tmp_path / "runs")) == 1
    # predict writes next to the checkpoint's run, not into the cwd
    main(["predict", *QUIET, "--ckpt_path=runs/a/checkpoints/last.ckpt"])
    assert (tmp_path / "runs/a" / PREDICTIONS_FILE).is_file()
    assert not (tmp_path / PREDICTIONS_FILE).exists()


def test_the_summary_has_a_reference_point_and_n_delta_and_no_lightning_noise():
    # a fresh process: pytest captures warnings and log records, a user's terminal does not
    run = subprocess.run(
        [sys.executable, "-m", "lightning_dpgnn.cli", "fit", "--model.encoder_epochs=1",
         "--model.classifier_epochs=1", "--trainer.default_root_dir=run"],
        capture_output=True, text=True,
    )
    out, err = run.stdout, run.stderr
    assert run.returncode == 0, err
    acc_line = next(line for line in out.splitlines() if line.startswith("test accuracy: "))
    assert "(majority class: 0.2" in acc_line  # csbm: 5 balanced classes
    assert "not covered by epsilon" in out
    assert "delta: 1e-06 (n*delta = 0.00989 over n = 9,891 protected units)" in out
    for noise in ("Tip:", "TPU available", "GPU available: False", "LeafSpec",
                  "logging interval", "does not have many workers"):
        assert noise not in out + err, noise


def test_checkpointing_can_be_turned_off(tmp_path):
    main(["fit", *QUIET, "--model.encoder_epochs=1", "--model.classifier_epochs=1",
          "--trainer.enable_checkpointing=false"])
    assert not (tmp_path / "checkpoints").exists() and (tmp_path / RUN_FILE).is_file()


@pytest.mark.parametrize(
    "model,args,epsilon,level",
    [
        ("GAP", ["--model.encoder_epochs=1", "--model.classifier_epochs=1"], 1.0, "edge"),
        ("ProGAP", ["--model.epochs_per_stage=1", "--model.depth=1"], 1.0, "edge"),
        ("GAP", ["--model.encoder_epochs=1", "--model.classifier_epochs=1",
                 "--model.epsilon", "inf"], "inf (non-private)", "none"),  # math.inf: no privacy
        ("DPMLP", ["--model.epochs=1"], None, "node"),
        ("MLP", ["--model.epochs=1"], "0", "edge"),  # reads no edge: epsilon 0 at edge level
        ("MLP", ["--model.epochs=1", "--model.privacy=none"], "inf (non-private)", "none"),
        ("GNN", ["--trainer.max_epochs=1"], "inf (non-private)", "none"),
        ("SAGE", ["--model.epochs=1"], "inf (non-private)", "none"),
        ("EdgeRand", ["--model.epochs=1"], "1 ", "edge"),
        ("DPGNN", ["--model.epochs=1", "--model.max_degree=21"], 8.0, "node"),
        ("LPGNN", ["--trainer.max_epochs=1"],
         "2 per node = multibit 1 (MultiBit feature LDP) + randomized_response 1", "ldp"),
        ("PGC", ["--trainer.max_epochs=1", "--model.x_epsilon=0.5"],
         "32 per node = onebit 32 (OneBit feature LDP, epsilon 0.5 per feature x 64 features = "
         "32 per node)", "ldp"),
        ("PGCLinkPrediction", ["--trainer.max_epochs=1", "--model.x_epsilon=0.5"],
         "32 per node = onebit 32 (OneBit feature LDP", "ldp"),  # link prediction: test AUC
    ],
)
def test_every_method_ends_with_the_same_summary(model, args, epsilon, level, tmp_path, capsys):
    main(["fit", *QUIET, f"--model=lightning_dpgnn.{model}", *args])
    summary = _summary(capsys.readouterr().out)
    metric, key = ("AUC", "auc") if model == "PGCLinkPrediction" else ("accuracy", "acc")
    assert set(summary) >= {f"test {metric}", "epsilon spent", "delta", "level"}
    assert 0 <= float(summary[f"test {metric}"].split()[0]) <= 1
    assert summary["level"].split()[0] == level
    if isinstance(epsilon, float):  # calibrated: within 0.1% below the target
        assert float(summary["epsilon spent"]) == pytest.approx(epsilon, rel=1e-3)
    elif epsilon is not None:
        assert summary["epsilon spent"].startswith(epsilon)
    record = json.loads((tmp_path / RUN_FILE).read_text())
    assert record["method"] == model and record["dataset"] == "csbm"
    assert record["metrics"][f"test/{key}"] == pytest.approx(
        float(summary[f"test {metric}"].split()[0]), 1e-3
    )
    if level == "none":
        assert summary["delta"] == "n/a" and "protects" not in summary
    else:
        assert summary["protects"] and float(summary["delta"].split()[0]) >= 0
        assert record["privacy"]["level"] == level


def _printed_model(args, capsys) -> dict:
    with pytest.raises(SystemExit) as exit_:
        main(["fit", *args, "--print_config"])
    assert exit_.value.code in (0, None)
    return yaml.safe_load(capsys.readouterr().out)["model"]


def test_a_named_model_gets_its_own_defaults_not_the_default_models(capsys):
    """jsonargparse carries a default class's arguments over to the class a recipe names: the
    CLI names GAP only when the command names no model, so PGC keeps its hidden=32 and
    DP-MLP its normalization."""
    recipe = str(zoo.recipe_path("pgc-cora"))
    pgc = _printed_model(["--config", recipe], capsys)
    assert pgc["class_path"].endswith("PGC") and pgc["init_args"]["hidden"] == 32
    dpmlp = _printed_model(["--model=lightning_dpgnn.DPMLP"], capsys)
    assert dpmlp["init_args"]["normalization"] == "none"
    gap = _printed_model(["--model.hops=3"], capsys)  # no model named: GAP, and hops applies
    assert gap["class_path"].endswith("GAP") and gap["init_args"]["hops"] == 3


@pytest.mark.parametrize(
    "model,args,max_epochs",
    [
        ("GAP", [], -1),  # staged: its stages set the length at setup
        ("DPMLP", [], 10),  # calibrated DP-SGD: its epochs
        ("DPGNN", ["--model.epochs=3", "--model.max_degree=21"], 3),
        ("DPMLP", ["--model.epsilon=null", "--model.noise_multiplier=1"], 100),  # open-ended
        ("LPGNN", [], 100),  # one stage: the CLI's default
        ("DPMLP", ["--trainer.max_epochs=5"], 5),  # the user's own
    ],
)
def test_the_cli_default_length_gives_way_to_a_model_that_sets_its_own(model, args, max_epochs):
    """``dpgnn fit --model lightning_dpgnn.DPMLP`` showed ``Epoch 10/99`` and stopped at 10."""
    from lightning_dpgnn.cli import DPGNNCLI

    cli = DPGNNCLI(
        L.LightningModule, L.LightningDataModule, subclass_mode_model=True,
        subclass_mode_data=True, run=False, save_config_callback=None,
        auto_configure_optimizers=False,
        args=[f"--model=lightning_dpgnn.{model}", "--data=lightning_dpgnn.data.NodeDataModule",
              *args],
    )
    assert cli.trainer.max_epochs == max_epochs


def test_the_noise_filters_are_undone_after_a_command():
    import logging
    import warnings

    before = list(warnings.filters)
    main(["fit", *QUIET, "--model.encoder_epochs=1", "--model.classifier_epochs=1"])
    assert warnings.filters == before
    assert not logging.getLogger("lightning.pytorch.utilities.rank_zero").filters


def test_a_model_with_two_guarantees_ends_with_both_each_with_its_unit(tmp_path, capsys):
    """``dpgnn fit`` on HeteroRR with both budgets (issue 38): the summary and the run file show
    the edges and the features guarantee, each with its epsilon, delta and unit, never added
    (it exited 1 with MultipleGuaranteesError after the fit)."""
    from lightning_dpgnn.privacy import report_from_dict

    main(["fit", *QUIET, "--model=lightning_dpgnn.HeteroRR", "--model.x_epsilon=1",
          "--trainer.max_epochs=1"])  # the default chain (1000 n moves, the minimum)
    out = capsys.readouterr().out
    edges, features = out.split("[edges]")[1].split("[features]")
    assert "epsilon spent: 1" in edges and "level: edge" in edges
    assert "protects: one private undirected edge" in edges
    assert "epsilon spent: 1" in features and "pure epsilon" in features
    assert "level: ldp" in features and "protects: each node's features" in features
    record = report_from_dict(json.loads((tmp_path / RUN_FILE).read_text())["privacy"])
    assert {n: g.level for n, g in record.guarantees.items()} == {"edges": "edge",
                                                                  "features": "ldp"}
    assert all(g.unit for g in record.guarantees.values())


def test_node_level_needs_a_degree_bound_and_the_unit_states_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fit", *QUIET, "--model.privacy=node", "--model.epsilon=8"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "needs max_degree=D" in err and "Traceback" not in err
    main(["fit", *QUIET, "--model.privacy=node", "--model.epsilon=8", "--model.max_degree=21",
          "--model.encoder_epochs=1", "--model.classifier_epochs=1"])
    condition = "among graphs whose degrees are <= 21"
    assert condition in _summary(capsys.readouterr().out)["protects"]
    assert condition in json.loads((tmp_path / RUN_FILE).read_text())["privacy"]["unit"]


@pytest.mark.parametrize("option,message", [
    ("--model.epsilon=nan", "error: epsilon must be > 0, got nan\n"),
    ("--model.hops=nan", "error: hops must be an integer >= 1, got nan\n"),
])
def test_a_number_the_parser_refuses_gets_the_constructors_sentence(option, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fit", *QUIET, option])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith(message)
