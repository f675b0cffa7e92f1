"""Hydra's plug-in that puts each panoramia modality plug-in's configs on the search path."""
