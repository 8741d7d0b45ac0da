"""First- and second-step accuracies of an IC-recall model (Huang, Nichani, Lee & Ge, §5, Fig 3), with the
ceilings that identifiability allows.

* ``acc_relation_exact``: argmax of the relation logits at EoS is r*; ``acc_relation_consistent``: it is a
  relation consistent with the context; ``bayes_ceiling``: E[1/K] on the test set (no model can do better).
* ``acc_answer_teacher_forced``: the second step with r* appended (the paper's L2); ``acc_final``: end to
  end, the model's own decoded relation appended; ``answer_ceiling``: the best end-to-end accuracy possible.
* ``acc_answer_given_own_relation``: the second step executes the decoded relation r̂ (answer = r̂(s_{k+1})).
* ``soft_relation`` / ``soft_answer``: mean p1(r*) / p2(a*) at temperature T (the theory's "accuracy").
"""

from __future__ import annotations

import torch

from analyses.papers.ic_recall.task import ICRecallData, ICRecallTask
from analyses.papers.ic_recall.training import step_logits


@torch.no_grad()
def accuracy(model: torch.nn.Module, task: ICRecallTask, test: ICRecallData, T: float) -> dict[str, float]:
    """The metrics of the module docstring on ``test``."""
    rel_logits, ans_logits = step_logits(model, task, test)
    pred_rel = rel_logits.argmax(-1)
    _, own_logits = step_logits(model, task, test, relation=pred_rel)
    pred_final = own_logits.argmax(-1)
    consistent = task.consistent(test)
    own_answer = task.rel[pred_rel, test.subjects[:, -1]]
    types = task.sequence_types(test) if task.k >= 1 else {}
    out = {
        "acc_relation_exact": (pred_rel == test.relation).double().mean(),
        "acc_relation_consistent": consistent.gather(1, pred_rel[:, None]).double().mean(),
        "bayes_ceiling": task.bayes_ceiling(test),
        "acc_answer_teacher_forced": (ans_logits.argmax(-1) == test.answer).double().mean(),
        "acc_final": (pred_final == test.answer).double().mean(),
        "answer_ceiling": task.answer_ceiling(test),
        "acc_answer_given_own_relation": (pred_final == own_answer).double().mean(),
        "soft_relation": torch.softmax(rel_logits.double() / T, -1).gather(1, test.relation[:, None]).mean(),
        "soft_answer": torch.softmax(ans_logits.double() / T, -1).gather(1, test.answer[:, None]).mean(),
        "p_confusing": types["confusing"].double().mean(),
        "p_mismatched": types["mismatched"].double().mean(),
    }
    return {k: float(v) for k, v in out.items()}


@torch.no_grad()
def no_cot_answer_accuracy(model: torch.nn.Module, task: ICRecallTask, test: ICRecallData) -> float:
    """Answer read directly at EoS without the relation step (Lemma B.1: all answer logits tie there)."""
    if not hasattr(model, "cfg"):
        raise ValueError("no_cot_answer_accuracy needs the TransformerLens model")
    logits = model(test.tokens[:, : task.relation_pos + 1])[:, -1, task.n : 2 * task.n]
    return float((logits.argmax(-1) == test.answer).double().mean())
