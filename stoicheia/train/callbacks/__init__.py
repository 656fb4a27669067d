"""Training callbacks, one per file. Built by name from the ``callbacks:`` section of the YAML
through :mod:`stoicheia.train.registry` (``AnnealControl`` and ``EvalHistory`` are always on)."""
