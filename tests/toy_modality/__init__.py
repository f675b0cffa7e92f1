"""A fourth, toy modality built from the files docs/ARCHITECTURE.md's "Add a modality" lists,
and nothing else: points in a few dimensions with a class label, a linear softmax target, a
Gaussian generator and a logistic-regression distinguisher. It is not shipped: the test
registers it (:func:`panoramia.plugins.register`) and runs it through the stage graph and
the report as ``panoramia-audit --config-name toy`` would
(``tests/pipeline/test_toy_modality.py``)."""
