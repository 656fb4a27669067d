"""Converting sources to MDS shards: splits, word-aligned parts, stats, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streaming import StreamingDataset

from stoicheia.cli import main as cli_main
from stoicheia.data.shards import ConvertError, convert, decode_planes, split_at_words
from stoicheia.data.shm import retry_prefix_race
from stoicheia.data.splits import (
    choose_split,
    held_out_hash,
    inscription_number,
    is_inscription_dev,
)
from stoicheia.text.encode import text_to_planes


def test_split_at_words_keeps_words_whole_and_every_letter():
    planes, _ = text_to_planes("ἄνδρα μοι ἔννεπε μοῦσα πολύτροπον ὃς μάλα πολλὰ πλάγχθη " * 20)
    parts = split_at_words(planes, 50)
    assert all(len(p) <= 50 for p in parts)
    assert sum(len(p) for p in parts) == len(planes)
    assert np.array_equal(np.concatenate([p.chars for p in parts]), planes.chars)
    for p in parts:
        assert p.boundary[-1] in (1, 2), "a part ends at a word end"


def test_split_at_words_cuts_an_overlong_word_hard_and_rejects_bad_limit():
    planes, _ = text_to_planes("α" * 30 + " βγ")
    parts = split_at_words(planes, 10)
    assert [len(p) for p in parts] == [10, 10, 10, 2]
    with pytest.raises(ValueError):
        split_at_words(planes, 0)


def test_held_out_split_is_a_stable_function_of_the_id():
    ids = [f"Homer/hom.il_gk.xml#{b}" for b in range(1, 2001)]
    first = [choose_split(i, "Homer/hom.il_gk.xml", 0.05, frozenset()) for i in ids]
    again = [choose_split(i, "Homer/hom.il_gk.xml", 0.05, frozenset()) for i in reversed(ids)][::-1]
    assert first == again
    share = first.count("val") / len(first)
    assert 0.03 < share < 0.07
    assert held_out_hash("x") == held_out_hash("x") and 0 <= held_out_hash("x") < 1
    assert (
        choose_split(ids[0], "Homer/hom.od_gk.xml", 0.0, frozenset({"Homer/hom.od_gk.xml"}))
        == "val"
    )


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_convert_writes_tiers_splits_and_stats(tmp_path, corpus_root):
    src = tmp_path / "src"
    src.mkdir()
    _write(
        src / "a.jsonl",
        "\n".join(
            json.dumps({"id": f"r{i}", "text": "λόγος ἐστὶν ἀληθής. " * (i + 1)}) for i in range(40)
        ),
    )
    out = tmp_path / "out"
    summary = convert(
        {"gold": [corpus_root / "perseus" / "Hesiod"], "bronze": [src]},
        out,
        val_fraction=0.2,
        val_works=["hes.sh_gk.xml"],
        max_record_letters=300,
        progress=False,
    )
    stats = json.loads((out / "stats.json").read_text())
    assert stats == json.loads(json.dumps(summary))
    gold = stats["tiers"]["gold"]
    assert gold["files"] == 3 and gold["records_kept"]["val"] > 0
    assert 3.8 < gold["letter_unigram_entropy_bits"] < 4.3
    assert gold["stripped_characters"]["space"] > 1000
    for tier in ("gold", "bronze"):
        for split in ("train", "val"):
            assert (out / tier / split / "index.json").exists()
    ds = retry_prefix_race(lambda: StreamingDataset(local=str(out / "gold" / "val"), batch_size=1))
    samples = [ds[i] for i in range(ds.num_samples)]
    works = {s["work"] for s in samples}
    assert "hes.sh_gk.xml" in works, "--val-work sends the whole Shield to val"
    shield = [s for s in samples if s["work"] == "hes.sh_gk.xml"]
    assert all(len(decode_planes(s)) <= 300 for s in shield)
    assert len({s["part"] for s in shield}) > 1, "the long Shield record was split into parts"
    assert {s["tier"] for s in samples} == {"gold"} and {s["source"] for s in samples} == {
        "perseus"
    }
    assert not (tmp_path / "out.partial").exists()


def test_bad_file_stops_with_its_name_or_is_skipped_and_counted(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write(src / "good.txt", "ἐν ἀρχῇ ἦν ὁ λόγος.\n\nκαὶ ὁ λόγος ἦν πρὸς τὸν θεόν.\n")
    _write(src / "bad.jsonl", '{"id": "a", "text": "λόγος"}\n{not json\n')
    with pytest.raises(ConvertError, match=r"(?s)bad\.jsonl:2.*--skip-bad"):
        convert({"gold": [src]}, tmp_path / "out", val_fraction=0.0, progress=False)
    assert not (tmp_path / "out").exists(), "a failed conversion leaves no output"
    summary = convert(
        {"gold": [src]}, tmp_path / "out", val_fraction=0.0, skip_bad=True, progress=False
    )
    skipped = summary["tiers"]["gold"]["files_skipped"]
    assert list(skipped) == [str(src / "bad.jsonl")] and "2" in skipped[str(src / "bad.jsonl")]
    assert summary["tiers"]["gold"]["records_kept"]["train"] == 2


def test_non_greek_records_are_dropped_and_counted(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write(src / "mixed.txt", "This paragraph is English, not Greek.\n\nμῆνιν ἄειδε θεά.\n")
    summary = convert({"gold": [src]}, tmp_path / "out", val_fraction=0.0, progress=False)
    assert summary["tiers"]["gold"]["records_dropped"] == {"not_greek": 1}
    assert summary["tiers"]["gold"]["records_kept"]["train"] == 1
    assert summary["tiers"]["gold"]["stripped_characters"]["latin"] > 20


def test_cli_errors_name_the_problem(tmp_path, capsys, corpus_root):
    assert cli_main(["convert", "--out", str(tmp_path / "o"), f"gold={tmp_path / 'missing'}"]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli_main(["convert", "--out", str(tmp_path / "o"), f"gold={tmp_path / 'empty'}"]) == 2
    assert "no .xml/.conllu/.txt/.jsonl files" in capsys.readouterr().err
    hes = corpus_root / "perseus" / "Hesiod" / "hes.wd_gk.xml"
    assert (
        cli_main(
            [
                "convert",
                "--out",
                str(tmp_path / "o"),
                "--workers",
                "1",
                f"gold={hes}",
                "--val-work",
                "Nope/x.xml",
            ]
        )
        == 2
    )
    assert "Nope/x.xml" in capsys.readouterr().err
    out = tmp_path / "ok"
    assert cli_main(["convert", "--out", str(out), "--workers", "1", f"gold={hes}"]) == 0
    assert "letter-unigram entropy" in capsys.readouterr().out
    assert cli_main(["convert", "--out", str(out), "--workers", "1", f"gold={hes}"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli_main(["convert", "--out", str(out), str(hes)])
    assert exc.value.code == 2 and "TIER=PATH" in capsys.readouterr().err
    for twice in ([f"gold={hes}", f"gold={hes}"], [f"gold={hes.parent}", f"silver={hes}"]):
        with pytest.raises(SystemExit) as exc:
            cli_main(["convert", "--out", str(tmp_path / "dup"), *twice])
        assert (
            exc.value.code == 2
            and "overlap (the same files would be read twice)" in capsys.readouterr().err
        )
    assert not (tmp_path / "dup").exists()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "precious.txt").write_text("keep me")
    assert (
        cli_main(["convert", "--out", str(tmp_path / "notes"), "--overwrite", f"gold={hes}"]) == 2
    )
    assert (tmp_path / "notes" / "precious.txt").exists(), (
        "--overwrite never deletes what convert did not write"
    )
    # a converted folder with a user's file (or an input) added: --overwrite refuses, deletes
    # nothing
    (out / "src").mkdir()
    (out / "src" / "mine.txt").write_text(
        "καὶ τὸν πατέρα ἔφη τὸν ἐμὸν παρεῖναι μέν " * 20, encoding="utf-8"
    )
    assert (
        cli_main(
            ["convert", "--out", str(out), "--overwrite", "--workers", "1", f"gold={out / 'src'}"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "holds 1 entry that convert did not write (src)" in err
        and (out / "src" / "mine.txt").exists()
    )
    (out / "src" / "mine.txt").unlink()
    (out / "src").rmdir()
    assert (
        cli_main(
            ["convert", "--out", str(out), "--overwrite", "--workers", "1", f"gold={out / 'gold'}"]
        )
        == 2
    )
    assert "lies inside --out" in capsys.readouterr().err and (out / "stats.json").exists()
    assert (
        cli_main(["convert", "--out", str(out), "--overwrite", "--workers", "1", f"gold={hes}"])
        == 0
    )
    assert (
        cli_main(
            ["convert", "--out", str(tmp_path / "o2"), "--max-record-letters", "0", f"gold={hes}"]
        )
        == 2
    )
    assert (
        cli_main(["convert", "--out", str(tmp_path / "o2"), "--min-greek", "2", f"gold={hes}"]) == 2
    )


# I.Sicily files of the shared corpus: 634, 644, 794 end in 4 (the inscription dev set), the
# others do not
_ISIC_DEV = ("ISic000634.xml", "ISic000644.xml", "ISic000794.xml")
_ISIC_TRAIN = (
    "ISic000635.xml",
    "ISic000636.xml",
    "ISic000640.xml",
    "ISic000641.xml",
    "ISic000795.xml",
)


def test_inscription_dev_rule_is_the_last_digit_of_the_number(corpus_root):
    assert inscription_number("inscriptions/ISic000154.xml") == 154
    assert inscription_number("ISic000154.xml#1") == 154
    assert inscription_number("Homer/hom.il_gk.xml") is None
    assert inscription_number("Colluthus/colluthus.01_gk.xml") is None
    four = frozenset({4})
    assert is_inscription_dev("inscriptions/ISic000154.xml", "epidoc", four)
    assert not is_inscription_dev("inscriptions/ISic000155.xml", "epidoc", four)
    assert not is_inscription_dev("inscriptions/ISic000154.xml", "plain", four), (
        "only EpiDoc inscriptions"
    )
    assert not is_inscription_dev("inscriptions/ISic000154.xml", "epidoc", frozenset())
    # before --val-work and the id hash: a dev inscription never reaches train nor val
    work = "inscriptions/ISic000154.xml"
    assert (
        choose_split(work + "#1", work, 0.999, frozenset({work}), source="epidoc", dev_digits=four)
        == "inscription_dev"
    )
    assert choose_split(work + "#1", work, 0.0, frozenset(), source="epidoc") == "train"
    # on every file name of the real corpus: exactly those whose number ends in 4
    names = sorted(p.name for p in (corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))
    dev = [n for n in names if is_inscription_dev(f"inscriptions/{n}", "epidoc", four)]
    assert dev == [n for n in names if n.removesuffix(".xml")[-1] == "4"]
    assert 0.08 < len(dev) / len(names) < 0.16


def test_convert_holds_the_inscription_dev_set_out_of_train_and_val(tmp_path, corpus_root):
    isic = corpus_root / "isicily" / "inscriptions"
    files = [isic / n for n in _ISIC_DEV + _ISIC_TRAIN]
    out = tmp_path / "out"
    summary = convert(
        {"gold": [corpus_root / "perseus" / "Hesiod" / "hes.wd_gk.xml"], "bronze": files},
        out,
        val_fraction=0.3,
        inscription_dev_digits=[4],
        workers=1,
        progress=False,
    )
    dev = summary["inscription_dev"]
    assert dev["digits"] == [4]
    assert [w["work"] for w in dev["works"]] == list(_ISIC_DEV)
    for w in dev["works"]:
        assert w["tier"] == "bronze" and w["records"] >= 1 and w["letters"] > 0
        assert w["epidoc"] == str((isic / w["work"]).resolve()), (
            "the EpiDoc source, for the benchmark to read"
        )
    bronze = summary["tiers"]["bronze"]["records_kept"]
    assert bronze["inscription_dev"] == sum(w["records"] for w in dev["works"])

    def works(tier, split):
        ds = retry_prefix_race(
            lambda: StreamingDataset(local=str(out / tier / split), batch_size=1)
        )
        return {ds[i]["work"] for i in range(ds.num_samples)}

    assert works("bronze", "inscription_dev") == set(_ISIC_DEV)
    trained_or_val = works("bronze", "train") | works("bronze", "val")
    assert not trained_or_val & set(_ISIC_DEV), "no dev inscription in train or val"
    assert trained_or_val <= set(_ISIC_TRAIN) and works("bronze", "train")
    assert not (out / "gold" / "inscription_dev").exists(), (
        "no empty dev folder for a tier without inscriptions"
    )
    # without the option, the same inscriptions are trained on as before
    plain = convert(
        {"bronze": files}, tmp_path / "plain", val_fraction=0.0, workers=1, progress=False
    )
    assert (
        plain["inscription_dev"]["works"] == []
        and not (tmp_path / "plain" / "bronze" / "inscription_dev").exists()
    )
    assert plain["tiers"]["bronze"]["records_kept"]["train"] == sum(bronze.values())


def test_inscription_dev_option_errors_and_summary(tmp_path, capsys, corpus_root):
    hes = corpus_root / "perseus" / "Hesiod" / "hes.wd_gk.xml"
    assert (
        cli_main(
            [
                "convert",
                "--out",
                str(tmp_path / "o"),
                "--workers",
                "1",
                f"gold={hes}",
                "--inscription-dev-digit",
                "4",
            ]
        )
        == 2
    )
    assert "no EpiDoc inscription" in capsys.readouterr().err and not (tmp_path / "o").exists()
    assert (
        cli_main(
            [
                "convert",
                "--out",
                str(tmp_path / "o"),
                f"gold={hes}",
                "--inscription-dev-digit",
                "14",
            ]
        )
        == 2
    )
    assert "--inscription-dev-digit" in capsys.readouterr().err
    isic = corpus_root / "isicily" / "inscriptions"
    args = [
        "convert",
        "--out",
        str(tmp_path / "ok"),
        "--workers",
        "1",
        "--inscription-dev-digit",
        "4",
    ]
    assert (
        cli_main(args + [f"bronze={isic / n}" for n in ("ISic000634.xml", "ISic000635.xml")]) == 0
    )
    assert "inscription dev set (dev digit 4): 1 inscriptions" in capsys.readouterr().out
