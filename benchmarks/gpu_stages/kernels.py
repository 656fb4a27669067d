"""The profiler's kernels by kind: attention, GEMM, element-wise (with reductions and norms),
optimizer, copies, other; a table of time per step and share.

On a GPU the rows are the CUDA kernels the profiler saw (their device time); on a CPU, the
``aten::`` operators (their self CPU time), so that the same code runs in CPU tests.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

#: (kind, pattern) checked in this order on the lower-cased kernel or operator name. Inductor
#: names its template kernels ``triton_tem_...``: FlexAttention's forward and backward are
#: templates, and so are matrix products only under max-autotune (they carry ``mm`` in the
#: name); cuBLAS's Hopper kernels are ``nvjet_...`` or ``sm90_xmma_gemm_...``.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "attention",
        re.compile(r"flex_attention|flash|fmha|attention|sdpa|triton_tem(?!.*mm)"),
    ),
    ("optimizer", re.compile(r"multi_tensor|adam|foreach")),
    ("copy", re.compile(r"memcpy|memset")),
    (
        "gemm",
        re.compile(
            r"gemm|nvjet|cutlass|xmma|cublas|matmul|^(aten::)?(mm|bmm|addmm|baddbmm|linear)$"
            r"|_mm_|_mm$|addmm|bmm"
        ),
    ),
    (
        "elementwise",
        re.compile(
            r"triton_|elementwise|reduce|at::native|norm|softmax|cross_entropy|nll|index|scatter"
            r"|gather|cat|fill|copy|where|mul|add|sub|div|exp|log|pow|rsqrt|mean|sum|gelu|embedding|"
            r"^aten::"
        ),
    ),
)


def kind_of(name: str) -> str:
    """The kind of a kernel or operator ``name`` (:data:`KINDS`), ``"other"`` if none."""
    low = name.lower()
    for kind, pattern in KINDS:
        if pattern.search(low):
            return kind
    return "other"


def _device_events(prof: Any) -> list[tuple[str, float]]:
    """``(kernel name, microseconds)`` of every device (CUDA) event of the profile."""
    from torch.autograd import DeviceType

    out = []
    for e in prof.events():
        if getattr(e, "device_type", None) == DeviceType.CUDA:
            out.append((e.name, float(e.time_range.elapsed_us())))
    return out


def _cpu_events(prof: Any) -> list[tuple[str, float]]:
    """``(operator, self CPU microseconds)`` of every ``aten::`` operator of the profile."""
    return [
        (e.name, float(e.self_cpu_time_total)) for e in prof.events() if e.name.startswith("aten::")
    ]


def kernel_table(prof: Any, steps: int, device: bool) -> dict[str, Any]:
    """Kinds of work in a ``torch.profiler.profile`` of ``steps`` training steps.

    Returns ``{"kernel_table": rows, "kernel_ms_per_step": total}``: rows ``[kind,
    ms per step, % of the total, kernels per step, the 3 longest names]`` after a header row,
    longest kind first. ``device``: count CUDA kernels (device time), else CPU operators.
    """
    events = _device_events(prof) if device else _cpu_events(prof)
    time_by: dict[str, float] = defaultdict(float)
    count_by: dict[str, int] = defaultdict(int)
    names: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name, us in events:
        kind = kind_of(name)
        time_by[kind] += us
        count_by[kind] += 1
        names[kind][name] += us
    total = sum(time_by.values())
    rows: list[list[Any]] = [["kind", "ms/step", "%", "kernels/step", "longest"]]
    for kind in sorted(time_by, key=lambda k: -time_by[k]):
        top = sorted(names[kind], key=lambda n: -names[kind][n])[:3]
        rows.append(
            [
                kind,
                round(time_by[kind] / 1e3 / steps, 3),
                round(100 * time_by[kind] / total, 1) if total else 0.0,
                round(count_by[kind] / steps, 1),
                "; ".join(n[:60] for n in top),
            ]
        )
    return {"kernel_table": rows, "kernel_ms_per_step": round(total / 1e3 / steps, 3)}
