"""The stages of ``benchmarks/gpu_check.py``, one module per job.

:mod:`.record` (figures to disk as they come), :mod:`.shapes` (the GPU configuration's shape
and the tiny CPU one), :mod:`.rows` (synthetic packed rows), :mod:`.core` (environment,
FlexAttention against SDPA), :mod:`.trunk` (the compiled trunk: compile seconds, step time,
MFU, memory, host syncs, the ``no_grad`` evaluation graph), :mod:`.kernels` (the profiler's
kernel table) need only torch and numpy (and the stoicheia modules that need only those);
:mod:`.composer_stages` (the training path through Composer, the recipe) needs Composer,
streaming and omegaconf and is imported only when they import.
"""
