"""Small torch models: the demo targets and the helper's architectures (imports torch)."""
