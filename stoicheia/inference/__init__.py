"""Using a trained model: load it (:mod:`.loading`), evaluate it (:mod:`.evaluate`, with the
letter n-gram baseline of :mod:`.ngram`), export it for ``transformers`` (:mod:`.export`),
restore texts with it (:mod:`.restore`, searching with :mod:`.decoding`).

Data flow: this package uses ``text``, ``data`` and ``model``; the training package may use it
(the ``restoration_example`` callback decodes with :mod:`.restore`), never the reverse."""
