"""The restoration benchmark (``stoicheia benchmark``): restoration measured the way the field
measures it, one module per job.

* :mod:`.protocols`: the dev texts and the three protocols' gaps (tasks);
* :mod:`.run`: the decoders (model, n-gram, fused) and the run over the tasks;
* :mod:`.halves`, :mod:`.fusion`: the selection and report halves, the fusion grid chosen on
  the selection half; :mod:`.parallels`: the parallels row and the ``fused3`` family;
* :mod:`.scoring`: CER, top-k and calibration of the answers;
* :mod:`.contamination`, :mod:`.views`: dev texts with a training twin, and the views without
  them; :mod:`.bootstrap`: intervals of the differences between decoders;
* :mod:`.compare`: two runs on the same dev set compared gap by gap, overall or per corpus
  (``scripts/benchmark_compare.py``, ``scripts/benchmark_matrix.py``);
* :mod:`.report`: the table, the JSON result and the reliability plot;
* :mod:`.defaults`: the defaults the command line shows (no NumPy imported).

This file imports nothing, so that ``stoicheia benchmark --help`` reads :mod:`.defaults`
without NumPy, torch or datasketch (``benchmarks/startup.py`` times the command line's start).
"""
