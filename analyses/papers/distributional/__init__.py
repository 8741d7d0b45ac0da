"""Distributional Associations vs In-Context Reasoning: A Study of Feed-Forward and Attention Layers
(Chen, Bruna & Bietti).

==========================  ==================================================================================
module                      what it holds
==========================  ==================================================================================
``char_stats``              tiny-Shakespeare character unigram / bigram counts (packaged JSON, with its sha256)
``make_char_stats``         recomputes that JSON from the public text
``data``                    the noisy in-context-recall generators (§3, App. B), synthetic IOI (App. J)
``models``                  the two-layer model of Eq. 1 with its FF variants, the theory model of Eq. 2
``probes``                  p(ȳ), p(τ), loss under interventions, FF margin, attention on [q, ȳ] vs [q, τ]
``theory``                  Theorem 1, App. B.3, Theorem 3, the linear associative memory of Fig 18
``noisy_icl``               the parts of ``python -m analyses.noisy_icl`` and their figures
``prompts``                 Table 1, Table 5, App. I.1 and IOI prompts (§4.1)
``laser_pythia``            the parts of ``python -m analyses.laser_pythia`` (LASER on Pythia / GPT-2, §4)
==========================  ==================================================================================
"""
