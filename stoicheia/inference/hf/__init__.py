"""The Hugging Face remote code that ``stoicheia export`` copies, byte for byte, into an
export folder: ``configuration_stoicheia.py``, ``modeling_stoicheia.py`` and
``tokenization_stoicheia.py``.

These modules run *inside an export folder*, never from this package: they import the
encoder and the text encoder by relative imports (``from .stoicheia_encoder import ...``)
of the ``stoicheia_*.py`` files that the export writes beside them (copies of this package's
own ``stoicheia/model`` and ``stoicheia/text`` modules, see
:func:`stoicheia.inference.export.carried_code.write_code`). So an export folder needs only
``torch``, ``numpy`` and ``transformers``, and runs the very code that was trained. Importing
them from here raises ``ImportError``; nothing in the package does.
"""
