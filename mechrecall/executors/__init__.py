"""Where independent jobs run: worker processes on this machine, a Ray cluster, or Slurm through submitit.

==============  =======================================================================================
module          what it holds
==============  =======================================================================================
``base``        :class:`Task`, the :class:`Executor` interface and :func:`run_tasks`: longest first, as
                many at once as the executor has room for, a job whose worker died retried once
``local``       :class:`LocalExecutor`: spawned worker processes, one torch thread each, a GPU each
``ray_cluster`` :class:`RayExecutor`: one job a Ray task with its CPU / GPU request (``pip install .[ray]``)
``slurm``       :class:`SlurmExecutor`: one job an sbatch job through submitit (``pip install .[slurm]``)
``progress``    done / running / queued with an ETA from the jobs' costs; a live line and a log line per event
==============  =======================================================================================

:func:`make_executor` builds one by name, checking its options and its package before any work starts.
"""

from __future__ import annotations

from mechrecall.executors.base import EXECUTORS, Executor, Failure, Task, make_executor, run_tasks

__all__ = ["EXECUTORS", "Executor", "Failure", "Task", "make_executor", "run_tasks"]
