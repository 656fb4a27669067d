"""Shared fixtures: the real corpus in ../shared/corpus and small shards converted from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("STOICHEIA_CORPUS", REPO.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus_root() -> Path:
    if not (CORPUS / "perseus").is_dir():
        pytest.fail(
            f"real corpus not found at {CORPUS}: "
            "tests read ../shared/corpus (or set STOICHEIA_CORPUS)"
        )
    return CORPUS


@pytest.fixture(scope="session")
def small_shards(corpus_root: Path, tmp_path_factory) -> Path:
    """Gold = Hesiod and the Homeric Hymns (Perseus TEI), silver = the PROIEL UD dev set.

    ``val_fraction`` is large so that the held-out split has records of both tiers.
    """
    from stoicheia.data.shards import convert

    out = tmp_path_factory.mktemp("shards") / "small"
    convert(
        {
            "gold": [corpus_root / "perseus" / "Hesiod", corpus_root / "perseus" / "Homeric_Hymns"],
            "silver": [corpus_root / "ud" / "grc_proiel-ud-dev.conllu"],
        },
        out,
        val_fraction=0.1,
        max_record_letters=600,
        workers=1,
        progress=False,
    )
    return out


@pytest.fixture
def s3_server(tmp_path_factory):
    """A moto S3 server on 127.0.0.1 with the test bucket, stopped at the end (see s3_server.py)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from s3_server import S3Server

    server = S3Server(tmp_path_factory.mktemp("moto"))
    server.start()
    yield server
    server.stop()
