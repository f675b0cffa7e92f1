"""The tabular modality plug-in: its declaration (plugin), job schema (config), data stage
(data), stages (pipeline), example sets (sets), cost estimate (cost), target loaders (targets)
and its distinguisher, generator and helper (see docs/ARCHITECTURE.md, "Add a modality")."""
