"""The subcommands of ``stoicheia``, one module per job; :mod:`stoicheia.cli` dispatches to them.

Each module has ``add_parser(subparsers)``, which registers its arguments, and ``run(args) -> int``,
which does the job and returns the exit status (0, or 2 after one line on stderr). A module imports
at its top only what its arguments need; the library (and torch) is imported inside ``run``, so that
``stoicheia --help`` and a usage error answer at once (``benchmarks/startup.py`` measures it).

* :mod:`~stoicheia.commands.convert`: source files to MDS shards
* :mod:`~stoicheia.commands.add_corpus`: a user's EpiDoc corpus added to a run's shards, index
  and n-gram
* :mod:`~stoicheia.commands.index`: the parallels index of converted shards
* :mod:`~stoicheia.commands.parallels`: training passages sharing stretches with a text
* :mod:`~stoicheia.commands.status`: where a training run stands
* :mod:`~stoicheia.commands.evaluate`: held-out figures of a trained model
* :mod:`~stoicheia.commands.benchmark`: the restoration benchmark on the inscription dev set
* :mod:`~stoicheia.commands.restore`: fill the lacunae of a text
  (:mod:`~stoicheia.commands.restore_epidoc`: of EpiDoc files, ``--epidoc``)
* :mod:`~stoicheia.commands.report`: a run's curves
* :mod:`~stoicheia.commands.export`: a Hugging Face model folder
* :mod:`~stoicheia.commands.common`: what several of them share (the one-line error, model loading,
  the model and n-gram arguments, the process exit)

``stoicheia serve`` is in :mod:`stoicheia.serve.command`, beside the page it serves. The library
never imports from here.
"""
