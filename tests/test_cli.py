"""The ``dpgnn`` LightningCLI and the zoo recipes."""

import subprocess
import sys

import lightning as L
import pytest
import yaml

from lightning_dpgnn import zoo
from lightning_dpgnn.cli import main


def test_help_lists_the_subcommands():
    out = subprocess.run(
        [sys.executable, "-m", "lightning_dpgnn.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for sub in ("fit", "validate", "test", "predict"):
        assert sub in out


def test_fit_without_arguments_trains_gap_on_the_embedded_graph_and_prints_epsilon(capsys):
    main(
        [
            "fit",
            "--trainer.enable_progress_bar=false",
            "--model.encoder_epochs=20",
            "--model.classifier_epochs=20",
        ]
    )
    out = capsys.readouterr().out
    acc = float(out.split("test accuracy:")[1].split()[0])
    eps = float(out.split("epsilon spent:")[1].split()[0])
    assert acc > 0.3  # 5 balanced classes: chance is 0.2
    assert 0.99 <= eps <= 1.0  # GAP's default budget, edge level
    assert "edge-level" in out


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


def test_a_recipe_runs_end_to_end_on_the_embedded_graph(capsys):
    main(
        [
            "fit",
            "--config",
            str(zoo.recipe_path("gap-node-facebook")),
            "--data.name=csbm",
            "--data.target=null",
            "--data.min_class_size=null",
            "--model.encoder_epochs=1",
            "--model.classifier_epochs=1",
            "--model.max_degree=21",
            "--trainer.enable_progress_bar=false",
        ]
    )
    out = capsys.readouterr().out
    assert "node-level" in out and float(out.split("epsilon spent:")[1].split()[0]) <= 8.0


def test_unknown_recipe_lists_the_known_ones():
    with pytest.raises(ValueError, match="gap-edge-rutgers89"):
        zoo.recipe_path("nope")


def test_a_progap_recipe_runs_all_stages_in_one_fit(capsys):
    main(
        [
            "fit",
            "--config",
            str(zoo.recipe_path("progap-edge-facebook")),
            "--data.name=csbm",
            "--data.target=null",
            "--data.min_class_size=null",
            "--model.epochs_per_stage=2",
            "--trainer.enable_progress_bar=false",
        ]
    )
    out = capsys.readouterr().out
    assert "edge-level" in out and float(out.split("epsilon spent:")[1].split()[0]) <= 1.0


def _private_recipes() -> list[str]:
    return [n for n in zoo.recipes() if "-inf-" not in n and not n.startswith("mlp-")]


@pytest.mark.parametrize("name", _private_recipes())
def test_every_private_recipe_passes_the_pre_fit_privacy_checks_on_its_dataset(name):
    """What a user runs must not be refused: no private read in preprocessing, classes public
    where labels are protected, and at node level a degree bound the real graph keeps."""
    from lightning_dpgnn.cli import DPGNNCLI
    from lightning_dpgnn.methods.ap import check_degree_promise

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
        check_degree_promise(dm.data, model.hparams.max_degree, name)


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["--data.init_args.name", "nosuchdata"], "unknown dataset 'nosuchdata'"),
        (["--model.init_args.epsilon", "0"], "epsilon must be > 0"),
        (["--model.init_args.epsilon", "-1"], "epsilon must be > 0"),
        (["--model.init_args.hops", "0"], "hops must be an integer >= 1"),
        (["--model.init_args.delta", "1.5"], "delta must be in the open interval"),
        (["--model.privacy=graph"], "privacy"),
    ],
)
def test_bad_input_ends_with_one_error_line_and_exit_2(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit", *argv])
    assert exit_info.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    first = next(line for line in err if not line.startswith("Seed set"))
    assert first.startswith("error: ") and expected in first
    assert len(err) <= 3 and "Traceback" not in "\n".join(err)


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="unknown dataset"):
        main(["fit", "--data.init_args.name", "nosuchdata", "--debug"])
