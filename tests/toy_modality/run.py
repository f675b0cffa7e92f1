"""``python -m tests.toy_modality.run --config-name toy …``: ``panoramia-audit`` with the toy
plug-in registered first."""

from panoramia.pipeline.app import main
from panoramia.plugins import register
from tests.toy_modality.plugin import PLUGIN

if __name__ == "__main__":
    register(PLUGIN)
    main()
