"""Restore the lacunae of EpiDoc files (``stoicheia restore --epidoc``), one module per job.

Documentation for users: ``docs/restoring-epidoc.md``. The steps, in the order a file goes
through them:

* :mod:`.edition`: read the file and its Greek edition as the training data's EpiDoc reader
  reads it, each ``<gap>`` known as a Leiden lacuna;
* :mod:`.byte_spans`: every element's byte span in the original file, so a ``<gap>`` found
  with lxml is known by its bytes;
* :mod:`.plan`: which gaps are filled, which are left (and why), and the pieces of the edition
  the decoder is given (:mod:`.pieces`: a long edition cut at word breaks);
* :mod:`.restore`: :func:`~.restore.restore_epidoc`, the decoding of each piece;
* :mod:`.write_back`: the restored file, written by edits at located byte offsets (every
  other byte as it was) with the model declared in the header;
* :mod:`.outcomes`: what became of each gap, and the error for a file that cannot be restored;
* :mod:`.corpus`: a corpus of files, resumable, one line per file refused.
"""
