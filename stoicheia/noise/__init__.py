"""Masked-diffusion corruption of one record's letter planes.

A record of ``n`` slots arrives as aligned ``uint8`` planes of shape ``(n,)`` (``chars``,
``boundary``, ``dia``, ``cap``, ``punct`` and, optionally, ``lacuna``; ids in
:mod:`stoicheia.text.alphabet`).
:func:`noise_record` draws one corruption rate ``t`` and one corruption *pattern* for the
record, corrupts the letters, hides some auxiliary channels, and returns a :class:`Noised`
record of ``M >= n`` slots (``M > n`` only for the ``elastic`` and ``lacuna`` patterns, whose
lacunae may have an unknown width) holding the model inputs, the targets and the per-slot loss
weights.

Training objective (MDLM; Sahoo et al. 2024, "Simple and Effective Masked Diffusion Language
Models", NeurIPS 2024): for the linear schedule ``alpha_t = 1 - t`` the continuous-time ELBO weights
the cross-entropy of each masked token by ``1/t``. Every record gets one rate
``t ~ Beta(2, 4)`` clipped to ``[t_min, t_max]``, and each masked character slot gets weight
``1/t``. The structured patterns (span, word, half-word, elastic) are not the iid absorbing
process of the ELBO, but mask about ``t * n`` letters on average, so the same weight keeps the
patterns on one scale. ``loss_weight: uniform`` (:class:`NoiseConfig`) replaces ``1/t`` by the
constant ``1/E[t]``: the same scale, without the noisy gradient of low-rate records.

Patterns (one per record, drawn with :attr:`NoiseConfig.weights`):

``span``
    geometric-length runs (mean ``span_mean``, capped at ``span_max``) that ignore word edges.
``word``
    whole words.
``half_word``
    a strict part (1..L-1 letters) of each of several words of ``L >= 2`` letters, anchored at
    the word's end, start or middle (a middle part touches neither end, so needs ``L >= 3``).
``elastic``
    whole words whose width is hidden too: a word of ``L`` letters becomes
    ``L + 2 + u`` MASK slots, ``u`` uniform in ``0..elastic_pad_max`` whatever ``L``; the
    targets are the ``L`` letters followed by BLANK.
``iid``
    each letter masked independently with probability ``t``.
``substitute``
    each letter replaced, with probability ``t``, by a uniformly drawn *different* letter,
    with no mask signal.
``lacuna``
    lost stretches as real editions show them: width, place in the word, the text's first and
    last word and unknown extent drawn from the table measured on the EpiDoc corpora
    (:mod:`stoicheia.noise.lacuna_table`, docs/noise.md); a stretch of unknown extent gets
    ``2 + u`` BLANK slots after it as an elastic word does. Weight 0 by default.

The count patterns (span, word, half_word, elastic) aim at ``K`` masked letters with
``K = floor(t*n + U(0,1))`` (stochastic rounding, so ``E[K] = t*n`` exactly), and choose words in
random order until the running total reaches ``K``; the word that crosses ``K`` is kept with
probability ``(K - total_before) / size``, which makes the expected masked count ``K`` again.
Exception: a half-word part is strictly shorter than its word, and its length grows with ``t``
(uniform on ``1..L-1`` for ``t <= 0.25``, towards ``L-1`` as ``t`` grows; see
:func:`_half_word_mask`), but for ``t`` above about 0.75 (with word lengths 1..9) the
``half_word`` pattern masks fewer than ``t*n`` letters.

Word edges: word ``k`` runs from a word start to the next letter whose boundary is
``BOUNDARY_WORD`` or ``BOUNDARY_SENTENCE``; ``BOUNDARY_UNKNOWN`` counts as word-internal. A record
whose boundary plane is *entirely* UNKNOWN (the source did not record word division) would be one
single word, so it is cut into pseudo-words of 2..8 letters (uniform; the last may be shorter)
for the word patterns and for :attr:`Noised.word_start`.

Loss-target rules (``IGNORE_INDEX = -100`` where not supervised):

* Masked/elastic slots: char input MASK; their boundary/dia/punct inputs UNKNOWN (a lacuna hides
  the marks too); char target the true letter (BLANK on elastic filler slots), weight ``1/t``.
  Uncorrupted slots: char target -100, weight 0.
* Substitute records train the model to spot *and* correct errors with no mask signal, so every
  slot gets the true letter as char target with weight 1.0. The ``1/t`` factor is the ELBO weight
  of the absorbing (mask) process only; a substitution record is not a sample of that process,
  and weighting all ``n`` letters by ``1/t`` would make these records dominate the loss.
* Channel availability (boundary, dia, punct), per record: fully known, fully unknown, or patchy
  (rate ``r ~ U(0,1)``, each position hidden with probability ``r``); see
  :attr:`NoiseConfig.channel_known`. Hidden positions get the UNKNOWN input id.
* Auxiliary targets (boundary, dia, cap, punct) only where the letter was corrupted or that
  channel was hidden. Cap has no input channel, so it is always hidden: supervised at every
  letter slot. A value the *source* did not record (``== UNKNOWN`` in the input planes) is never a
  target and its input is UNKNOWN. Elastic BLANK slots have no aux targets and UNKNOWN inputs.

Real lacunae (``lacuna > 0``: a gap in the source, whose letters nobody knows; ``chars`` MASK):

* never a target and never a letter of the record: the patterns run on the letters alone (the
  slots taken out, the choice put back in place), so ``K = t * n_letters`` and a word is its
  letters; a lacuna that ends a word ends the word before it;
* input ``chars`` MASK and boundary/dia/punct UNKNOWN; every target -100 and weight 0 (so the
  metrics, which skip -100, never score them), also for substitution and reference records;
* an unknown-width lacuna is one stand-in slot (``LACUNA_UNKNOWN``); a restorer may extend it
  with more MASK slots, which the model fills with letters or BLANK as it learnt from the
  ``elastic`` pattern.

Determinism: every random draw comes from the ``np.random.Generator`` passed in.

Package layout: :mod:`~stoicheia.noise.config` (:class:`NoiseConfig`, the rate ``t``),
:mod:`~stoicheia.noise.patterns` (one function per pattern, looked up by name in
:data:`~stoicheia.noise.patterns.PATTERN_FUNCTIONS`), :mod:`~stoicheia.noise.words` (word
spans and shared samplers), :mod:`~stoicheia.noise.assemble` (validation, hidden channels,
slot assembly), :mod:`~stoicheia.noise.sampler` (:func:`noise_record`,
:func:`reference_noise`), :mod:`~stoicheia.noise.record` (:class:`Noised`).
"""

from stoicheia.noise.config import ANCHORS, HIDEABLE, NoiseConfig, sample_t
from stoicheia.noise.patterns import PATTERN_FUNCTIONS, PATTERNS
from stoicheia.noise.record import Noised
from stoicheia.noise.sampler import mask_spans, noise_record, reference_noise
from stoicheia.noise.words import PSEUDO_WORD_MAX, PSEUDO_WORD_MIN

__all__ = [
    "ANCHORS",
    "HIDEABLE",
    "PATTERNS",
    "PATTERN_FUNCTIONS",
    "PSEUDO_WORD_MAX",
    "PSEUDO_WORD_MIN",
    "NoiseConfig",
    "Noised",
    "mask_spans",
    "noise_record",
    "reference_noise",
    "sample_t",
]
