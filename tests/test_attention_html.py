"""Tests of ``analyses.attention_html``: attention patterns as HTML that renders with no network.

The key test opens the saved page in headless Chromium with the network made unreachable and checks
that CircuitsVis' React component really rendered: its head tiles and canvases exist in the DOM (with
every ``<script>`` removed first, so the props JSON and the bundle's strings cannot count), and the
screenshot shows a drawn heatmap. The CDN form of the same visualization is the control: under the
same flags it renders nothing, so the check cannot pass without rendering.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import pretrained
from analyses.attention_html import _check_self_contained, attention_pattern_html, save_attention_html
from mechrecall.builder import build_toy_model
from mechrecall.results import save_figure
from pretrained.testing import tiny_checkpoint

torch.set_num_threads(1)

TOY_CFG = dict(
    n_layers=2, n_heads=2, d_model=16, d_head=8, d_vocab=20, n_ctx=16, attn_only=True, normalization_type=None
)
TEXT = "The Eiffel Tower is in Paris"  # every word is in the tiny tokenizer's vocabulary
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # CI and this machine run as root
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers often have a 64 MB /dev/shm
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--proxy-server=http://127.0.0.1:9",  # discard port: every http(s) fetch fails ...
    "--host-resolver-rules=MAP * ~NOTFOUND",  # ... and so does every DNS lookup
    "--virtual-time-budget=5000",
    "--window-size=1000,1400",
]


@pytest.fixture(scope="module")
def toy():
    return build_toy_model(TOY_CFG, [], seed=0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A loaded tiny GPT-NeoX checkpoint (2 layers, 4 heads, word-level tokenizer)."""
    return pretrained.load(str(tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "neox", "gpt_neox", seed=0)))


def _cases(request, name: str):
    """(model, tokens, kwargs, expected token labels) for the toy model (ids, batch of 2) or the tiny one (text)."""
    if name == "toy":
        tokens = torch.tensor([[1, 2, 3, 4, 5, 6], [7, 3, 9, 3, 11, 12]])
        return request.getfixturevalue("toy"), tokens, dict(layer=1, batch_index=1), ["7", "3", "9", "3", "11", "12"]
    model = request.getfixturevalue("tiny")
    return model, TEXT, dict(layer=1, heads=[0, 3]), model.to_str_tokens(TEXT)


def _props(html: str) -> dict:
    """The props JSON passed to ``CircuitsVis.render`` (the inlined-bundle form)."""
    match = re.search(
        r"CircuitsVis\.render\(\s*\"[^\"]+\",\s*CircuitsVis\.AttentionHeads,\s*(\{.*\})\s*\)\s*</script>", html, re.S
    )
    assert match, "no inline CircuitsVis.render(..., CircuitsVis.AttentionHeads, props) call"
    return json.loads(match.group(1))


@pytest.mark.parametrize("name", ["toy", "tiny"])
def test_html_is_self_contained_and_embeds_the_pattern(request, name):
    model, tokens, kw, labels = _cases(request, name)
    html = attention_pattern_html(model, tokens, **kw)

    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<title>Attention patterns, layer 1</title>" in html
    assert "unpkg.com" not in html and not re.search(r"<script[^>]*\bsrc=", html)
    assert _check_self_contained(html) is html

    heads = kw.get("heads", range(model.cfg.n_heads))
    props = _props(html)
    assert props["attentionHeadNames"] == [f"L1H{h}" for h in heads]
    assert props["tokens"] == labels
    ids = model.to_tokens(tokens) if isinstance(tokens, str) else tokens
    _, cache = model.run_with_cache(ids, names_filter="blocks.1.attn.hook_pattern")
    expected = cache["blocks.1.attn.hook_pattern"][kw.get("batch_index", 0), list(heads)]
    torch.testing.assert_close(torch.tensor(props["attention"]), expected, rtol=0, atol=1e-6)


def test_str_tokens_and_title_override(toy):
    html = attention_pattern_html(toy, torch.tensor([1, 2, 3]), 0, str_tokens=["a", "b", "a"], title="A <b> & c")
    assert _props(html)["tokens"] == ["a", "b", "a"]
    assert "<title>A &lt;b&gt; &amp; c</title>" in html


def test_check_self_contained_rejects_network_loads(toy):
    from circuitsvis.attention import attention_heads

    cdn = str(attention_heads(attention=torch.eye(3)[None], tokens=["a", "b", "c"]))  # imports from unpkg.com
    for html in (
        cdn,
        '<script src="https://cdn.example/x.js"></script>',
        "<script src=//cdn.example/x.js></script>",
        '<link rel="stylesheet" href="http://cdn.example/x.css">',
        '<script>import("https://cdn.example/x.js")</script>',
    ):
        with pytest.raises(ValueError, match="not self-contained"):
            _check_self_contained(html)
    _check_self_contained(
        '<script>const doc = "https://example.org/docs"; const ns = "http://www.w3.org/2000/svg"</script>'
    )


def test_save_attention_html_writes_atomically(toy, tmp_path):
    path = save_attention_html(
        tmp_path / "figs" / "attention.html", toy, torch.tensor([1, 2, 3]), 0, heads=torch.tensor([1])
    )
    assert path == tmp_path / "figs" / "attention.html"
    assert [p.name for p in path.parent.iterdir()] == ["attention.html"]  # no temp file left behind
    assert _props(path.read_text(encoding="utf-8"))["attentionHeadNames"] == ["L0H1"]

    html = attention_pattern_html(toy, torch.tensor([1, 2, 3]), 0)
    save_figure(tmp_path / "run" / "attention.html", html)
    assert (tmp_path / "run" / "attention.html").read_text(encoding="utf-8") == html


def test_bad_inputs_raise_before_running(toy, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("the model ran before the inputs were checked")

    monkeypatch.setattr(toy, "run_with_cache", boom)
    tokens = torch.tensor([1, 2, 3])
    for layer in (2, -1):
        with pytest.raises(ValueError, match=rf"layer={layer} is out of range.*\[0, 1\]"):
            attention_pattern_html(toy, tokens, layer)
    with pytest.raises(ValueError, match=r"head=5 is out of range.*\[0, 1\]"):
        attention_pattern_html(toy, tokens, 0, heads=[0, 5])
    with pytest.raises(ValueError, match=r"batch_index=1 is out of range"):
        attention_pattern_html(toy, tokens, 0, batch_index=1)
    with pytest.raises(ValueError, match="no tokenizer"):
        attention_pattern_html(toy, "the cat", 0)
    with pytest.raises(ValueError, match="2 labels but the sequence has 3 tokens"):
        attention_pattern_html(toy, tokens, 0, str_tokens=["a", "b"])
    with pytest.raises(ValueError, match="int ids"):
        attention_pattern_html(toy, torch.rand(3), 0)


# --------------------------------------------------------------------------- rendering in a browser


def _render(page: Path, tmp_path: Path) -> tuple[str, Path]:
    """Open ``page`` in headless Chromium with no network; return (DOM after scripts ran, screenshot path)."""
    shot = page.with_suffix(".png")
    command = [
        CHROMIUM,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={tmp_path / ('profile-' + page.stem)}",
        f"--screenshot={shot}",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout, shot


def _rendered_markup(dom: str) -> str:
    """The DOM without its ``<script>`` elements: text in the props JSON or the JS bundle does not count."""
    return re.sub(r"<script\b.*?</script\s*>", "", dom, flags=re.S | re.I)


def _heatmap_pixels(png: Path) -> int | None:
    """Pixels of the heatmaps' blue-violet scale (blue well above red), or None without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return None
    return sum(n for n, (r, g, b) in Image.open(png).convert("RGB").getcolors(1 << 24) if b - r > 60 and b - g > 60)


@pytest.mark.parametrize("name", ["toy", "tiny"])
def test_renders_offline_in_headless_chromium(request, tmp_path, name):
    if CHROMIUM is None:
        pytest.skip(
            "Chromium not installed: no `chromium` or `chromium-browser` on PATH (.ci/run installs Debian's chromium)"
        )
    model, tokens, kw, _labels = _cases(request, name)
    heads = kw.get("heads", range(model.cfg.n_heads))
    page = save_attention_html(tmp_path / "attention.html", model, tokens, **kw)

    dom, shot = _render(page, tmp_path)
    markup = _rendered_markup(dom)
    # AttentionHeads draws one tile per head, titled by an <h4> with the head's name, holding a <canvas>
    # heatmap, plus one zoomed <canvas>. Before React runs, the page body holds only <h1> and an empty <div>.
    for h in heads:
        assert re.search(rf"<h4\b[^>]*>\s*L1H{h}\s*</h4>", markup), (
            f"head tile L1H{h} was not rendered:\n{markup[:2000]}"
        )
    assert markup.count("<canvas") >= len(heads) + 1
    blue = _heatmap_pixels(shot)
    assert blue is None or blue > 5000, f"no heatmap drawn in the screenshot ({blue} blue pixels)"

    # Control: the same visualization in its CDN form (JS imported from unpkg.com) renders nothing here.
    from circuitsvis.attention import attention_heads

    props = _props(page.read_text(encoding="utf-8"))
    cdn = attention_heads(
        attention=props["attention"], tokens=props["tokens"], attention_head_names=props["attentionHeadNames"]
    )
    cdn_page = tmp_path / "cdn.html"
    cdn_page.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{cdn}</body></html>', encoding="utf-8"
    )
    cdn_dom, cdn_shot = _render(cdn_page, tmp_path)
    assert "unpkg.com" in cdn_dom and "<h4" not in _rendered_markup(cdn_dom) and "<canvas" not in cdn_dom
    assert _heatmap_pixels(cdn_shot) in (None, 0)
