"""The audit pipeline run by ``panoramia-audit`` (a Hydra application)."""
