"""In-context factual recall (Huang, Nichani, Lee & Ge): task, model, training, analyses. See README.md."""
