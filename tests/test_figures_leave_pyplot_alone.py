"""Library figures never touch pyplot: a notebook's backend and figure list survive every analysis call."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_no_analysis_changes_the_backend_or_registers_pyplot_figures():
    code = textwrap.dedent("""
        import matplotlib
        matplotlib.use("svg")          # stands in for a notebook's inline backend
        import matplotlib.pyplot as plt
        import torch
        from analyses.heads import head_roles, head_roles_figure
        from analyses.lowrank import laser_sweep
        from analyses.plotting import curves
        from analyses.task_vectors import latent_geometry, latent_geometry_figure
        from analyses.papers.distributional.figures import fig_drops
        from mechrecall import ZeroBiases, build_toy_model
        import pandas as pd

        torch.set_num_threads(1)
        model = build_toy_model(dict(n_layers=2, n_heads=2, d_model=16, d_head=8, d_mlp=32, d_vocab=20, n_ctx=16,
                                     normalization_type=None), [ZeroBiases()], seed=0)
        figures = [head_roles_figure(head_roles(model)),
                   laser_sweep(model, lambda m: {"x": float(m.W_U.sum())}, layers=[0], matrices=["mlp_in"],
                               rhos=[0.5]).figure(),
                   curves(pd.DataFrame({"a": [0, 1], "b": [1, 2]}), x="a", y="b"),
                   latent_geometry_figure(latent_geometry(torch.randn(6, 5), [0, 0, 0, 1, 1, 1]), [0, 0, 0, 1, 1, 1]),
                   fig_drops({"eval": [{"step": 1, **{f"test.{k}.{m}": 0.5 for k in ("full", "drop_F1", "drop_F2")
                                                        for m in ("p_correct", "p_noise", "loss")}}]}, "Fig 10")]
        assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
        assert plt.get_fignums() == [], plt.get_fignums()
        assert all(type(f).__name__ == "Figure" for f in figures)
        print("ok", len(figures))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok 5"
