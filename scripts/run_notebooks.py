"""Execute the notebooks in a real Jupyter kernel and save them with their outputs (``make notebooks``).

    python scripts/run_notebooks.py                          # every notebooks/*.ipynb, full mode, saved in place
    python scripts/run_notebooks.py notebooks/quickstart.ipynb --fast --no-save   # FAST=1, as CI runs them

Each notebook runs in a fresh ``python3`` kernel (nbclient, the engine of ``jupyter nbconvert --execute``) with
its folder as working directory; a cell error stops it with the cell's traceback. The kernel's environment says
the mode: ``FAST=1`` shrinks every notebook to seconds-long runs, and ``MECHRECALL_RUNS`` (default ``../runs``,
the repository's ``runs/``) is where a notebook writes its runs and looks for a report run to reuse.
A saved notebook records its mode and wall time in its metadata (``mechrecall``), which the README's table quotes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def notebooks() -> list[Path]:
    """Every notebook of the repository, the quickstart first."""
    found = sorted(NOTEBOOKS.glob("*.ipynb"))
    return sorted(found, key=lambda p: p.stem != "quickstart")


def execute(
    path: str | os.PathLike[str],
    *,
    fast: bool,
    runs: str | os.PathLike[str] | None = None,
    extra_cells: Sequence[str] = (),
    timeout: int = 1800,
) -> tuple[object, float]:
    """Run ``path`` top to bottom in a new kernel, ``extra_cells`` (code) appended (and kept in the returned
    notebook); returns ``(notebook, seconds)``.

    Raises ``nbclient.exceptions.CellExecutionError`` (the failing cell and its traceback) on any error.
    """
    import tempfile

    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in extra_cells)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the kernel's own inline backend
    env["FAST"] = "1" if fast else "0"
    env["PYTHONUNBUFFERED"] = "1"
    if runs is not None:
        env["MECHRECALL_RUNS"] = str(Path(runs).resolve())
    with tempfile.TemporaryDirectory() as sockets:  # the kernel talks over Unix sockets, never TCP
        km = KernelManager(kernel_name="python3", transport="ipc", ip=str(Path(sockets) / "kernel"))
        client = NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(path.parent)}})
        started = time.perf_counter()
        client.execute(env=env)
        seconds = time.perf_counter() - started
    return nb, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks to run (default: notebooks/*.ipynb)")
    parser.add_argument("--fast", action="store_true", help="FAST=1: the seconds-long mode CI runs")
    parser.add_argument("--no-save", action="store_true", help="leave the notebooks on disk as they are")
    args = parser.parse_args(argv)
    paths = args.paths or notebooks()
    for p in paths:
        if p.suffix != ".ipynb" or not p.is_file():
            parser.error(f"{p}: not a notebook file; expected a path to an .ipynb")
    import nbformat

    mode = "fast" if args.fast else "full"
    rows = []
    for p in paths:
        print(f"{p}: running ({mode} mode)", flush=True)
        nb, seconds = execute(p, fast=args.fast)
        rows.append((p, seconds))
        if not args.no_save:
            nb.metadata["mechrecall"] = {"mode": mode, "seconds": round(seconds)}
            nbformat.write(nb, p)
        print(f"{p}: {seconds:.0f} s", flush=True)
    print(f"\n| notebook | {mode} mode |\n|---|---|")
    for p, seconds in rows:
        print(f"| `{p.name}` | {seconds:.0f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
