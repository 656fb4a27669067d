"""The data of the anneal: staged tier mixes over the decay window (default: gold only)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from composer.core import Callback, State
from composer.loggers import Logger

from stoicheia.data.loader import PackedLoader
from stoicheia.data.position import phase_at
from stoicheia.train.callbacks.anneal_control import AnnealControl

log = logging.getLogger(__name__)

#: From the anneal start to its end, the gold tier only.
DEFAULT_PHASES: list[list[Any]] = [[1.0, {"gold": 1.0}]]


def check_phases(phases: Any) -> list[tuple[float, dict[str, float]]]:
    """Validate ``anneal_phases``: a list of ``[end_fraction, {tier: weight}]`` with end
    fractions increasing in (0, 1], the last 1.0, weights >= 0 and one positive per phase.
    Raises ``ValueError`` naming the bad entry."""
    if not isinstance(phases, (list, tuple)) or not phases:
        raise ValueError(
            "anneal_data.phases must be a non-empty list of [end_fraction, {tier: weight}], got "
            f"{phases!r}"
        )
    out: list[tuple[float, dict[str, float]]] = []
    last = 0.0
    for k, entry in enumerate(phases):
        if (
            not isinstance(entry, (list, tuple))
            or len(entry) != 2
            or not isinstance(entry[1], Mapping)
        ):
            raise ValueError(
                f"anneal_data.phases[{k}] must be [end_fraction, {{tier: weight}}], got {entry!r}"
            )
        end, mix = float(entry[0]), {str(t): float(w) for t, w in entry[1].items()}
        if not last < end <= 1.0:
            raise ValueError(
                f"anneal_data.phases[{k}]: end fraction {end} must be in ({last}, 1.0] (fractions "
                "of the decay window, increasing)"
            )
        if not all(math.isfinite(w) for w in mix.values()):
            raise ValueError(f"anneal_data.phases[{k}]: weights must be finite numbers, got {mix}")
        if any(w < 0 for w in mix.values()) or not any(w > 0 for w in mix.values()):
            raise ValueError(
                f"anneal_data.phases[{k}]: weights must be >= 0 with at least one positive, got "
                f"{mix}"
            )
        out.append((end, mix))
        last = end
    if last != 1.0:
        raise ValueError(
            f"anneal_data.phases: the last phase must end at 1.0 (the end of the decay), not {last}"
        )
    return out


class AnnealData(Callback):
    """Switches the training data to the anneal's tier mixes at exact batches.

    Phase ``i`` (1-based) of ``phases`` runs from batch ``start + round(e_{i-1} * D)`` to
    ``start + round(e_i * D)`` (``start``: the anneal start, ``D``: decay length in batches,
    ``e_0 = 0``). Before the anneal start the mix is ``data.tier_weights`` (mix 0). The batches
    are computed from the checkpointed anneal start, and the packer switches before drawing
    the first batch of a phase (``BEFORE_DATALOADER``), dropping the rows in flight, so a run
    resumed inside a phase or exactly at a switch sees the same batches.

    Logs every switch (step, phase, mix) and ``data/phase`` of every batch.

    Args:
        control, loader, tier_weights: injected (the run's :class:`AnnealControl`, packer,
            and ``data.tier_weights``).
        phases: ``[[end_fraction, {tier: weight}], ...]``: fractions of the decay window,
            increasing, the last 1.0 (default ``[[1.0, {gold: 1}]]``: gold only from the
            anneal start). The weights are shares of letters, as ``data.tier_weights``
            (docs/configuration.md, "The tier mix in letters"); the run prints each phase's
            shares and each tier's reads over the planned run at start.
    """

    def __init__(
        self,
        control: AnnealControl,
        loader: PackedLoader,
        tier_weights: Mapping[str, float],
        phases: list[list[Any]] | None = None,
    ) -> None:
        self.control = control
        self.loader = loader
        self.phases = check_phases(DEFAULT_PHASES if phases is None else phases)
        for k, (_, mix) in enumerate(self.phases):
            try:
                if loader.factory is not None:
                    loader.factory.check(mix)
            except (FileNotFoundError, ValueError) as err:
                raise ValueError(
                    f"anneal_data.phases[{k}] {mix} cannot be read: {str(err).split(': ', 1)[0]}; "
                    "remove that tier from "
                    "the phase (callbacks.anneal_data.phases) or convert shards for it"
                ) from err
        loader.set_mixes([dict(tier_weights), *(mix for _, mix in self.phases)])
        self._shown: int | None = None

    def schedule(self) -> list[tuple[int, int]]:
        """``[(first batch, mix index), ...]`` of the phases; empty before the anneal decision."""
        if not self.control.decided:
            return []
        start, decay = self.control.effective_start, self.control.shape.decay_steps
        out, prev = [], 0.0
        for i, (end, _) in enumerate(self.phases, start=1):
            out.append((start + round(prev * decay), i))
            prev = end
        return out

    def phase_at(self, step: int) -> int:
        """The mix index for batch ``step`` (0 = stable phase)."""
        return phase_at(self.schedule(), step)

    def fit_start(self, state: State, logger: Logger) -> None:
        self.loader.set_schedule(self.schedule())

    def before_dataloader(self, state: State, logger: Logger) -> None:
        self.loader.set_schedule(self.schedule())

    def batch_start(self, state: State, logger: Logger) -> None:
        step = int(state.timestamp.batch)
        phase = self.loader.position.phase
        if phase != self.phase_at(step):
            raise RuntimeError(
                f"the packer is in tier mix {phase} at batch {step}, the schedule says "
                f"{self.phase_at(step)}"
            )
        if phase != self._shown:
            mix = ", ".join(f"{t} {w:g}" for t, w in self.loader.mixes[phase].items() if w > 0)
            if phase == 0 and self._shown is None:
                pass
            elif self._shown is None:
                log.info(
                    "[data] step %d: resuming in anneal phase %d of %d (mix: %s)",
                    step,
                    phase,
                    len(self.phases),
                    mix,
                )
            else:
                log.info(
                    "[data] step %d: anneal phase %d of %d starts, tier mix: %s",
                    step,
                    phase,
                    len(self.phases),
                    mix,
                )
            self._shown = phase

    def batch_end(self, state: State, logger: Logger) -> None:
        # logged with the batch's loss: the line of step s is batch s - 1
        logger.log_metrics({"data/phase": float(self.loader.position.phase)})
