"""The restoration page: ``stoicheia serve CHECKPOINT`` (:mod:`.command`), a FastAPI
application (:mod:`.app`) with a JSON API (:mod:`.schemas`, the restore result JSON of
``RestoreResult.to_json()``, EpiDoc fragments of :mod:`.fragment`) and a page in ``static/``.

Data flow: this package uses ``inference`` and ``text``; nothing imports it but the CLI.
See ``docs/restoration-page.md``."""
