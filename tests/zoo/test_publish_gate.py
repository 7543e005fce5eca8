"""The publishing gate at every entry point, built as attacks on a saved folder.

``save_pretrained`` refuses a model whose guarantee would not hold; these tests write such a
folder anyway (the gate switched off while writing, as an older version or another tool might)
or edit a good folder's report afterwards, then try to publish it through ``push_folder``,
``push_to_hub`` and ``dpgnn zoo push``. Each must refuse before anything reaches the hub (the
hub of ``zoo_testing.py`` on 127.0.0.1 records every request), and a report edited after it
was written must fail verification."""

from __future__ import annotations

import json

import pytest
from huggingface_hub import ModelCard
from zoo_testing import quiet_trainer

from lightning_dpgnn import GAP
from lightning_dpgnn.cli import main
from lightning_dpgnn.methods import DPMLP
from lightning_dpgnn.publish import hub as publish
from lightning_dpgnn.publish.hub import REPORT, PublishError, VerificationError

ENTRY = "gap-edge-csbm-eps1"


def _ungated_save(model, folder, monkeypatch):
    """Write ``model``'s folder with the gate switched off (the folder an older version, or a
    tool that skipped the check, would have written)."""
    with monkeypatch.context() as m:
        m.setattr(publish, "publication_refusals", lambda model: [])
        model.save_pretrained(folder)
    return folder


def _edit_report(folder, edit, rehash=False):
    content = json.loads((folder / REPORT).read_text())
    edit(content)
    if rehash:  # a careful forger also rewrites the report's own SHA-256
        content["report_sha256"] = publish.report_digest(content)
    (folder / REPORT).write_text(json.dumps(content, indent=2))


def _pushed(server) -> bool:
    return any(method == "POST" for method, _ in server.state.calls)


@pytest.fixture(scope="module")
def seeded(csbm, tmp_path_factory):
    """A GAP fitted with an explicit noise seed: its noise can be replayed."""
    model = GAP(privacy="edge", epsilon=1.0, encoder_epochs=1, classifier_epochs=1, noise_seed=3)
    quiet_trainer(tmp_path_factory.mktemp("seeded"), max_epochs=2).fit(model, csbm)
    assert model.privacy_spent().reproducible_noise
    return model


@pytest.fixture(scope="module")
def halted(csbm, tmp_path_factory):
    """A DP-MLP whose trainer stopped after 1 of the 2 epochs its noise was calibrated for."""
    model = DPMLP(epsilon=4.0, epochs=2, batch_size=500)
    quiet_trainer(tmp_path_factory.mktemp("halted"), max_epochs=1).fit(model, csbm)
    return model


# -- the folder's own report decides --------------------------------------------------------------
def test_a_folder_with_reproducible_noise_is_not_pushed(seeded, hub, tmp_path, monkeypatch):
    folder = _ungated_save(seeded, tmp_path / "seeded", monkeypatch)
    with pytest.raises(PublishError, match="noise is reproducible"):
        publish.push_folder(folder, "org/seeded")
    assert not _pushed(hub)


def test_dpgnn_zoo_push_refuses_a_folder_with_reproducible_noise(seeded, hub, tmp_path,
                                                                 monkeypatch, capsys):
    folder = _ungated_save(seeded, tmp_path / "seeded", monkeypatch)
    with pytest.raises(SystemExit) as err:
        main(["zoo", "push", ENTRY, "--repo-id", "org/seeded", "--dir", str(folder)])
    assert err.value.code == 2
    out = capsys.readouterr().err
    assert out.startswith("error: refusing to publish") and "noise is reproducible" in out
    assert "Traceback" not in out and not _pushed(hub)


@pytest.mark.parametrize("rehash", [False, True], ids=["edited", "edited-and-rehashed"])
def test_a_report_edited_to_hide_reproducible_noise_fails_verification(
    seeded, hub, tmp_path, monkeypatch, rehash
):
    """The report (and the accountant it carries, and the card) edited to say the noise was
    not reproducible: the report's own SHA-256 no longer matches; rewritten too, the config's
    ``noise_seed`` (hashed by the report) still gives it away."""
    folder = _ungated_save(seeded, tmp_path / "hidden", monkeypatch)

    def hide(content):
        content["report"]["reproducible_noise"] = False
        content["accountant"]["reproducible"] = False

    _edit_report(folder, hide, rehash=rehash)
    card = ModelCard.load(folder / "README.md")
    card.data.privacy = {**card.data.privacy, "reproducible_noise": False}
    card.save(folder / "README.md")
    match = "noise_seed=3" if rehash else "does not match its own SHA-256"
    with pytest.raises(VerificationError, match=match):
        publish.push_folder(folder, "org/hidden")
    with pytest.raises(VerificationError, match=match):
        GAP.from_pretrained(folder)
    assert not _pushed(hub)


def test_a_halted_fit_is_not_pushed_even_with_its_report_edited(halted, hub, tmp_path,
                                                                monkeypatch):
    folder = _ungated_save(halted, tmp_path / "halted", monkeypatch)
    planned = json.loads((folder / REPORT).read_text())["publication"]["planned_count"]
    assert planned == 2 * halted.accountant.total_count()  # 1 of 2 epochs ran
    with pytest.raises(PublishError, match="halted"):
        publish.push_folder(folder, "org/halted")

    def complete(content):  # claim the fit ran its whole plan
        content["publication"].update(halted=False, planned_count=None)

    _edit_report(folder, complete)
    with pytest.raises(VerificationError, match="does not match its own SHA-256"):
        publish.push_folder(folder, "org/halted")
    _edit_report(folder, lambda c: c["publication"].update(halted=False, planned_count=planned),
                 rehash=True)
    with pytest.raises(PublishError, match="halted"):  # the plan still outnumbers the ledger
        publish.push_folder(folder, "org/halted")
    assert not _pushed(hub)


def test_an_over_budget_folder_is_not_pushed(gap_edge, hub, tmp_path, monkeypatch):
    model, _ = gap_edge
    model.save_pretrained(tmp_path / "ok")
    over = GAP.from_pretrained(tmp_path / "ok")
    over.accountant.add_gaussian("pma", over.noise_multiplier, sensitivity=2 ** 0.5)
    folder = _ungated_save(over, tmp_path / "over", monkeypatch)
    with pytest.raises(PublishError, match="over its target"):
        publish.push_folder(folder, "org/over")
    assert not _pushed(hub)


def test_a_folder_without_its_report_is_not_pushed(gap_edge, hub, tmp_path):
    gap_edge[0].save_pretrained(tmp_path / "m")
    (tmp_path / "m" / REPORT).unlink()
    with pytest.raises(PublishError, match="privacy report is missing"):
        publish.push_folder(tmp_path / "m", "org/m")
    assert not _pushed(hub)


@pytest.mark.parametrize("edit", [
    lambda c: c.update(library_version="9.9.9"),
    lambda c: c["publication"].update(target_epsilon=100.0),
    lambda c: c.setdefault("empirical_audit", {"mia_auc": 0.5}),
    lambda c: c.pop("publication"),
], ids=["version", "target", "audit", "gate-removed"])
def test_any_edit_of_the_report_fails_verification(gap_edge, tmp_path, edit):
    gap_edge[0].save_pretrained(tmp_path / "m")
    GAP.from_pretrained(tmp_path / "m")
    _edit_report(tmp_path / "m", edit)
    with pytest.raises(VerificationError, match="does not match its own SHA-256"):
        GAP.from_pretrained(tmp_path / "m")
    with pytest.raises(VerificationError, match="does not match its own SHA-256"):
        publish.push_folder(tmp_path / "m", "org/m")


def test_a_good_folder_is_pushed_and_the_gate_reads_its_report(gap_edge, hub, tmp_path):
    gap_edge[0].save_pretrained(tmp_path / "m")
    assert publish.folder_refusals(tmp_path / "m") == []
    publish.push_folder(tmp_path / "m", "org/m")
    assert _pushed(hub)


def test_push_to_hub_refuses_before_contacting_the_hub(seeded, hub):
    with pytest.raises(PublishError, match="reproducible"):
        seeded.push_to_hub("org/seeded")
    assert hub.state.calls == []


def test_a_folder_of_the_previous_format_loads_with_a_warning_and_is_not_pushed(
    gap_edge, hub, tmp_path
):
    gap_edge[0].save_pretrained(tmp_path / "m")

    def downgrade(content):
        content["format"] = "lightning-dpgnn/1"
        del content["report_sha256"], content["publication"]

    _edit_report(tmp_path / "m", downgrade)
    with pytest.warns(UserWarning, match="older lightning-dpgnn"):
        GAP.from_pretrained(tmp_path / "m")
    with pytest.warns(UserWarning), pytest.raises(PublishError, match="save it again"):
        publish.push_folder(tmp_path / "m", "org/m")
    assert not _pushed(hub)
