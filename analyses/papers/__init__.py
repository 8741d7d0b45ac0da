"""One package per paper: its data generators, models (builder recipes), probes, theory, figures and prompts.

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

A paper package may import the core (``mechrecall``), ``hooks``, ``pretrained`` and the generic analyses,
never another paper; something moves down when a second paper needs it.
"""
