"""``zoo.load`` and ``dpgnn zoo pull|push`` without a hub: no network attempt for an entry the
registry marks unpublished, one short try (no retry) when the hub does not answer, one clear
line, and a build-on-demand path. Nothing here reaches the network: the hub is a port on
127.0.0.1 that nobody listens on, or ``HF_HUB_OFFLINE=1``, and huggingface_hub's download is
wrapped so that a call that would use the network fails the test."""

from __future__ import annotations

import logging
import socket

import pytest
from huggingface_hub import constants
from lightning_dpgnn.zoo import registry

from lightning_dpgnn import GAP, zoo
from lightning_dpgnn.cli import main
from lightning_dpgnn.publish import hub as publish

ENTRY = "gap-edge-csbm-eps1"  # published: false in the registry


def _closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (a connection is refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_hub(monkeypatch, tmp_path):
    """The hub is a closed port, the hub cache an empty folder, no build folder exists; every
    hf_hub_download call is recorded, and one that would use the network fails at once."""
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv(registry.BUILD_ENV, str(tmp_path / "built"))
    calls: list[dict] = []
    real = publish.hf_hub_download

    def download(**kw):
        calls.append(kw)
        if not kw.get("local_files_only"):
            raise ConnectionError("the test hub is down (a network attempt)")
        return real(**kw)

    monkeypatch.setattr(publish, "hf_hub_download", download)
    return calls


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text, text
    return text


def test_an_unpublished_entry_is_not_looked_up_on_the_hub(no_hub, monkeypatch, caplog):
    probes = []
    monkeypatch.setattr(publish, "hub_unreachable", lambda *a, **k: probes.append(a) or None)
    with caplog.at_level(logging.WARNING), pytest.raises(FileNotFoundError) as err:
        zoo.load(ENTRY)
    text = _one_line(err.value)
    assert "is not published on the hub yet" in text
    assert f"dpgnn zoo build {ENTRY}" in text and "build=True" in text
    assert no_hub == [] and probes == []  # no download, not even a probe of the hub
    assert not [r for r in caplog.records if "Retry" in r.getMessage()]


def test_an_unreachable_hub_is_asked_once_and_only_the_cache_is_read(no_hub, caplog):
    with caplog.at_level(logging.WARNING), pytest.raises(FileNotFoundError) as err:
        zoo.load(ENTRY, repo_id="org/somewhere")  # a repository named: the hub is tried
    text = _one_line(err.value)
    assert "did not answer" in text and f"dpgnn zoo build {ENTRY}" in text
    assert no_hub and all(kw["local_files_only"] for kw in no_hub)  # the cache only
    assert not [r for r in caplog.records if "Retry" in r.getMessage()]
    with pytest.raises(publish.HubUnreachableError, match="not in the hub cache"):
        GAP.from_pretrained("org/somewhere")


def test_hub_unreachable_answers_quickly_and_says_why(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    reason = publish.hub_unreachable(f"http://127.0.0.1:{_closed_port()}", timeout=1.0)
    assert reason and "did not answer within 1 s" in reason
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert publish.hub_unreachable("http://127.0.0.1:1") == "HF_HUB_OFFLINE is set"


def test_a_reachable_hub_is_one_that_answers(hub):
    assert publish.hub_unreachable() is None  # the local hub answers 404 at its root


def test_load_with_build_builds_the_entry_on_demand(no_hub, gap_edge, monkeypatch, capsys,
                                                    tmp_path):
    built = []

    def fake_build(name, out, **kw):  # the real one trains the recipe (tests/zoo/test_registry)
        built.append(name)
        gap_edge[0].save_pretrained(out)
        return out

    monkeypatch.setattr(registry, "_build_entry", fake_build)
    model = zoo.load(ENTRY, build=True)
    assert built == [ENTRY] and isinstance(model, GAP) and no_hub == []
    out = capsys.readouterr().out
    assert f"building it from zoo/recipes/gap-edge-csbm.yaml into {tmp_path / 'built' / ENTRY}" \
        in out
    assert zoo.load(ENTRY).privacy_spent() == model.privacy_spent()  # now the local build


def test_pull_of_a_locally_built_entry_says_it_is_built(no_hub, gap_edge, capsys, tmp_path):
    folder = tmp_path / "built" / ENTRY
    gap_edge[0].save_pretrained(folder)
    with pytest.raises(SystemExit) as err:
        main(["zoo", "pull", ENTRY])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:")
    assert f"a local build exists at {folder}" in lines[0]
    assert "not built" not in lines[0] and no_hub == []


@pytest.mark.parametrize("offline", [True, False], ids=["HF_HUB_OFFLINE", "unreachable"])
def test_zoo_push_without_a_hub_is_one_error_line(no_hub, gap_edge, monkeypatch, capsys,
                                                  tmp_path, offline):
    gap_edge[0].save_pretrained(tmp_path / "built" / ENTRY)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as err:
        main(["zoo", "push", ENTRY, "--repo-id", "org/demo"])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: cannot push {tmp_path / 'built' / ENTRY} to org/demo")
    assert ("HF_HUB_OFFLINE is set" if offline else "did not answer") in lines[0]
