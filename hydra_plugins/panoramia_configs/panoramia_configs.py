"""Each registered modality plug-in's own config folder on Hydra's search path, after the
shared ``conf/`` (:func:`panoramia.pipeline.registry.plugin_config_folders`).

Hydra finds this module by scanning the ``hydra_plugins`` namespace package, and asks it for
every search path it builds (``panoramia-audit``, the compose API of the preflight, the
service's door and the tests), before it reads the primary config: so a plug-in's primary
config (``--config-name text``) and its options are found as if they were in ``conf/``.
Apps other than panoramia's (whose search path does not hold its shared ``conf/``) are left
alone.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class PanoramiaConfigs(SearchPathPlugin):
    """Appends the modality plug-ins' config folders where panoramia's ``conf/`` is searched."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        try:  # never in the way of another Hydra app: an unreadable or stale setup is not ours
            from panoramia.pipeline.registry import config_dir, plugin_config_folders

            shared = config_dir()
        except Exception:
            return
        searched = {
            Path(element.path.removeprefix("file://")).resolve()
            for element in search_path.get_path()
            if element.path and not element.path.startswith(("pkg://", "structured://"))
        }
        if shared not in searched:
            return
        for folder in plugin_config_folders():
            if folder not in searched:
                search_path.append(provider="panoramia", path=f"file://{folder}")
