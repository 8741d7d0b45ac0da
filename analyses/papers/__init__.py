"""One package per paper, every one with the same modules in the same roles.

==================  ======================================================================================
package             paper
==================  ======================================================================================
``distributional``  Distributional Associations vs In-Context Reasoning: A Study of Feed-Forward and
                    Attention Layers (Chen, Bruna & Bietti) — noisy in-context recall and LASER on Pythia
``induction_heads`` On the Emergence of Induction Heads for In-Context Learning (Musat et al.)
``contextual_recall`` Understanding Contextual Recall in Transformers: How Finetuning Enables In-Context
                    Reasoning over Pretraining Knowledge (Vasudeva, Deora, Bietti, Sharan & Thrampoulidis)
``ic_recall``       Fine-Tuning Dynamics of In-Context Factual Recall in Transformers (Huang, Nichani, Lee & Ge)
==================  ======================================================================================

==============  ==========================================================================================
module          role (the same in every package)
==============  ==========================================================================================
``presets``     typed presets: a frozen dataclass subclassing ``mechrecall.presets.Preset`` and ``PRESETS``
``data``        data generators, prompt and fact tables, corpus statistics
``models``      model configs (``HookedTransformerConfig``), builders, hand constructions
``runs``        train and measure: functions returning results dictionaries (no claims, no figures)
``metrics``     measurements on a model: probes, evaluation, subspaces
``pretrained``  the paper's (or our extension's) work on Pythia / GPT-2 checkpoints
``claims``      ``CLAIMS``: the declarative claims table (``mechrecall.claims.ClaimSpec``)
``figures``     matplotlib figures and HTML views of results and models
``parts``       the experiment's parts: short glue from the context to runs, results and figures
``theory``      closed forms, ODEs and the theorems' quantities
==============  ==========================================================================================

Which experiment runs which package is ``analyses.registry.EXPERIMENTS``. A paper package may import the core
(``mechrecall``), ``hooks``, ``pretrained`` and the generic analyses, never another paper; something moves down
when a second paper needs it.
"""
