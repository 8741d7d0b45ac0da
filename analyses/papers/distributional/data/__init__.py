"""The data of the paper (Chen, Bruna & Bietti): one module per topic.

==================  ===========================================================================================
module              what it holds
==================  ===========================================================================================
``recall``          the noisy in-context-recall generators (§3, App. B), synthetic IOI (App. J), the LAM data of
                    Fig 18; ``NoisyICLConfig`` and its data presets ``DATA_PRESETS``
``char_stats``      tiny-Shakespeare character unigram / bigram counts (packaged JSON, with its sha256), and the
                    command that recomputes that JSON from the public text
``prompts``         Table 1, Table 5, App. I.1 and IOI prompts (§4.1)
==================  ===========================================================================================
"""
