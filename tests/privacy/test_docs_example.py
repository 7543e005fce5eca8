"""The worked example of docs/privacy.md: the numbers printed there are checked here."""

import math
from pathlib import Path

import pytest

from lightning_dpgnn.privacy import (
    PrivacyAccountant,
    PrivacyReport,
    calibrate_noise_multiplier,
    gaussian_plan,
)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text()


def test_edge_level_example():
    acc = PrivacyAccountant("edge", delta=1e-7)
    acc.add_gaussian("pma", noise_multiplier=3.0, count=2)
    basic, improved = acc.epsilon(conversion="basic"), acc.epsilon()
    assert basic == pytest.approx(2 / 18 + math.sqrt(4 * math.log(1e7)) / 3, rel=1e-9)
    assert f"{basic:.4f}" in DOC and f"{improved:.4f}" in DOC
    z = calibrate_noise_multiplier(gaussian_plan(2, delta=1e-7), 1.0)
    realized = gaussian_plan(2, delta=1e-7)(z).epsilon()
    assert f"about {z:.2f}" in DOC and f"{realized:.4f}" in DOC


def test_node_level_example_report_is_printed_verbatim():
    acc = PrivacyAccountant("node", 1e-5, unit="one node with all its edges, features and label")
    steps = 10 * round(15000 / 256)
    acc.add_subsampled_gaussian("encoder/dpsgd", 1.5, 256 / 15000, steps=steps)
    acc.add_gaussian("pma", 1.5, count=2, sensitivity=10.0)
    acc.add_subsampled_gaussian("classifier/dpsgd", 1.5, 256 / 15000, steps=steps)
    assert str(PrivacyReport.from_accountant(acc)) in DOC
