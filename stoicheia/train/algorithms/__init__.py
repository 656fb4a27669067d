"""Training algorithms, one per file. Built by name from the ``algorithms:`` section of the
YAML through :mod:`stoicheia.train.registry`."""
