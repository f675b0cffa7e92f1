"""The helper model h (trained on synthetic data only, never sees the target) and the baseline."""
