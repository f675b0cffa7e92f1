"""The modality plug-ins, one folder each (``tabular``, ``image``, ``text``).

A plug-in's ``plugin.py`` declares its :class:`panoramia.plugins.Modality`; the registry,
:mod:`panoramia.plugins`, names the shipped ones and is what the rest of the program asks.
No plug-in imports another (``lint-imports``). docs/ARCHITECTURE.md ("Add a modality") lists
the files a plug-in holds.
"""
