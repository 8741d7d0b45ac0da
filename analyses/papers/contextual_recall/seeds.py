"""Spread of claim numbers over several seeds' ``results.json`` (how the smoke thresholds were set).

python -m analyses.papers.contextual_recall.seeds runs/s0 runs/s1 runs/s2 runs/s3 runs/s4
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def collect(paths) -> dict[str, dict]:
    """``{claim id: {"seeds": [...], "values": [...], "min", "max", "mean"}}`` over the results files under ``paths``
    (a run folder ``OUT`` or its ``OUT/contextual_recall/results.json``)."""
    out: dict[str, dict] = {}
    for p in paths:
        p = Path(p)
        f = p if p.is_file() else p / "contextual_recall" / "results.json"
        data = json.loads(f.read_text())
        seed = data["config"]["seed"]
        for row in data["claims"]:
            if row["ours"] is None:
                continue
            d = out.setdefault(row["id"], {"seeds": [], "values": []})
            d["seeds"].append(seed)
            d["values"].append(row["ours"])
    for d in out.values():
        v = d["values"]
        d.update(min=min(v), max=max(v), mean=sum(v) / len(v))
    return out


def main(argv=None) -> int:
    table = collect(argv if argv is not None else sys.argv[1:])
    for cid, d in sorted(table.items()):
        vals = ", ".join(f"{v:.3f}" for v in d["values"])
        print(f"{cid:<70} n={len(d['values'])} min {d['min']:.3f} max {d['max']:.3f} mean {d['mean']:.3f}  [{vals}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
