"""The console: server-rendered pages without scripts, signed sessions, the uploads page."""
