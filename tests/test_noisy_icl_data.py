"""Chen, Bruna & Bietti's data: tiny-Shakespeare statistics and the noisy in-context recall / synthetic IOI / LAM
generators.

Reference values were measured with an independent prototype of the generators: the vocabulary string, the top-5 unigram
characters and counts, 1,403 non-zero bigrams, and the per-sequence statistics table of the paper-text
generator (checked within ±10 %).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from pathlib import Path

import pytest
import torch

from analyses.papers.distributional.data.char_stats import (
    CHAR_STATS_FILE,
    EXPECTED_SHA256,
    compute_char_stats,
    load_char_stats,
    make_char_stats,
)
from analyses.papers.distributional.data.recall import (
    MULTI_TRIGGERS,
    NoisyICLConfig,
    noisy_icl_batch_fn,
    sample_lam,
    sample_noisy_icl,
    sample_noisy_icl_reference,
    sample_synthetic_ioi,
)
from mechrecall.trainer import Batch, select_positions

torch.set_num_threads(1)

SPEC_VOCAB = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ROOT = Path(__file__).resolve().parents[1]
# The public text sits in the shared/ folder beside a checkout (or wherever MECHRECALL_SHAKESPEARE points).
SOURCE = Path(os.environ.get("MECHRECALL_SHAKESPEARE", ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"))
PACKAGED = ROOT / "analyses" / "papers" / "distributional" / "data" / CHAR_STATS_FILE


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution."""
    return float(
        torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), torch.tensor(x / 2, dtype=torch.float64))
    )


# ---------------------------------------------------------------------------------------------------- statistics


def test_char_stats_match_spec():
    s = load_char_stats()
    assert s.vocab == SPEC_VOCAB and s.n_tokens == 65
    assert s.sha256 == EXPECTED_SHA256 and s.n_chars == 1_115_394 and s.source == "tinyshakespeare.txt"
    top = torch.argsort(s.unigram_counts, descending=True, stable=True)
    assert top[:10].tolist() == [1, 43, 58, 53, 39, 46, 57, 56, 52, 47]
    assert s.unigram_counts[top[:5]].tolist() == [169_892, 94_611, 67_009, 65_798, 55_507]
    assert int((s.bigram_counts > 0).sum()) == 1403
    assert int(s.bigram_counts.sum(1).min()) == 1 and s.empty_rows == ()
    assert int(s.bigram_counts.sum()) == 1_115_393
    assert s.pi_u.dtype == s.pi_b.dtype == torch.float64 and s.unigram_counts.dtype == torch.int64
    assert torch.allclose(s.pi_b.sum(1), torch.ones(65, dtype=torch.float64))
    assert abs(float(s.pi_u[1]) - 0.1523) < 1e-4
    assert s.decode(s.encode("To be, or not")) == "To be, or not"
    assert PACKAGED.stat().st_size < 60_000


@pytest.mark.skipif(not SOURCE.exists(), reason="tiny Shakespeare text not available")
def test_make_char_stats_reproduces_packaged_json(tmp_path):
    assert hashlib.sha256(SOURCE.read_bytes()).hexdigest() == EXPECTED_SHA256
    out = tmp_path / "stats.json"
    make_char_stats(SOURCE, out)
    assert out.read_bytes() == PACKAGED.read_bytes()


def test_make_char_stats_checks_sha_and_counts(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("abca\nb")
    with pytest.raises(ValueError, match="sha256"):
        make_char_stats(text, tmp_path / "x.json")
    stats = make_char_stats(text, tmp_path / "x.json", verify=False)
    assert stats["vocab"] == "\nabc" and stats["unigram_counts"] == [1, 2, 2, 1]
    assert stats["bigram_counts"][1] == [1, 0, 1, 0]  # 'a' -> '\n', 'a' -> 'b'
    assert json.loads((tmp_path / "x.json").read_text())["n_pairs"] == 5
    cs = load_char_stats(tmp_path / "x.json")
    assert cs.vocab == "\nabc" and cs.empty_rows == ()
    assert compute_char_stats("aab")["bigram_counts"] == [[1, 1], [0, 0]]
    cs2_path = tmp_path / "y.json"
    make_char_stats(tmp_path / "t.txt", cs2_path, verify=False)
    d = json.loads(cs2_path.read_text())
    d.update(vocab="ab", unigram_counts=[1, 1], bigram_counts=[[0, 1], [0, 0]], n_chars=2)
    cs2_path.write_text(json.dumps(d))
    assert load_char_stats(cs2_path).empty_rows == (1,)  # 'b' only at the end: π_b row = π_u
    assert torch.equal(load_char_stats(cs2_path).pi_b[1], torch.tensor([0.5, 0.5], dtype=torch.float64))


# ---------------------------------------------------------------------------------------------------- paper_text


def seq_stats(b: Batch, q: int, tau: int) -> dict[str, torch.Tensor]:
    """Per-sequence statistics of 's table, over the context z_1..z_T."""
    tok, T = b.tokens, b.tokens.shape[1]
    ybar = b.extras["ybar"]
    isq = tok == q
    return {
        "n_q": isq[:, : T - 1].sum(1).double(),
        "pairs_ybar": (isq[:, :-1] & (tok[:, 1:] == ybar[:, None])).sum(1).double(),
        "pairs_tau": (isq[:, :-1] & (tok[:, 1:] == tau)).sum(1).double(),
        "frac_tau": (tok == tau).double().mean(1),
        "no_pair": ((isq[:, :-1] & (tok[:, 1:] == ybar[:, None])).sum(1) == 0).double(),
    }


@pytest.mark.parametrize(
    "T, alpha, n, ref",
    [
        (256, 0.5, 3000, (36.9, 18.4, 18.3, 0.0715, 0.000)),
        (256, 0.0, 3000, (40.3, 40.2, 0.0, 0.0, 0.000)),
        (64, 0.5, 4000, (9.1, 4.5, 4.5, 0.070, 0.0066)),
    ],
)
def test_paper_text_statistics_match_spec_table(T, alpha, n, ref):
    cfg = NoisyICLConfig.preset("paper_text", seq_len=T, alpha=alpha)
    assert cfg.tau == 65 and cfg.d_vocab == 66
    st = {k: v.mean().item() for k, v in seq_stats(sample_noisy_icl(cfg, n, gen(1)), 1, 65).items()}
    for key, expected in zip(("n_q", "pairs_ybar", "pairs_tau", "frac_tau"), ref[:4]):
        assert st[key] == pytest.approx(expected, rel=0.10, abs=1e-12), (key, st[key], expected)
    # a rare event: ±10 % is below the sampling noise, use a 4-sigma binomial band instead
    p = ref[4]
    assert abs(st["no_pair"] - p) <= 4 * math.sqrt(max(p, 1 / n) * (1 - p) / n), st["no_pair"]


def test_paper_text_invariants():
    cfg = NoisyICLConfig.preset("paper_text", seq_len=48)
    b = sample_noisy_icl(cfg, 600, gen(2))
    B, T = b.tokens.shape
    assert (B, T) == (600, 48) and b.targets.shape == (B, T) and b.tokens.dtype == torch.int64
    assert torch.equal(b.tokens[:, 1:], b.targets[:, :-1])
    assert (b.tokens[:, -1] == 1).all()  # z_T = q
    mask = torch.zeros(B, T, dtype=torch.bool)
    mask[:, -1] = True
    assert torch.equal(b.loss_mask, mask)
    ybar, y = b.extras["ybar"], b.targets[:, -1]
    assert ((ybar >= 0) & (ybar < 65)).all()  # ȳ ~ U([N]): never τ
    assert ((y == ybar) | (y == 65)).all()
    assert torch.equal(b.extras["target_noise"][:, -1], y == 65) and 0.4 < (y == 65).float().mean() < 0.6
    assert torch.equal(b.extras["clean_target"][:, -1], ybar)
    succ = b.extras["trigger_successor"]
    inner = succ.clone()
    inner[:, -1] = False  # the forced z_T is not a draw of p_{α,ȳ}
    assert ((b.tokens == ybar[:, None]) | (b.tokens == 65))[inner].all()
    assert torch.equal(b.extras["noise"], inner & (b.tokens == 65))  # τ appears only after a trigger
    assert not (b.tokens[:, 0] == 65).any()
    # after τ (π_u, after_noise='unigram'): an ordinary token, never τ again
    after_tau = torch.nn.functional.pad(b.tokens[:, :-1] == 65, (1, 0))
    assert (b.tokens[after_tau] < 65).all()
    clean = sample_noisy_icl(cfg, 300, gen(3), alpha=0.0)
    assert torch.equal(clean.targets[:, -1], clean.extras["ybar"]) and not (clean.tokens == 65).any()


def test_bigram_transitions_match_pi_b():
    """Non-trigger transitions of the vectorised chain follow π_b exactly (G-test, ~250k transitions)."""
    s = load_char_stats()
    cfg = NoisyICLConfig.preset("paper_text", seq_len=256)
    b = sample_noisy_icl(cfg, 1000, gen(4))
    prev, nxt = b.tokens[:, :-1].flatten(), b.tokens[:, 1:].flatten()
    keep = (prev != 1) & (prev != 65) & (nxt != 1)  # skip the trigger row and the forced z_T
    obs = torch.zeros(65, 65, dtype=torch.float64)
    obs.index_put_((prev[keep], nxt[keep]), torch.ones(int(keep.sum()), dtype=torch.float64), accumulate=True)
    pb = s.pi_b.clone()
    pb[:, 1] = 0  # condition on "next != q"
    pb = pb / pb.sum(1, keepdim=True)
    exp = obs.sum(1, keepdim=True) * pb
    rows = obs.sum(1) > 0
    o, e = obs[rows], exp[rows]
    assert ((o > 0) <= (e > 0)).all()  # no transition the bigram model forbids
    nz = o > 0
    g = 2 * float((o[nz] * torch.log(o[nz] / e[nz])).sum())
    df = int(((e > 0).sum(1) - 1).clamp(min=0).sum())
    assert chi2_sf(g, df) > 1e-4, (g, df)


# ---------------------------------------------------------------------------------------------------- official_code


def test_official_code_invariants():
    cfg = NoisyICLConfig.preset("official_code", seq_len=64)
    assert cfg.tau == 2 and cfg.d_vocab == 65 and cfg.loss_positions == "trigger_repeat"
    b = sample_noisy_icl(cfg, 800, gen(5))
    tok, tgt, ex = b.tokens, b.targets, b.extras
    ybar, outs, succ = ex["ybar"], ex["outs"], ex["trigger_successor"]
    assert torch.equal(tok[:, 1:], tgt[:, :-1])
    assert (ybar == 2).any() and (ybar == 1).any()  # ȳ ~ U(all 65 ids) can be τ or q (800 draws)
    is_q = tok == 1
    assert torch.equal(outs, torch.cumsum(is_q, 1) * is_q)
    assert torch.equal(b.loss_mask, outs >= 2)
    assert torch.equal(succ[:, 1:], is_q[:, :-1]) and not succ[:, 0].any()
    assert ((tok == ybar[:, None]) | (tok == 2))[succ].all()
    assert ((tgt == ybar[:, None]) | (tgt == 2))[b.loss_mask].all()
    assert ((tgt == ybar[:, None]) | (tgt == 2))[is_q].all()
    assert torch.equal(ex["clean_target"], torch.where(is_q, ybar[:, None], -100))
    assert (ex["noise"] <= (succ & (tok == 2))).all() and ex["noise"].any()
    # τ marked as noise after a trigger: P = α · 64/65 (ȳ = τ with probability 1/65 makes τ the answer); a ratio
    # estimator over sequences (ȳ is shared within one), within 4 standard errors
    k, m = (ex["noise"] & succ).sum(1).double(), succ.sum(1).double()
    ratio = k.sum() / m.sum()
    se = float(((k - ratio * m).pow(2).sum()).sqrt() / m.sum())
    assert abs(ratio.item() - 0.5 * 64 / 65) <= 4 * se, (ratio.item(), se)
    assert not (tok[:, -1] == 1).all()  # the last token is not forced
    clean = sample_noisy_icl(cfg, 400, gen(6), alpha=0.0)
    s = clean.extras["trigger_successor"]
    assert not clean.extras["noise"].any() and not clean.extras["target_noise"].any()
    assert (clean.tokens == clean.extras["ybar"][:, None])[s].all()  # with α = 0 no τ after a trigger
    m = clean.loss_mask
    assert torch.equal(clean.targets[m], clean.extras["clean_target"][m]) and m.sum(1).float().mean() > 3


# The authors' generator (leichen2018/ATTN_vs_MLP) at T = 256, α = 0.5, trigger id 1, τ = id 2, per sequence:
# triggers among z_1..z_T, [q→τ] and [q→non-τ] pairs (z_t, z_{t+1}) for t ≤ T, fraction of z_1..z_T that
# are id 2.
OFFICIAL_STATS = {"n_q": 36.9, "pairs_tau": 18.7, "pairs_other": 18.2, "frac_tau": 0.074}
OFFICIAL_ROUNDING = {"n_q": 0.05, "pairs_tau": 0.05, "pairs_other": 0.05, "frac_tau": 0.0005}


def test_official_code_statistics_match_the_authors_generator():
    """Means within 4 standard errors (of our sample) plus the published values' rounding."""
    n = 4000
    b = sample_noisy_icl(NoisyICLConfig.preset("official_code", seq_len=256, alpha=0.5), n, gen(11))
    is_q = b.tokens == 1
    per_seq = {
        "n_q": is_q.sum(1).double(),
        "pairs_tau": (is_q & (b.targets == 2)).sum(1).double(),
        "pairs_other": (is_q & (b.targets != 2)).sum(1).double(),
        "frac_tau": (b.tokens == 2).double().mean(1),
    }
    assert torch.equal(per_seq["n_q"], per_seq["pairs_tau"] + per_seq["pairs_other"])
    for key, published in OFFICIAL_STATS.items():
        x = per_seq[key]
        se = x.std().item() / math.sqrt(n)
        tol = 4 * se + OFFICIAL_ROUNDING[key]
        assert abs(x.mean().item() - published) <= tol, (key, x.mean().item(), published, tol)
    # the bands have teeth: α = 0.4 moves the τ pairs by > 10 tolerances
    off = sample_noisy_icl(NoisyICLConfig.preset("official_code", seq_len=256, alpha=0.4), n, gen(12))
    pairs = ((off.tokens == 1) & (off.targets == 2)).sum(1).double()
    assert abs(pairs.mean().item() - OFFICIAL_STATS["pairs_tau"]) > 10 * (4 * pairs.std().item() / math.sqrt(n))


def test_official_code_bigram_transitions_match_pi_b():
    """Transitions out of every non-trigger token follow π_b (τ = '!' is an ordinary character here; G-test)."""
    s = load_char_stats()
    b = sample_noisy_icl(NoisyICLConfig.preset("official_code", seq_len=256), 1000, gen(13))
    prev, nxt = b.tokens.flatten(), b.targets.flatten()
    keep = prev != 1  # the trigger's successor is p_{α,ȳ}, not π_b
    obs = torch.zeros(65, 65, dtype=torch.float64)
    obs.index_put_((prev[keep], nxt[keep]), torch.ones(int(keep.sum()), dtype=torch.float64), accumulate=True)
    exp = obs.sum(1, keepdim=True) * s.pi_b.double()
    rows = obs.sum(1) > 0
    o, e = obs[rows], exp[rows]
    assert ((o > 0) <= (e > 0)).all()  # no transition the bigram model forbids
    nz = o > 0
    g = 2 * float((o[nz] * torch.log(o[nz] / e[nz])).sum())
    df = int(((e > 0).sum(1) - 1).clamp(min=0).sum())
    assert chi2_sf(g, df) > 1e-4, (g, df)
    # the test has teeth: the unigram in place of π_b is rejected
    uni = obs.sum(1, keepdim=True) * (s.unigram_counts.double() / s.unigram_counts.sum())[None]
    assert chi2_sf(2 * float((o[nz] * torch.log(o[nz] / uni[rows][nz])).sum()), df) < 1e-10


def test_multi_trigger():
    Q = MULTI_TRIGGERS
    for name in ("official_code", "paper_text"):
        cfg = NoisyICLConfig.preset(name, seq_len=64, triggers=Q)
        b = sample_noisy_icl(cfg, 400, gen(7))
        tok, tgt, ex = b.tokens, b.targets, b.extras
        ybar, tau = ex["ybar"], cfg.tau
        assert ybar.shape == (400, 5)
        ytab = torch.full((400, cfg.d_vocab), -100, dtype=torch.int64)
        ytab[:, list(Q)] = ybar
        expected_y = torch.gather(ytab, 1, tok)  # ȳ of the trigger at each position
        is_trig = expected_y != -100
        assert torch.equal(ex["clean_target"], expected_y)
        last_forced = name == "paper_text"
        check = is_trig.clone()
        if last_forced:
            check[:, -2] = False  # z_T overwrites the successor of z_{T-1}
        nxt_ok = (tgt == expected_y) | (tgt == tau)
        assert nxt_ok[check].all()
        outs = torch.zeros_like(tok)
        for q in Q:
            e = tok == q
            outs += torch.cumsum(e, 1) * e
        assert torch.equal(ex["outs"], outs)
        if last_forced:
            assert torch.isin(tok[:, -1], torch.tensor(Q)).all()
            assert len(set(tok[:, -1].tolist())) == 5  # a trigger drawn uniformly from Q
            assert b.loss_mask[:, -1].all() and b.loss_mask.sum() == 400
        else:
            assert torch.equal(b.loss_mask, outs >= 2)
            per_trigger = [(tok == q).sum().item() for q in Q]
            assert min(per_trigger) > 100  # every trigger occurs


# ---------------------------------------------------------------------------------------------------- reference


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("paper_text", {}),
        ("official_code", dict(triggers=MULTI_TRIGGERS)),
        ("paper_text", dict(triggers=MULTI_TRIGGERS, after_noise="bigram_of_trigger", alpha=0.7)),
    ],
)
def test_vectorised_and_reference_agree_in_distribution(name, overrides):
    cfg = NoisyICLConfig.preset(name, seq_len=48, **overrides)
    n = 1500
    vec = sample_noisy_icl(cfg, n, gen(8))
    ref = sample_noisy_icl_reference(cfg, n, random.Random(8))
    for b in (vec, ref):
        assert b.tokens.shape == (n, 48) and set(b.extras) >= {
            "ybar",
            "outs",
            "trigger_successor",
            "noise",
            "target_noise",
            "clean_target",
        }
        # the reference obeys the same invariants
        assert torch.equal(b.tokens[:, 1:], b.targets[:, :-1])
    summaries = {
        "n_trig": lambda b: b.extras["trigger_successor"].sum(1).double(),
        "n_noise": lambda b: b.extras["noise"].sum(1).double(),
        "n_loss": lambda b: b.loss_mask.sum(1).double(),
        "max_outs": lambda b: b.extras["outs"].max(1).values.double(),
        "target_noise_at_loss": lambda b: (b.extras["target_noise"] & b.loss_mask).sum(1).double(),
        "first_is_space": lambda b: (b.tokens[:, 0] == 1).double(),
        "ybar0": lambda b: (b.extras["ybar"] if b.extras["ybar"].ndim == 1 else b.extras["ybar"][:, 0]).double(),
    }
    for key, f in summaries.items():
        a, r = f(vec), f(ref)
        se = math.sqrt(a.var().item() / n + r.var().item() / n) + 1e-12
        assert abs(a.mean().item() - r.mean().item()) < 4 * se, (key, a.mean().item(), r.mean().item())
    # histograms of the bigram-chain tokens (not the trigger successors: ȳ repeats within a sequence, which
    # would overdisperse the counts): chi-square test of homogeneity
    V = cfg.d_vocab
    chain = [b.tokens[~b.extras["trigger_successor"]] for b in (vec, ref)]
    h = torch.stack([torch.bincount(c, minlength=V) for c in chain]).double()
    h = h[:, h.sum(0) > 0]
    e = h.sum(1, keepdim=True) * h.sum(0, keepdim=True) / h.sum()
    x2 = float(((h - e) ** 2 / e).sum())
    assert chi2_sf(x2, h.shape[1] - 1) > 1e-4, x2


def test_reference_invariants_official_code():
    cfg = NoisyICLConfig.preset("official_code", seq_len=32)
    b = sample_noisy_icl_reference(cfg, 50, random.Random(0))
    is_q = b.tokens == 1
    assert torch.equal(b.extras["outs"], torch.cumsum(is_q, 1) * is_q)
    assert torch.equal(b.loss_mask, b.extras["outs"] >= 2)
    assert ((b.targets == b.extras["ybar"][:, None]) | (b.targets == 2))[is_q].all()
    p = sample_noisy_icl_reference(NoisyICLConfig.preset("paper_text", seq_len=32), 50, random.Random(0))
    assert (p.tokens[:, -1] == 1).all() and p.loss_mask[:, -1].all() and p.loss_mask.sum() == 50


# ---------------------------------------------------------------------------------------------------- misc


def test_determinism_and_variants():
    for cfg in (
        NoisyICLConfig.preset("official_code", seq_len=40),
        NoisyICLConfig.preset("paper_text", seq_len=40),
        NoisyICLConfig.preset("official_code", seq_len=40, triggers=MULTI_TRIGGERS),
        NoisyICLConfig.preset("paper_text", seq_len=40, after_noise="bigram_of_trigger"),
    ):
        a, b = sample_noisy_icl(cfg, 64, gen(11)), sample_noisy_icl(cfg, 64, gen(11))
        c = sample_noisy_icl(cfg, 64, gen(12))
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets)
        assert torch.equal(a.loss_mask, b.loss_mask) and not torch.equal(a.tokens, c.tokens)
        for k in a.extras:
            assert torch.equal(a.extras[k], b.extras[k]), k
        r1 = sample_noisy_icl_reference(cfg, 4, random.Random(3))
        r2 = sample_noisy_icl_reference(cfg, 4, random.Random(3))
        assert torch.equal(r1.tokens, r2.tokens)
    ia = sample_synthetic_ioi(NoisyICLConfig.preset("paper_text", seq_len=40), 32, gen(1))
    ib = sample_synthetic_ioi(NoisyICLConfig.preset("paper_text", seq_len=40), 32, gen(1))
    assert torch.equal(ia.tokens, ib.tokens) and torch.equal(ia.targets, ib.targets)


def test_theory_variant_uniform_and_bigram_of_trigger():
    cfg = NoisyICLConfig.preset(
        "paper_text", n_tokens=16, unigram="uniform", bigram="uniform", seq_len=64, triggers=(3,)
    )
    assert cfg.tau == 16 and cfg.d_vocab == 17
    b = sample_noisy_icl(cfg, 2000, gen(13))
    free = ~b.extras["trigger_successor"]
    free[:, -1] = False
    counts = torch.bincount(b.tokens[free], minlength=17).double()
    assert counts[16] == 0 and (counts[:16] / counts[:16].sum() - 1 / 16).abs().max() < 0.01
    # after τ with 'bigram_of_trigger' (one trigger q = ' '): only successors that π_b(·|' ') allows
    s = load_char_stats()
    cfg2 = NoisyICLConfig.preset("paper_text", seq_len=128, after_noise="bigram_of_trigger", alpha=0.9)
    b2 = sample_noisy_icl(cfg2, 1000, gen(14))
    after_tau = torch.nn.functional.pad(b2.tokens[:, :-1] == 65, (1, 0))
    after_tau[:, -1] = False
    got = torch.bincount(b2.tokens[after_tau], minlength=65).double()
    allowed = s.bigram_counts[1] > 0
    assert got[~allowed].sum() == 0 and got.sum() > 1000  # only successors that π_b(·|' ') allows
    # several triggers: the successor of τ follows π_b of the trigger just before τ
    cfg3 = NoisyICLConfig.preset(
        "paper_text", seq_len=128, after_noise="bigram_of_trigger", alpha=0.9, triggers=MULTI_TRIGGERS
    )
    tok = sample_noisy_icl(cfg3, 500, gen(15)).tokens
    t = torch.nonzero(tok[:, 1:-2] == 65) + torch.tensor([0, 1])  # τ at (b, t), 1 <= t <= T-3 (z_T is forced)
    trig, nxt = tok[t[:, 0], t[:, 1] - 1], tok[t[:, 0], t[:, 1] + 1]
    assert torch.isin(trig, torch.tensor(MULTI_TRIGGERS)).all() and len(set(trig.tolist())) == 5
    assert (s.bigram_counts[trig, nxt] > 0).all()
    assert not (s.bigram_counts[:, nxt][torch.tensor(MULTI_TRIGGERS)] > 0).all(0).all()  # the check has teeth


def test_synthetic_ioi_invariants():
    for noise_in_filler in (True, False):
        cfg = NoisyICLConfig.preset("paper_text", seq_len=32, exclude_trigger_output=True)
        b = sample_synthetic_ioi(cfg, 500, gen(15), noise_in_filler=noise_in_filler)
        tok, ex = b.tokens, b.extras
        B, T = tok.shape
        ybar, yd, pos = ex["ybar"], ex["y_distractor"], ex["trigger_positions"]
        assert (ybar != yd).all() and (ybar != 1).all() and (yd != 1).all()
        assert ((tok[:, : T - 1] == 1).sum(1) == 3).all() and (tok[:, -1] == 1).all()  # three q's before T, z_T = q
        assert torch.equal(torch.nonzero(tok[:, : T - 1] == 1)[:, 1].view(B, 3), pos)
        assert (pos[:, 0] >= 0).all() and (pos[:, 2] <= T - 3).all() and (pos.diff(dim=1) >= 2).all()
        succ = torch.gather(tok, 1, pos + 1)
        assert ((succ == ybar[:, None]).sum(1) == 1).all() and ((succ == yd[:, None]).sum(1) == 2).all()
        assert torch.equal(torch.gather(succ, 1, ex["ybar_slot"][:, None]).squeeze(1), ybar)
        assert ((b.targets[:, -1] == ybar) | (b.targets[:, -1] == 65)).all()
        assert b.loss_mask[:, -1].all() and b.loss_mask.sum() == B
        assert torch.equal(ex["clean_target"][:, -1], ybar)
        filler = torch.ones_like(tok, dtype=torch.bool)
        filler.scatter_(1, pos, False)
        filler.scatter_(1, pos + 1, False)
        filler[:, -1] = False
        assert (tok[filler] != 1).all()
        assert (tok[filler] == 65).any() == noise_in_filler
        assert set(ex["ybar_slot"].tolist()) == {0, 1, 2} and len(set(pos[:, 0].tolist())) > 10
    # default (paper): ȳ, y^D uniform over [N], so ȳ = q is possible; the three designated positions hold q
    b = sample_synthetic_ioi(NoisyICLConfig.preset("paper_text", seq_len=16, alpha=0.0), 3000, gen(16))
    assert (torch.gather(b.tokens, 1, b.extras["trigger_positions"]) == 1).all()
    assert (b.extras["ybar"] == 1).any() and torch.equal(b.targets[:, -1], b.extras["ybar"])


def test_lam():
    pop = sample_lam(3, 0.03, None)
    assert pop.y is None and torch.equal(pop.x, torch.arange(3)) and pop.target.shape == (3, 4)
    assert torch.allclose(pop.target.sum(1), torch.ones(3, dtype=torch.float64))
    assert pop.target[0].tolist() == pytest.approx([0.97, 0, 0, 0.03])
    x, y, tgt = sample_lam(2, 0.3, 20_000, gen(17))
    assert x.shape == y.shape == (20_000,) and tgt.shape == (20_000, 3)
    assert ((y == x) | (y == 2)).all() and abs((y == 2).float().mean().item() - 0.3) < 0.02
    assert abs((x == 0).float().mean().item() - 0.5) < 0.02


def test_batch_fn_trains():
    from mechrecall import TrainConfig, ZeroBiases, build_toy_model, train

    cfg = NoisyICLConfig.preset("official_code", seq_len=16)
    fn = noisy_icl_batch_fn(cfg, 8)
    b = fn(0, gen(0))
    assert isinstance(b, Batch) and b.tokens.shape == (8, 16)
    logits = torch.zeros(8, 16, cfg.d_vocab)
    rows, labels = select_positions(logits, b.targets, "mask", b.loss_mask)
    assert rows.shape[0] == labels.shape[0] == int(b.loss_mask.sum())
    model = build_toy_model(
        dict(
            n_layers=1,
            n_heads=1,
            d_model=8,
            d_head=8,
            d_mlp=16,
            d_vocab=cfg.d_vocab,
            n_ctx=16,
            act_fn="relu",
            normalization_type=None,
        ),
        [ZeroBiases()],
        seed=0,
    )
    res = train(model, fn, TrainConfig(steps=2, optimizer="sgd", lr=0.01, loss_positions="mask", progress=False))
    assert len(res.history["train"]) == 2
    ioi = noisy_icl_batch_fn(NoisyICLConfig.preset("paper_text", seq_len=16), 4, alpha=0.0, task="ioi")(3, gen(1))
    assert torch.equal(ioi.targets[:, -1], ioi.extras["ybar"])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: NoisyICLConfig(alpha=1.5), r"alpha=1\.5.*\[0, 1\]"),
        (lambda: NoisyICLConfig(alpha=-0.1), "alpha"),
        (lambda: NoisyICLConfig(triggers=(70,)), r"triggers contains 70.*\[0, 65\)"),
        (lambda: NoisyICLConfig(triggers=(2,)), "noise token"),
        (lambda: NoisyICLConfig.preset("paper_text", triggers=(65,)), r"triggers contains 65"),
        (lambda: NoisyICLConfig(triggers=()), "non-empty"),
        (lambda: NoisyICLConfig(triggers=(1, 1)), "duplicates"),
        (lambda: NoisyICLConfig(seq_len=2), r"seq_len=2.*>= 3"),
        (lambda: NoisyICLConfig.preset("paper-text"), r"unknown NoisyICLConfig preset 'paper-text'"),
        (lambda: NoisyICLConfig.preset("paper_text", sequence_length=8), "unknown NoisyICLConfig field"),
        (lambda: NoisyICLConfig(n_tokens=10), "tiny_shakespeare.*n_tokens=65"),
        (lambda: NoisyICLConfig(noise_token_id=70), "noise_token_id=70"),
        (lambda: NoisyICLConfig(unigram="zipf"), "unigram='zipf'"),
        (lambda: NoisyICLConfig(loss_positions="all"), "loss_positions='all'"),
        (lambda: NoisyICLConfig(output_pool="vocab"), "output_pool"),
        (lambda: NoisyICLConfig(after_noise="bigram"), "after_noise"),
        (lambda: sample_noisy_icl(NoisyICLConfig(), 0, gen()), "batch=0"),
        (lambda: sample_noisy_icl(NoisyICLConfig(), 4, 123), "torch.Generator"),
        (lambda: sample_noisy_icl(NoisyICLConfig(), 4, gen(), alpha=2.0), "alpha=2.0"),
        (lambda: sample_noisy_icl({"seq_len": 8}, 4, gen()), "NoisyICLConfig"),
        (lambda: sample_noisy_icl_reference(NoisyICLConfig(), 4, gen()), "random.Random"),
        (lambda: sample_synthetic_ioi(NoisyICLConfig(triggers=MULTI_TRIGGERS), 4, gen()), "one trigger"),
        (lambda: sample_synthetic_ioi(NoisyICLConfig(seq_len=6), 4, gen()), "seq_len >= 7"),
        (lambda: noisy_icl_batch_fn(NoisyICLConfig(), 4, task="bigram"), "task='bigram'"),
        (lambda: sample_lam(0, 0.1, None), "n=0"),
        (lambda: sample_lam(3, 1.2, 10, gen()), "alpha=1.2"),
        (lambda: sample_lam(3, 0.1, 10, None), "torch.Generator"),
    ],
)
def test_bad_input_raises_clear_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_batch_fn_draws_on_the_requested_device():
    cfg = NoisyICLConfig.preset("official_code", seq_len=32)
    direct = sample_noisy_icl(cfg, 8, gen(21))
    for device in (None, "cpu", torch.device("cpu")):  # the CPU: the trainer's generator itself, same numbers
        assert torch.equal(noisy_icl_batch_fn(cfg, 8, device=device)(0, gen(21)).tokens, direct.tokens)
    if torch.cuda.is_available():
        fn = noisy_icl_batch_fn(cfg, 8, device="cuda")
        a, b = fn(0, gen(21)), fn(0, gen(21))
        assert a.tokens.device.type == "cuda" and torch.equal(a.tokens, b.tokens)  # deterministic per (seed, step)
        assert not torch.equal(fn(0, gen(22)).tokens, a.tokens)
