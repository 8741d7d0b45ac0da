"""A part's tasks (``Part.tasks``: a sweep's cells) are jobs of the report's executor, run before the part, which
then finds them done; on an executor whose workers do not share ``OUT`` their files travel with the part's job."""

from __future__ import annotations

import json

import pytest

from analyses.report.runner import Job, run_all
from mechrecall.experiment import Experiment, Part, PartResult, PartTask
from mechrecall.io import atomic_write_json
from mechrecall.presets import Preset
from tests.inline_executor import InlineExecutor

XS = (1, 2, 3)
COMPUTED_BY_THE_PART: list[int] = []


def square(x: int) -> dict[str, int]:
    return {"value": x * x}


def _cells(ctx) -> list[PartTask]:
    folder = ctx.run_dir(ctx.part)
    return [PartTask(f"x{x}", folder / f"x{x}.json", square, (x,), seconds=float(x)) for x in XS]


def _sweep(ctx) -> PartResult:
    """The part: every cell's value from its file, computed here only where no file is (a part run alone)."""
    values = []
    for task in _cells(ctx):
        if not task.path.is_file():
            COMPUTED_BY_THE_PART.append(task.args[0])
            atomic_write_json(task.path, task.fn(*task.args))
        values.append(json.loads(task.path.read_text())["value"])
    return PartResult({"total": sum(values)})


TOY = Experiment(
    name="toy_tasks",
    paper="p",
    summary="a part whose cells are tasks",
    parts=(Part("sweep", _sweep, "three cells", tasks=_cells),),
    preset_table={"smoke": Preset()},
    presets=("smoke",),
)


@pytest.mark.parametrize("shared", [True, False], ids=["shared OUT", "files shipped"])
def test_a_parts_tasks_run_on_the_executor_before_the_part(tmp_path, shared):
    COMPUTED_BY_THE_PART.clear()
    executor = InlineExecutor(shared_out=shared)
    records = run_all([Job("toy_tasks", "smoke", ("sweep",), module=f"{__name__}:TOY")], tmp_path, executor=executor)
    assert executor.submitted == ["toy_tasks:sweep/x3", "toy_tasks:sweep/x2", "toy_tasks:sweep/x1", "toy_tasks:sweep"]
    assert COMPUTED_BY_THE_PART == []  # every cell was a job of the executor; the part found them done
    assert records["toy_tasks"]["status"] == "done"
    payload = json.loads((tmp_path / "toy_tasks" / "results.json").read_text())
    assert payload["parts"]["sweep"]["results"] == {"total": 14}
    cells = sorted(p.name for p in (tmp_path / "toy_tasks" / "runs" / "sweep").iterdir())
    assert cells == ["x1.json", "x2.json", "x3.json"]


def test_only_unfinished_tasks_are_jobs_and_a_part_run_alone_does_its_own(tmp_path):
    COMPUTED_BY_THE_PART.clear()
    folder = tmp_path / "toy_tasks" / "runs" / "sweep"
    folder.mkdir(parents=True)
    atomic_write_json(folder / "x2.json", square(2))
    assert [t.id for t in TOY.part_tasks(tmp_path, preset="smoke", part="sweep")] == ["x1", "x3"]
    TOY.run(tmp_path / "alone", preset="smoke")
    assert COMPUTED_BY_THE_PART == [1, 2, 3]
