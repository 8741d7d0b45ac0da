"""``analyses.circuit`` on the hand-built induction circuit: the previous-token head feeds the induction head by
K-composition, and that edge must be the strongest of the view."""

from __future__ import annotations

import sys

import pytest
import torch

from analyses.circuit import MODES, circuit, composition_table, role_labels, strongest_edges
from analyses.heads import head_roles
from tests.handbuilt import INDUCTION_HEAD, PREV_TOKEN_HEAD, handbuilt_induction_model

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def model():
    return handbuilt_induction_model()


def test_the_strongest_edge_is_previous_token_to_induction_by_k_composition(model):
    table = composition_table(model)
    assert set(table["mode"]) == set(MODES)
    assert ((table["dst_layer"] - table["src_layer"]) == 1).all()
    assert table["score"].notna().all() and (table["score"] >= 0).all()
    (mode, src, dst, score), (_, _, _, runner_up) = strongest_edges(table, k=2)
    assert (mode, src, dst) == ("K", PREV_TOKEN_HEAD, INDUCTION_HEAD)
    assert score > 1.5 * runner_up
    # the same pair by Q- or V-composition is weak: the induction head's query and value read the token block
    pair = table[(table.src_layer == 0) & (table.src_head == 0) & (table.dst_layer == 1) & (table.dst_head == 1)]
    assert pair.set_index("mode").loc[["Q", "V"], "score"].max() < 0.1 * score


def test_nodes_carry_the_head_roles(model):
    labels = role_labels(head_roles(model))
    assert labels[PREV_TOKEN_HEAD] == "prev"
    assert "ind" in labels[INDUCTION_HEAD].split("+")
    assert labels[(0, 1)] == labels[(1, 0)] == ""


def test_the_figure_is_drawn_without_pyplot(model, tmp_path):
    pyplot_before = "matplotlib.pyplot" in sys.modules
    _table, fig = circuit(model, title="hand-built induction circuit")
    assert ("matplotlib.pyplot" in sys.modules) == pyplot_before
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("L0H0\nprev") for t in texts) and any(t.startswith("L1H1\nind") for t in texts)
    assert any(t.startswith("K ") for t in texts)
    fig.savefig(tmp_path / "circuit.png")
    assert (tmp_path / "circuit.png").stat().st_size > 1000
