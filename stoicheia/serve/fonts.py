"""The page's polytonic Greek fonts, served as ``/static/fonts/NAME``: DejaVu Serif and Sans as
shipped by matplotlib (a dependency of the project), so nothing is fetched from the network.
"""

from __future__ import annotations

from pathlib import Path

#: the page's fonts, served as /static/fonts/NAME: DejaVu Serif (every precomposed polytonic
#: letter of the Greek and Greek Extended blocks) and DejaVu Sans (also the combining
#: perispomeni U+0342 and ypogegrammeni U+0345 that the serif lacks, for text typed decomposed)
FONT_FILES = {"greek-serif.ttf": "DejaVuSerif.ttf", "greek-sans.ttf": "DejaVuSans.ttf"}


def greek_fonts() -> tuple[dict[str, Path], Path | None]:
    """``({served name: font file}, licence)``: the fonts of :data:`FONT_FILES` as shipped by
    matplotlib (``mpl-data/fonts/ttf``, a dependency of the project, so nothing is fetched at
    run time) and their licence file (``None`` if missing).

    Raises ``FileNotFoundError`` if matplotlib or a font is missing."""
    import importlib.util

    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "matplotlib is not installed; it ships the page's Greek fonts (DejaVu)"
        )
    ttf = Path(list(spec.submodule_search_locations)[0]) / "mpl-data" / "fonts" / "ttf"
    fonts = {name: ttf / file for name, file in FONT_FILES.items()}
    for font in fonts.values():
        if not font.is_file():
            raise FileNotFoundError(
                f"{font} is missing; reinstall matplotlib (it ships the page's Greek fonts)"
            )
    licence = ttf / "LICENSE_DEJAVU"
    return fonts, licence if licence.is_file() else None
