"""GW-LDP's release (privacy/graph_ldp.py) tested as attacks: two neighbouring client graphs in,
the released matrices' output distributions compared.

The neighbours are the worst case for the encoder: every entry of one embedding at ``alpha`` and
every entry of the other at ``beta`` (any two graphs are neighbours under the unit "one client's
whole graph"). The output space of a small matrix is enumerated exhaustively, and the exact
probabilities used for the bound are checked against the sampler itself.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from lightning_dpgnn.privacy import MatrixMultiBit, PaperCodeGaussian, PrivacyAccountant
from lightning_dpgnn.privacy.graph_ldp import PAPER_CODE_UNIT, graph_unit
from lightning_dpgnn.privacy.ldp import MultiBit
from lightning_dpgnn.privacy.mechanism import draw


def _all_code_matrices(rows: int, h: int, m: int):
    """Every matrix the encoder can output: per row, m non-zeros in {-1, 1}."""
    row_outputs = []
    for support in itertools.combinations(range(h), m):
        for signs in itertools.product((-1, 1), repeat=m):
            r = [0] * h
            for j, s in zip(support, signs, strict=True):
                r[j] = s
            row_outputs.append(r)
    for rows_ in itertools.product(row_outputs, repeat=rows):
        yield torch.tensor(rows_, dtype=torch.int8)


@pytest.mark.parametrize("eps,m", [(0.5, 1), (2.0, 1), (6.0, 2)])
def test_neighbouring_graphs_obey_the_epsilon_ratio_exactly(eps: float, m: int) -> None:
    mech = MatrixMultiBit(eps, m=m)
    n, h = 3, 3
    low, high = torch.zeros(n, h), torch.ones(n, h)
    worst, total_lo, total_hi = 0.0, 0.0, 0.0
    for codes in _all_code_matrices(n, h, m):
        a, b = mech.log_prob(low, codes), mech.log_prob(high, codes)
        worst = max(worst, abs(a - b))
        total_lo += math.exp(a)
        total_hi += math.exp(b)
    assert total_lo == pytest.approx(1.0) and total_hi == pytest.approx(1.0)  # a distribution
    assert worst <= eps + 1e-9  # the LDP bound per graph
    assert worst == pytest.approx(eps, rel=1e-6)  # and it is tight: epsilon is all spent


def test_padded_mode_bounds_graphs_of_different_sizes() -> None:
    eps = 1.5
    mech = MatrixMultiBit(eps, m=1, size="padded", n_max=3)
    small, big = torch.zeros(1, 2), torch.ones(3, 2)  # 1 node vs 3 nodes
    worst = max(
        abs(mech.log_prob(small, c) - mech.log_prob(big, c))
        for c in _all_code_matrices(3, 2, 1)
    )
    assert worst <= eps + 1e-9
    assert mech.encode(small).shape == mech.encode(big).shape == (3, 2)


def test_public_size_mode_releases_the_number_of_nodes() -> None:
    """The attack the unit concedes: the row count tells the server n exactly."""
    mech = MatrixMultiBit(1.0)
    a, b = mech.encode(torch.rand(4, 3)), mech.encode(torch.rand(5, 3))
    assert (a.shape[0], b.shape[0]) == (4, 5)
    assert mech.log_prob(torch.rand(5, 3), a) == -math.inf  # no 5-row graph gives a 4-row code
    assert "number of nodes is public" in graph_unit("public")
    assert "n_max=30" in graph_unit("padded", 30)


def test_the_exact_probabilities_are_the_samplers() -> None:
    """Empirical frequencies of the sampled codes match ``output_probabilities`` (tolerance:
    5 binomial standard deviations over 20,000 draws), so the exact bound above is about the
    mechanism that runs."""
    mech = MatrixMultiBit(2.0, m=1)
    h = torch.tensor([[0.1, 0.9], [0.5, 0.3]])
    draws = 20_000
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros(2, 2, 3)
    for _ in range(draws // 100):
        batch = torch.stack([mech.encode(h, gen) for _ in range(100)])
        for k, v in enumerate((-1, 0, 1)):
            counts[..., k] += (batch == v).sum(0)
    freq = counts / draws
    p = mech.output_probabilities(h).float()
    tol = 5 * torch.sqrt(p * (1 - p) / draws) + 1e-4
    assert bool(((freq - p).abs() <= tol).all()), (freq, p)


def test_each_row_is_multibit_at_epsilon_over_rows_and_rectification_is_unbiased() -> None:
    eps, n, h = 4.0, 4, 3
    mech = MatrixMultiBit(eps)
    row = mech.randomizer(n)
    assert isinstance(row, MultiBit) and row.epsilon == pytest.approx(eps / n)
    x = torch.tensor([[0.0, 0.2, 1.0]] * n)
    gen = torch.Generator().manual_seed(1)
    draws = 4000
    total = torch.zeros(n, h, dtype=torch.float64)
    for _ in range(draws):
        total += mech.rectify(mech.encode(x, gen))
    mean = total / draws
    std = row.variance(x.double()).sqrt() / math.sqrt(draws)
    assert bool(((mean - x.double()).abs() <= 5 * std).all())


def test_one_release_round_is_one_epsilon_whatever_the_number_of_graphs() -> None:
    mech = MatrixMultiBit(2.0)
    acc = PrivacyAccountant("ldp")
    graphs = [torch.rand(n, 4) for n in (3, 7, 12)]
    rel = mech.graph_release(draw(mech, acc, None, graphs), torch.arange(3))
    assert acc.epsilon() == pytest.approx(2.0)  # disjoint units: parallel composition
    assert [c.shape[0] for c in rel.matrices] == [3, 7, 12]
    assert all(int((c != 0).sum(1).max()) == 1 for c in rel.matrices)  # m* = 1 per row
    assert not acc.reproducible
    again = PrivacyAccountant("ldp")
    draw(mech, again, torch.Generator().manual_seed(0), graphs)
    assert again.reproducible  # an explicit generator is recorded


def test_graphs_sharing_a_source_node_compose_by_its_multiplicity() -> None:
    """Two graphs cut from one source graph both hold node 7, whose change moves every entry
    of both (one row each): the exact worst log-ratio of the joint release is 2 epsilon, so
    parallel composition (one epsilon) would understate it; the release, told each graph's
    source nodes, records 2 epsilon."""
    from lightning_dpgnn.privacy.graph_ldp import multiplicity

    eps = 1.5
    mech = MatrixMultiBit(eps, m=1)
    lo, hi = torch.zeros(1, 2), torch.ones(1, 2)
    worst = max(
        sum(mech.log_prob(hi, c) - mech.log_prob(lo, c) for c in (a, b))
        for a in _all_code_matrices(1, 2, 1) for b in _all_code_matrices(1, 2, 1)
    )
    assert worst == pytest.approx(2 * eps)
    node_ids = [torch.tensor([7]), torch.tensor([7])]
    acc = PrivacyAccountant("ldp")
    draw(mech.at_overlap(multiplicity(node_ids)), acc, None, [hi, hi])
    assert acc.epsilon() == pytest.approx(2 * eps) and acc.epsilon() >= worst - 1e-9
    assert "up to 2 released graphs" in acc.ledger[0].note
    independent = PrivacyAccountant("ldp")
    draw(mech.at_overlap(multiplicity(None)), independent, None, [hi, hi])  # parallel
    assert independent.epsilon() == pytest.approx(eps)
    # the multiplicity counts graphs, or distinct groups (clients) of graphs, per source node
    ids = [torch.tensor([0, 1]), torch.tensor([1, 2]), torch.tensor([1, 3])]
    assert multiplicity(ids) == 3 and multiplicity(ids, [0, 0, 1]) == 2
    assert multiplicity(None) == 1 and multiplicity([torch.tensor([0]), torch.tensor([1])]) == 1


def test_a_pure_release_and_dp_fedavg_compose_to_at_most_their_sum() -> None:
    """GW-LDP's zoo figures: the (4, 0) release with DP-FedAvg calibrated to 4 over 50 rounds
    at MUTAG's delta. RDP alone converts their composition to 8.32 (pure DP's RDP curve is
    loose); basic composition gives 4 + 4 at the same delta, and the report takes the
    smaller."""
    from lightning_dpgnn.privacy import calibrate_noise_multiplier, resolve_delta

    delta = resolve_delta("auto", 188)

    def fedavg(z: float) -> PrivacyAccountant:
        acc = PrivacyAccountant("ldp", delta)
        acc.add_gaussian("gwldp/dp-fedavg", z / 2, count=50, sensitivity=0.2)
        return acc

    acc = fedavg(calibrate_noise_multiplier(fedavg, 4.0))
    assert 3.99 < acc.epsilon() <= 4.0  # the calibration never overshoots
    MatrixMultiBit(4.0).account(acc)
    assert 7.99 < acc.epsilon() <= 8.0  # was 8.32 by RDP alone
    from lightning_dpgnn.privacy import PrivacyReport

    assert "basic composition" in PrivacyReport.from_accountant(acc).accountant  # named


def test_inputs_outside_the_public_range_are_clipped_not_trusted() -> None:
    mech = MatrixMultiBit(1.0, m=1)
    with pytest.warns(UserWarning, match="clipped"):
        codes = mech.encode(torch.full((2, 2), 7.0))
    assert codes.abs().sum() == 2
    with pytest.raises(ValueError):
        MatrixMultiBit(1.0, size="padded")  # n_max must be declared
    with pytest.raises(ValueError):
        MatrixMultiBit(math.inf)


def test_paper_code_mode_is_labelled_not_differentially_private() -> None:
    from lightning_dpgnn.privacy import PrivacyReport

    mech = PaperCodeGaussian()
    acc = PrivacyAccountant("ldp", unit=PAPER_CODE_UNIT)
    h = torch.randn(5, 3) * 10
    rel = mech.graph_release(draw(mech, acc, None, [h]), torch.arange(1))
    report = PrivacyReport.from_accountant(acc)
    assert math.isinf(report.epsilon)
    assert "NOT differentially private" in report.unit
    assert "NOT differentially private" in report.ledger[0].note
    # the code's noise: std "epsilon" = 1/n of the FIRST graph for every graph (it is set once
    # inside the loop), so a larger "epsilon" is more noise, and nothing bounds h
    assert mech.stds([5, 20, 40]) == [0.2, 0.2, 0.2]
    assert PaperCodeGaussian(per_graph=True).stds([5, 20]) == [0.2, 0.05]
    assert (rel.matrices[0] - h).std() == pytest.approx(1 / 5, rel=0.6)
