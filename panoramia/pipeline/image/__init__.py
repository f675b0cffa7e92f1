"""The image wing of the audit job: its schema (config), data stage (data), stages (pipeline)."""
