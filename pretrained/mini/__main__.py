"""``python -m pretrained.mini --out DIR``: pretrain the mini GPT-NeoX and save its checkpoint series in DIR."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PRESET_HELP = "tiny: seconds (the tests); laptop: the model the report reads (default)"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pretrained.mini",
        description="Pretrain a small GPT-NeoX (Pythia's architecture) on a generated corpus with known facts and "
        "save a Pythia-style checkpoint series (DIR/step{N}/, DIR/final/) with the ground truth (DIR/facts.json, "
        "DIR/ground_truth.json). Pass DIR to `python -m analyses.reproduce --model DIR`.",
        epilog="A rerun into the same DIR resumes.",
    )
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--preset", default="laptop", choices=("tiny", "laptop"), help=PRESET_HELP)
    p.add_argument("--seed", type=int, default=0, help="seed of the world, the corpus and the weights (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    if args.seed < 0:
        p.error(f"--seed {args.seed}; expected an integer >= 0")
    import logging

    from pretrained.mini import pretrain, read_ground_truth

    logging.basicConfig(format="%(message)s")
    logging.getLogger("pretrained.mini").setLevel(logging.INFO)
    try:
        out = pretrain(args.out, args.preset, args.seed, progress=not args.no_progress)
    except ValueError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an --out that cannot be written
        print(f"{p.prog}: error: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    truth = read_ground_truth(out)
    assert truth is not None
    final = truth["recall"][str(truth["series"][-1])]
    print(f"wrote {out}/step{{{','.join(map(str, truth['series']))}}}/, {out}/final/, {out}/ground_truth.json")
    print(
        f"final recall: train templates {final['train']['all']:.3f}, held-out templates {final['heldout']['all']:.3f}"
        f" (facts stated in the corpus: {min(truth['corpus']['fraction_of_facts_stated'].values()):.3f} or more)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
