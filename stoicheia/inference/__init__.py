"""Using a trained model, one folder or module per job: load it (:mod:`.loading`) and name it
on any machine (:mod:`.model_identity`), evaluate it (:mod:`.evaluate`, with the letter n-gram
baseline of :mod:`.ngram` and the run's own evaluation sets of :mod:`.run_sets`), export it for
``transformers`` (:mod:`.export`), restore texts with it (:mod:`.restore`, searching with
:mod:`.restore.decoding`), the lacunae of EpiDoc files (:mod:`.epidoc`), find parallels
(:mod:`.parallels`) and measure restoration as the field does (:mod:`.benchmark`).

Data flow: this package uses ``text``, ``data`` and ``model``; the training package may use it
(the ``restoration_example`` callback decodes with :mod:`.restore`), never the reverse."""
