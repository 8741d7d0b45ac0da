"""Shared test set-up: one CPU thread (tiny models run far faster), no hub access."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import matplotlib

matplotlib.use("Agg")

import torch

torch.set_num_threads(1)
