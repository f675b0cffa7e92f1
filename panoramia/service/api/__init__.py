"""The HTTP API: the app, its request limits and its request and answer schemas."""
