"""The trained model in users' hands: evaluate, export, report, restore (on a tiny real run)."""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch

from stoicheia.data.eval_batches import build_eval_batches, record_key
from stoicheia.inference.ngram import LetterNgram
from stoicheia.inference.restore.decoding import kbest_independent
from stoicheia.model.metrics import DiaMacroAccuracy, PunctMacroAccuracy
from stoicheia.text import alphabet as A

sys.path.insert(0, str(Path(__file__).parent))
from tiny import train_tiny  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


# --- pure pieces, against hand computations ------------------------------------------------


def test_macro_accuracy_by_hand():
    # targets: class 0 four times (3 right), class 4 twice (1 right), one ignored slot
    target = torch.tensor([[0, 0, 0, 0, 4, 4, -100]])
    pred = [0, 0, 0, 4, 4, 0, 5]
    logits = torch.full((1, 7, A.NUM_PUNCT), -5.0)
    for i, c in enumerate(pred):
        logits[0, i, c] = 5.0
    m = PunctMacroAccuracy()
    m.update(logits, target)
    assert float(m.compute()) == pytest.approx(
        (3 / 4 + 1 / 2) / 2
    )  # classes never seen are left out
    d = DiaMacroAccuracy()
    d.update(torch.zeros(1, 2, A.NUM_DIA), torch.full((1, 2), -100))
    assert math.isnan(float(d.compute()))  # nothing scored


def test_witten_bell_by_hand():
    m = LetterNgram(2).fit([np.array([0, 1, 0, 1], np.uint8)])  # α β α β
    p = np.exp(m.log_probs(np.array([[0]])))[0]  # after α
    # unigram (c + 1) / (N + 24): β 3/28, γ 1/28; c(αβ) = 2, c(α.) = 2, N1+(α.) = 1
    assert p[1] == pytest.approx((2 + 3 / 28) / 3)
    assert p[2] == pytest.approx((1 / 28) / 3)
    assert p.sum() == pytest.approx(1.0)
    # a non-letter (a real lacuna) cuts the text: no bigram spans it
    m2 = LetterNgram(2).fit([np.array([0, A.MASK, 1], np.uint8)])
    assert m2.letters == 2


def test_kbest_is_exact():
    rng = np.random.default_rng(3)
    logp = np.log(rng.dirichlet(np.ones(5), size=3))
    brute = sorted(
        (
            (sum(logp[i, s] for i, s in enumerate(seq)), seq)
            for seq in itertools.product(range(5), repeat=3)
        ),
        reverse=True,
    )
    got = kbest_independent(logp, 7)
    assert [tuple(ids) for ids, _ in got] == [seq for _, seq in brute[:7]]
    assert [s for _, s in got] == pytest.approx([s for s, _ in brute[:7]])


def test_export_refuses_code_it_cannot_carry(tmp_path, monkeypatch):
    """The export writes code that runs without stoicheia, or stops with a message: an entry
    module that does not import a module its modules need (transformers would not copy it),
    a package module importing stoicheia beyond model/ and text/."""
    from stoicheia.inference.export import carried_code as ex

    ok = tmp_path / "ok.py"
    ok.write_text(
        "from stoicheia.text import alphabet as A\n"
        "from stoicheia.model.config import (\n    EncoderConfig,\n)\n"
        "def f():\n    from stoicheia.text.planes import Planes\n"
    )
    assert ex._relative_source(ok) == (
        "from . import stoicheia_alphabet as A\n"
        "from .stoicheia_config import (\n    EncoderConfig,\n)\n"
        "def f():\n    from .stoicheia_planes import Planes\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text("from stoicheia.train.builder import build_trainer\n")
    with pytest.raises(
        RuntimeError, match=r"bad\.py imports a stoicheia module outside stoicheia\.\{model,text\}"
    ):
        ex._relative_source(bad)
    hf = tmp_path / "hf"
    hf.mkdir()
    for name in ex.HF_FILES:
        (hf / name).write_bytes((ex.HF_DIR / name).read_bytes())
    tok = hf / "tokenization_stoicheia.py"
    line = "from .stoicheia_clusters import LACUNA_CHARS  # noqa: F401\n"
    assert line in tok.read_text(encoding="utf-8")
    tok.write_text(tok.read_text(encoding="utf-8").replace(line, ""), encoding="utf-8")
    monkeypatch.setattr(ex, "HF_DIR", hf)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(
        RuntimeError,
        match=r"tokenization_stoicheia\.py needs stoicheia_clusters "
        r".*from \.stoicheia_clusters import",
    ):
        ex.write_code(out)


# --- a tiny real training run ---------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(small_shards, tmp_path_factory):
    """A 2-layer model trained for 8 steps (evaluations at 4 and 8, anneal, TensorBoard)."""
    return train_tiny(
        small_shards,
        tmp_path_factory.mktemp("runs"),
        "inf",
        "train.nominal_steps=8",
        "train.max_steps=8",
        "train.save_interval=4",
        "train.log_every=2",
        "data.eval_records=8",
        "train.loggers=[tensorboard]",
    )


@pytest.fixture(scope="module")
def model(trained):
    from stoicheia.inference.loading import load_model

    return load_model(trained, device="cpu")


def test_a_corrupt_checkpoint_is_refused_not_loaded(trained, tmp_path):
    """A bit flip inside a tensor record fails the CRC check: an error, never wrong weights."""
    from stoicheia.inference.loading import ModelLoadError, load_model

    data = bytearray((trained / "final.pt").read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    bad = tmp_path / "flipped.pt"
    bad.write_bytes(bytes(data))
    with pytest.raises(
        ModelLoadError,
        match=r"flipped\.pt: incomplete or corrupt checkpoint.*copy or download the file again",
    ):
        load_model(bad, device="cpu")


def test_checkpoint_records_its_config(trained, model):
    assert model.kind == "checkpoint" and model.step == 8
    assert model.encoder_config.d_model == 32 and model.encoder_config.char_window == 16
    assert json.loads((trained / "config.json").read_text())["model"]["n_layers"] == 2


def test_evaluate_against_hand_computation(model, small_shards):
    from stoicheia.data.eval_sets import read_split_records
    from stoicheia.inference.evaluate import EvalOptions, evaluate

    every = read_split_records(small_shards, "val", ["gold"])
    works = sorted({r.work for r in every})[:2]
    assert len(works) == 2, "the test wants records of two works"
    records = [r for w in works for r in [x for x in every if x.work == w][:2]]
    opt = EvalOptions(seq_len=96, rows=3, word_rate=0.3)
    got = evaluate(model, records, opt)["groups"]

    def hand(ks):
        batches = build_eval_batches(
            [records[k].planes for k in ks],
            96,
            3,
            opt.t,
            opt.seed,
            keys=[record_key(records[k].id) for k in ks],
        )
        nats, n, tp, fp, fn = 0.0, 0, 0, 0, 0
        correct = np.zeros(A.NUM_DIA)
        count = np.zeros(A.NUM_DIA)
        for b in batches:
            out = {k: v.double() for k, v in model(b).items()}
            tgt = b["tgt_chars"]
            keep = tgt >= 0
            lp = torch.log_softmax(out["char"], -1)
            nats -= float(lp[keep].gather(-1, tgt[keep][:, None]).sum())
            n += int(keep.sum())
            tb = b["tgt_boundary"]
            kb = tb >= 0
            pp = out["boundary"].argmax(-1)[kb] != 0
            tt = tb[kb] != 0
            tp += int((pp & tt).sum())
            fp += int((pp & ~tt).sum())
            fn += int((~pp & tt).sum())
            td = b["tgt_dia"]
            kd = td >= 0
            hit = out["dia"].argmax(-1)[kd] == td[kd]
            for c, h in zip(td[kd].tolist(), hit.tolist(), strict=True):
                count[c] += 1
                correct[c] += h
        seen = count > 0
        return {
            "bits_per_char": nats / n / math.log(2),
            "boundary_f1": 2 * tp / (2 * tp + fp + fn),
            "dia_acc": correct.sum() / count.sum(),
            "dia_macro_acc": float((correct[seen] / count[seen]).mean()),
            "masked_letters": n,
        }, (nats, n)

    totals = [0.0, 0]
    for w in works:
        ks = [k for k, r in enumerate(records) if r.work == w]
        want, (nats, n) = hand(ks)
        row = got[f"work gold/{w}"]
        assert row["records"] == len(ks)
        assert row["masked_letters"] == want["masked_letters"]
        for key in ("bits_per_char", "boundary_f1", "dia_acc", "dia_macro_acc"):
            assert row[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6), (w, key)
        totals[0] += nats
        totals[1] += n
    assert got["all"]["bits_per_char"] == pytest.approx(
        totals[0] / totals[1] / math.log(2), rel=1e-5
    )
    assert got["tier gold"]["masked_letters"] == totals[1]
    # masked words: a word is right at top-1 iff every letter's argmax is right
    assert got["all"]["words"] > 0
    assert 0 <= got["all"]["word_top1"] <= got["all"]["word_top5"] <= 1


def test_a_groups_figures_do_not_depend_on_the_other_groups(model, small_shards):
    """The same 2 silver records evaluated alone or beside gold records (before and after
    them) give the same silver figures: each record's noise comes from its own id. (Before,
    record k was seeded by its place k in the list: 3.017 vs 3.095 bits/char were seen.)"""
    from stoicheia.data.eval_sets import read_split_records
    from stoicheia.inference.evaluate import EvalOptions, evaluate

    silver = read_split_records(small_shards, "val", ["silver"])[:2]
    gold = read_split_records(small_shards, "val", ["gold"])
    opt = EvalOptions(seq_len=96, rows=3, word_rate=0.5)
    alone = evaluate(model, silver, opt)["groups"]
    mixed = evaluate(model, gold[:5] + silver + gold[5:8], opt)["groups"]
    for group in [g for g in alone if g != "all"]:
        for name, a in alone[group].items():
            b = mixed[group][name]
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-6), (
                group,
                name,
                a,
                b,
            )
    assert alone["tier silver"]["masked_letters"] > 0 and alone["tier silver"]["words"] > 0


def test_nothing_scored_shows_a_dash_not_0_or_1(model, small_shards):
    """A group with no supervised slot of a kind shows "-" in the table and NaN in the JSON:
    a source in scriptio continua (word division not recorded) has no boundary F1 (it was
    0.0, "every word end missed"), one without accents no diacritics accuracy, a record too
    short for a masked word no word@k."""
    from stoicheia.data.eval_sets import EvalRecord, read_split_records
    from stoicheia.inference.evaluate import EvalOptions, evaluate, format_table
    from stoicheia.text.encode import text_to_planes

    silver = read_split_records(small_shards, "val", ["silver"])[:2]
    continua = text_to_planes(
        "ΚΑΙΤΟΝΔΗΜΟΝΤΩΝΣΥΡΑΚΟΣΙΩΝΕΤΙΜΑΣΕΝ", known={"boundary": False, "dia": False, "punct": False}
    )[0]
    records = [*silver, EvalRecord(continua, "stone", "ISic/continua.xml", "ISic/continua.xml#1")]
    res = evaluate(model, records, EvalOptions(seq_len=96, rows=3, word_rate=0.5))
    row = res["groups"]["tier stone"]
    assert row["masked_letters"] > 0 and row["bits_per_char"] > 0
    for name in (
        "boundary_f1",
        "dia_acc",
        "dia_macro_acc",
        "punct_acc",
        "punct_macro_acc",
        "word_top1",
        "word_top5",
    ):
        assert math.isnan(row[name]), (name, row[name])
    assert not math.isnan(res["groups"]["tier silver"]["boundary_f1"])  # scored there
    lines = format_table(res)
    head = lines[0]
    line = next(x for x in lines if x.startswith("tier stone"))
    for heading in (
        "bound F1",
        "dia acc",
        "dia macro",
        "punct acc",
        "punct macro",
        "word@1",
        "word@5",
    ):
        end = head.index(heading) + len(heading)  # right-aligned under its heading
        assert line[:end].rstrip().endswith("-"), (heading, line)


def test_evaluate_command_on_raw_text(trained, small_shards, tmp_path, capsys):
    from stoicheia.cli import main

    txt = tmp_path / "hymn.txt"
    txt.write_text(
        "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην, ἣ μυρί᾽ Ἀχαιοῖς ἄλγε᾽ ἔθηκε."
        "\n\nHello world.\n",
        encoding="utf-8",
    )
    out = tmp_path / "eval.json"
    rc = main(
        [
            "evaluate",
            str(trained),
            "--shards",
            str(txt),
            "--train-shards",
            str(small_shards),
            "--ngram-order",
            "3",
            "--ngram-letters",
            "50000",
            "--word-rate",
            "1.0",
            "--out",
            str(out),
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert (
        "rejected records" in printed and "not_greek" in printed
    )  # the English paragraph is counted, not lost
    res = json.loads(out.read_text())
    assert res["groups"]["all"]["records"] == 1
    assert "ngram_top1" in res["groups"]["all"] and res["unigram_entropy_bits"] > 3
    assert (tmp_path / "eval.txt").read_text().startswith(" ")


def test_export_round_trip_through_automodel(trained, model, tmp_path, monkeypatch):
    from stoicheia.cli import main
    from stoicheia.inference.loading import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "hf_modules"))
    out = tmp_path / "export"
    assert main(["export", str(trained / "best.pt"), str(out)]) == 0
    for name in ("model.safetensors", "config.json", "modeling_stoicheia.py", "README.md"):
        assert (out / name).exists(), name
    # the weights are as readable as the other files (safetensors writes them 0600)
    assert (out / "model.safetensors").stat().st_mode & 0o777 == (
        out / "config.json"
    ).stat().st_mode & 0o777
    card = (out / "README.md").read_text()
    assert "CC BY-SA 3.0 US" in card and "CC BY-NC-SA" in card  # Perseus and the UD treebank
    assert "| holdout |" in card  # held-out figures of the checkpoint's step

    from transformers import AutoModel

    hf = AutoModel.from_pretrained(str(out), trust_remote_code=True).eval()
    back = load_model(out, device="cpu")
    g = torch.Generator().manual_seed(0)
    chars = torch.randint(0, A.MASK + 1, (2, 50), generator=g)
    seg = torch.ones(2, 50, dtype=torch.int64)
    seg[1, 30:] = 2
    with torch.no_grad():
        want = model.encoder(chars, seg_id=seg)
        got = hf(chars=chars, seg_id=seg)
        again = back.encoder(chars, seg_id=seg)
    assert set(got) == set(want)
    for k in want:
        assert torch.equal(got[k], want[k]), k
        assert torch.equal(again[k], want[k]), k
    assert main(["export", str(trained / "best.pt"), str(out)]) == 2  # no silent overwrite
    # --overwrite replaces an export whole, and refuses a folder holding other files (a run folder)
    weights = (out / "model.safetensors").read_bytes()
    assert main(["export", str(trained / "best.pt"), str(out), "--overwrite"]) == 0
    assert (out / "model.safetensors").read_bytes() == weights and not out.with_name(
        "export.partial"
    ).exists()
    assert main(["export", str(trained / "best.pt"), str(trained), "--overwrite"]) == 2
    assert (trained / "best.pt").exists() and (trained / "config.json").exists()
    # the name transformers users pass, and a clear error for a tensor of the wrong rank
    with torch.no_grad():
        by_name = hf(input_ids=chars, attention_mask=seg)
    for k in want:
        assert torch.equal(by_name[k], want[k]), k
    for bad in (chars[0], chars[None]):
        with pytest.raises(
            ValueError,
            match=rf"chars has shape \({', '.join(map(str, bad.shape))},?\): "
            r"expected 2 dimensions \(B, T\)",
        ):
            hf(bad)
    with pytest.raises(ValueError, match="not both"):
        hf(chars, input_ids=chars)
    with pytest.raises(ValueError, match="no letter ids"):
        hf()
    with pytest.raises(TypeError, match="unexpected argument.*token_type_ids"):
        hf(input_ids=chars, token_type_ids=seg)
    # the card lists the tiers the run trained on (gold, silver; bronze had weight 0)
    rows = [
        line.split("|")[1].strip()
        for line in card.splitlines()
        if line.startswith("| ") and line.count("|") == 6
    ]
    assert rows[1:] == ["gold", "silver"], rows
    assert "?" not in card.split("## Training data")[1].split("##")[0]
    assert "`callbacks.anneal_data.phases`" in card


@pytest.fixture(scope="module")
def exported(trained, tmp_path_factory):
    """The tiny run's best checkpoint exported (``stoicheia export``)."""
    from stoicheia.cli import main

    out = tmp_path_factory.mktemp("hf") / "export"
    assert main(["export", str(trained / "best.pt"), str(out)]) == 0
    return out


def test_export_carries_the_ngram_restore_fuses(trained, tmp_path, capsys):
    import shutil

    from stoicheia.cli import main
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.ngram import LetterNgram, save_ngram
    from stoicheia.inference.restore.fusion_file import find_fusion

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(trained / "best.pt", run / "best.pt")
    ngram = LetterNgram(3).fit([np.arange(24, dtype=np.uint8).repeat(3)])
    save_ngram(ngram, run / "ngram.npz", weight=0.6, chosen_on="a test")
    # fusion.json: its weights travel, the index folder of this machine does not
    from stoicheia.inference.restore.fusion_file import FUSION_FILE, FusionConfig

    FusionConfig(
        ngram_weight=0.5, parallels_weight=0.4, parallels_index="/nowhere", chosen_on="fused3"
    ).save(run / FUSION_FILE)
    out = tmp_path / "export"
    assert main(["export", str(run / "best.pt"), str(out)]) == 0
    assert "ngram.npz, fusion.json (restore fuses them in)" in capsys.readouterr().out
    assert (out / "ngram.npz").read_bytes() == (run / "ngram.npz").read_bytes()
    assert "ngram.npz" in (out / "README.md").read_text(encoding="utf-8")
    carried = FusionConfig.load(out / FUSION_FILE)
    assert carried.parallels_index is None and carried.parallels_weight == 0.4
    fusion = find_fusion(load_model(out, device="cpu"))
    assert fusion is not None and fusion.ngram.order == 3
    # with the tiny run's parallels index found (its shards): fusion.json's pair, else 0.6
    assert fusion.weight == (0.5 if fusion.parallels is not None else 0.6)
    assert find_fusion(load_model(out, device="cpu"), parallels="").weight == 0.6
    (out / FUSION_FILE).unlink()  # below: the n-gram alone
    # a fusion.json without an n-gram (the parallels' weight alone) travels too
    (run / "ngram.npz").unlink()
    only = tmp_path / "only-fusion"
    assert main(["export", str(run / "best.pt"), str(only)]) == 0
    assert "fusion.json (restore fuses the parallels in" in capsys.readouterr().out
    assert not (only / "ngram.npz").exists()
    assert FusionConfig.load(only / FUSION_FILE).parallels_weight == 0.4
    # an export of a checkpoint without one has none, and restore uses the model alone
    bare = tmp_path / "bare"
    assert main(["export", str(trained / "best.pt"), str(bare)]) == 0
    assert not (bare / "ngram.npz").exists()
    # (the tiny run's shards carry a parallels index: shown under each gap, never fused at 0)
    alone = find_fusion(load_model(bare, device="cpu"))
    assert alone is None or (alone.ngram is None and alone.parallels_weight == 0.0)
    # restore says which: fused, the model alone asked for, or no n-gram to fuse
    gap = "καὶ τὸν λόγον π[...]ι"
    for src, extra, said in (
        (out, [], "fused with a letter 3-gram at weight 0.6"),
        # the model alone, or with the tiny run's index the network and the parallels (the
        # whole readings rank with them): either way the note names the n-gram left out
        (out, ["--ngram-weight", "0"], "without the letter n-gram: --ngram-weight 0"),
        (bare, [], ": no ngram.npz beside the checkpoint"),
    ):
        assert main(["restore", str(src), "--device", "cpu", *extra, gap]) == 0
        shown = capsys.readouterr().out
        assert said in shown and shown.count("the model alone") <= 1, (extra, shown)


def test_export_carries_the_package_code(exported):
    """The Hugging Face modules are the package's files, byte for byte; the encoder and text
    modules are the package's sources with only their stoicheia imports made relative."""
    import re

    from stoicheia.inference.export.carried_code import (
        HF_DIR,
        HF_FILES,
        _relative_source,
        code_files,
    )

    for name in HF_FILES:
        assert (exported / name).read_bytes() == (HF_DIR / name).read_bytes(), name
    carried = code_files()
    assert {
        "stoicheia_encoder.py",
        "stoicheia_encode.py",
        "stoicheia_leiden.py",
        "stoicheia_render.py",
    } <= set(carried)
    for name, src in carried.items():
        got = (exported / name).read_text(encoding="utf-8")
        assert got == _relative_source(src), name
        # the same lines as the source, but for the import lines
        changed = [
            (a, b)
            for a, b in zip(
                src.read_text(encoding="utf-8").splitlines(), got.splitlines(), strict=True
            )
            if a != b
        ]
        assert all(
            re.match(r"\s*from stoicheia\.", a) and re.match(r"\s*from \.", b) for a, b in changed
        ), changed
    for py in exported.glob("*.py"):
        assert not re.search(
            r"^\s*(from|import) stoicheia\b", py.read_text(encoding="utf-8"), re.M
        ), py.name
    tok_cfg = json.loads((exported / "tokenizer_config.json").read_text())
    assert tok_cfg["auto_map"]["AutoTokenizer"][0] == "tokenization_stoicheia.StoicheiaTokenizer"
    assert tok_cfg["model_max_length"] == 96  # the rows the tiny run trained on
    cfg = json.loads((exported / "config.json").read_text())
    assert cfg["auto_map"]["AutoTokenizer"] == tok_cfg["auto_map"]["AutoTokenizer"]


def _real_texts(corpus_root: Path) -> list[str]:
    """Sentences of the UD Perseus dev set (capitals, accents, punctuation), I.Sicily
    inscriptions in Leiden with lacunae (read by the EpiDoc reader), and some of both in NFD."""
    from stoicheia.sources import read_epidoc

    lines = (
        (corpus_root / "ud" / "grc_perseus-ud-dev.conllu").read_text(encoding="utf-8").splitlines()
    )
    ud = [x[len("# text = ") :] for x in lines if x.startswith("# text = ")][:40]
    leiden = []
    for f in sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:300]:
        leiden += [r.text for r in read_epidoc(f) if "[" in r.text and len(r.text) < 300]
        if len(leiden) >= 12:
            break
    nfd = [unicodedata.normalize("NFD", t) for t in ud[:5] + leiden[:5]]
    return ud + leiden + nfd


def test_exported_tokenizer_and_model_without_stoicheia(exported, model, corpus_root, tmp_path):
    """A fresh interpreter that refuses every import of stoicheia loads AutoTokenizer and
    AutoModel from the folder, encodes real texts exactly as stoicheia's encoder does, runs
    the model as stoicheia runs it, and reads the letters back."""
    import subprocess

    from stoicheia.text.encode import encode_text, text_to_planes

    texts = _real_texts(corpus_root)
    (tmp_path / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HF_MODULES_CACHE=str(tmp_path / "hf_modules"), HF_HUB_OFFLINE="1")
    work = tmp_path / "elsewhere"
    work.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            str(HERE / "no_stoicheia.py"),
            str(HERE / "hf_standalone.py"),
            str(exported),
            str(tmp_path / "texts.json"),
            str(tmp_path / "out"),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    got = dict(np.load(tmp_path / "out.npz"))
    assert meta["tokenizer"] == "StoicheiaTokenizer" and meta["modules"] == []

    # the encoding: stoicheia's planes and counts, text by text
    want = [encode_text(t) for t in texts]
    every = {k: np.concatenate([getattr(w.planes, k) for w in want]) for k in A.PLANES}
    assert (every["cap"] == 1).any() and (every["dia"] > 0).any() and (every["punct"] > 0).any()
    assert (every["lacuna"] > 0).any() and len(
        {v for v in every["lacuna"].tolist()}
    ) >= 3  # [.] [-ca.N-] [---] kinds
    for i, w in enumerate(want):
        for k in A.PLANES:
            assert np.array_equal(got[f"planes/{i}/{k}"], getattr(w.planes, k)), (i, k, texts[i])
        assert meta["dropped"][i] == dict(w.dropped) and meta["leiden"][i] == dict(w.leiden), texts[
            i
        ]
    n_nfd = 10
    for i in range(n_nfd):  # NFD spellings give the planes of their NFC text
        j = len(texts) - n_nfd + i
        src = i if i < 5 else 40 + i - 5
        for k in A.PLANES:
            assert np.array_equal(got[f"planes/{j}/{k}"], got[f"planes/{src}/{k}"]), (j, k)
    assert meta["one_text"] == want[0].planes.chars.tolist()
    assert [e.split(":")[0] for e in meta["errors"]] == [
        "TypeError",
        "ValueError",
        "ValueError",
        "LeidenError",
        "ValueError",
    ]
    assert (
        "stride" in meta["errors"][0]
        and "no Greek letter (dropped: digit 3, latin 3, space 1)" in meta["errors"][1]
    )
    assert "'[' is never closed" in meta["errors"][3]
    assert "without truncation" in meta["errors"][4]
    # a text longer than model_max_length: encoded whole, one warning (once per tokenizer), cut
    # only with truncation=True, to model_max_length or max_length, on the side asked
    n_max = meta["model_max_length"]
    whole = meta["long_planes"]
    assert n_max == 96 and len(whole) > n_max
    assert meta["long_whole"] == meta["long_again"] == len(whole)
    assert len(meta["warnings"]) == 1 and len(meta["batch_warnings"]) == 1, meta
    assert f"takes {len(whole)} letter slots, more than model_max_length=96" in meta["warnings"][0]
    assert "truncation=True" in meta["warnings"][0]
    assert (
        meta["long_cut"] == whole[:96]
        and meta["long_cut_5"] == whole[:5]
        and meta["long_cut_left_5"] == whole[-5:]
    )

    # the batch: the planes, padded with PAD and the UNKNOWN ids
    lengths = [len(w.planes) for w in want]
    T = max(lengths)
    pad = {
        "input_ids": A.PAD,
        "boundary": A.BOUNDARY_UNKNOWN,
        "dia": A.DIA_UNKNOWN,
        "punct": A.PUNCT_UNKNOWN,
        "cap": A.CAP_UNKNOWN,
        "lacuna": 0,
        "attention_mask": 0,
    }
    plane = {
        "input_ids": "chars",
        "boundary": "boundary",
        "dia": "dia",
        "punct": "punct",
        "cap": "cap",
        "lacuna": "lacuna",
    }
    assert (
        got["batch/input_ids"].shape == (len(texts), T) and got["batch/input_ids"].dtype == np.int64
    )
    for i, (w, n) in enumerate(zip(want, lengths, strict=True)):
        for key, value in pad.items():
            row = got[f"batch/{key}"][i]
            assert np.array_equal(
                row[:n], np.ones(n) if key == "attention_mask" else getattr(w.planes, plane[key])
            ), (i, key)
            assert (row[n:] == value).all(), (i, key)

    # the model: stoicheia's encoder on the same inputs gives the same logits
    with torch.no_grad():
        logits = model.encoder(
            {k: torch.from_numpy(got[f"batch/{k}"]) for k in ("boundary", "dia", "punct")}
            | {
                "chars": torch.from_numpy(got["batch/input_ids"]),
                "seg_id": torch.from_numpy(got["batch/attention_mask"]),
            }
        )
    for k, v in logits.items():  # (another process may sum in another order: float tolerance)
        torch.testing.assert_close(torch.from_numpy(got[f"logits/{k}"]), v, rtol=1e-5, atol=1e-5)

    # reading back (the child's logits): the argmax letters, the text with the lacunae filled
    logits = {k: torch.from_numpy(got[f"logits/{k}"]) for k in logits}
    best = logits["char"].argmax(-1)
    assert meta["letters"] == [
        "".join(A.LETTERS[c] for c in row.tolist() if c < A.NUM_LETTERS) for row in best
    ]
    for i, (w, text) in enumerate(zip(want, meta["rendered"], strict=True)):
        back = text_to_planes(text.replace("[", "").replace("]", ""))[0]
        if not w.planes.lacuna.any():  # every plane given: the text comes back
            assert back == w.planes, (texts[i], text)
            continue
        letters = logits["char"][i, : lengths[i], : A.NUM_LETTERS + 2].clone()
        letters[:, A.MASK] = -torch.inf
        fill = letters.argmax(-1).numpy()
        chars = np.where(w.planes.lacuna > 0, fill, w.planes.chars)
        assert np.array_equal(back.chars, chars[chars < A.NUM_LETTERS]), (texts[i], text)
        assert text.count("[") == text.count("]") >= 1


def test_huggingface_example_runs_without_stoicheia(exported, tmp_path):
    """scripts/huggingface_example.py (the code docs/huggingface.md shows) runs on an export
    with every import of stoicheia refused."""
    import subprocess

    script = REPO / "scripts" / "huggingface_example.py"
    code = script.read_text(encoding="utf-8")
    body = code[code.index('"""', 3) + 3 :].strip()
    doc = (REPO / "docs" / "huggingface.md").read_text(encoding="utf-8")
    assert f"```python\n{body}\n```" in doc, (
        "docs/huggingface.md shows another version of the example"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HF_MODULES_CACHE=str(tmp_path / "hf_modules"), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-I", str(HERE / "no_stoicheia.py"), str(script), str(exported)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert (
        lines[2] == "μηνιναειδεθεαπηληιαδεωαχι[MASK][MASK]οσουλομενην[PAD][PAD][PAD][PAD]"
        and lines[3] == "True"
    )
    assert lines[7].startswith("θεοῖς πᾶσι [") and lines[8].startswith(
        "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι["
    )
    # one line per lost letter: the two of Ἀχι[λῆ]ος (Iliad 1.1), no more
    lost = [line.split()[0] for line in lines if line.split()[0].isdigit()]
    assert lost == ["25", "26"]


def test_restore_reads_an_export_like_a_checkpoint(exported, trained, model, capsys):
    """``restore`` (Python and command line) gives the same restorations from the export
    folder as from the checkpoint it was exported from."""
    from stoicheia.cli import main
    from stoicheia.inference.loading import load_model
    from stoicheia.inference.restore import restore

    again = load_model(exported, device="cpu")
    assert again.kind == "export"
    a = restore(model, TEXT, top_k=3, beam=3)
    b = restore(again, TEXT, top_k=3, beam=3)
    assert [(r.text, r.fills, r.logprob) for r in a.restorations] == [
        (r.text, r.fills, r.logprob) for r in b.restorations
    ]
    outputs = []
    for source in (trained / "best.pt", exported):
        capsys.readouterr()
        assert main(["restore", str(source), "--device", "cpu", "--top-k", "2", TEXT]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and TEXT in outputs[0]
    # the command as its own process ends without torch's teardown (os._exit): the same
    # output, whole, and the status
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "stoicheia", "restore", str(trained / "best.pt")]
        + ["--device", "cpu", "--top-k", "2", TEXT],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == outputs[0]
    # a reader that goes away before the output comes (`| head`): no traceback, status 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "stoicheia", "restore", str(trained / "best.pt")]
        + ["--device", "cpu", "--top-k", "2", "--json", TEXT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0 and "Traceback" not in err, err


def test_report_from_real_metrics_log(trained, tmp_path):
    from stoicheia.train.report import read_curves, write_report

    png, page = write_report(trained, tmp_path)
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    curves = read_curves(trained)
    rows = [json.loads(x) for x in (trained / "metrics.jsonl").read_text().splitlines()]
    phase = {r["step"]: r["data/phase"] for r in rows if "data/phase" in r}
    # a switch is named by the batch that first trains on the new mix, as the console prints
    # it ("[data] step 6: anneal phase 1 of 2 starts"): one before the first line of the new
    # phase in metrics.jsonl (the line of step s is batch s - 1)
    switches = [s - 1 for s in sorted(phase) if s - 1 in phase and phase[s] != phase[s - 1]]
    assert (
        [s for s, _ in curves.phase_switches] == switches == [6, 7]
    )  # the fixture's console: steps 6 and 7
    anneal = json.loads((trained / "anneal.json").read_text())
    assert curves.anneal_start == anneal["step"]
    text = page.read_text()
    assert f"anneal start: step {anneal['step']}" in text and "report.png" in text
    assert "tier-mix phase 1 from step 6" in text and "tier-mix phase 2 from step 7" in text
    assert sorted(curves.evals["holdout"]["bits_per_char"])[-1][0] == 8
    # the command prints what the page shows, not only the files' names
    from stoicheia.train.report import summary_lines

    lines = summary_lines(curves)
    assert lines[0].startswith(f"run {trained.name}: {len(curves.steps)} steps logged")
    assert f"anneal from step {anneal['step']}" in lines[0] and "phases from step 6, 7" in lines[0]
    last_step, last = curves.evals["holdout"]["bits_per_char"][-1]
    assert lines[1].startswith(f"  holdout/bits_per_char {last:.4f} at step {last_step} (lowest")
    # the throughput log: FLOPs per letter from the shape (PaLM's 6N + 12 d sum of pairs), ETA
    last = [r for r in rows if "loss/total" in r][-1]
    d, hidden, T = 32, 128, 96  # GeGLU hidden: ceil(8 * 32 / 3 / 64) * 64
    per_block = 3 * d * d + d * d + 2 * hidden * d + hidden * d
    heads = d * (27 + 3 + 48 + 2 + 6)
    # attention counted per document (stoicheia.train.flops.batch_flops): at most the whole-row
    # count 12 d * 2 layers * min(window + 1, T), more than nothing
    six_n = 6 * (2 * per_block + heads)
    assert six_n < last["throughput/flops_per_letter"] <= six_n + 12 * d * 2 * min(16 + 1, T)
    assert "time/eta_seconds" in last and "throughput/mfu" not in last  # CPU: letters/s only
    assert list((trained / "tensorboard").rglob("events.out.tfevents.*")), (
        "train.loggers=[tensorboard] writes event files"
    )


# --- restore -----------------------------------------------------------------------------------

TEXT = (
    "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι[...]ος οὐλομένην, ἣ μυρί᾽ Ἀχαιοῖς ἄλγε᾽ ἔθη[3±2] "
    "πολλὰς δ᾽ ἰφθίμους"
)


def _letters(s: str) -> str:
    from stoicheia.text.encode import text_to_planes

    return "".join(A.LETTERS[c] for c in text_to_planes(s)[0].chars)


def test_restore_on_a_trained_model(model):
    from stoicheia.inference.restore import restore

    res = restore(model, TEXT, top_k=4, beam=6)
    assert len(res.restorations) == 4
    scores = [r.logprob for r in res.restorations]
    assert scores == sorted(scores, reverse=True) and all(s < 0 for s in scores)
    assert len({tuple(r.fills) for r in res.restorations}) == 4  # distinct
    for r in res.restorations:
        known, gap2 = r.fills
        assert len(known) == 3 and 1 <= len(gap2) <= 5  # [...] exactly 3, [3±2] 1 to 5 letters
        # every letter outside the brackets is the input's, in order
        outside = "".join(part.split("]")[-1] for part in r.text.split("["))
        want = _letters(TEXT.replace("[...]", "").replace("[3±2]", ""))
        assert _letters(outside) == want
        assert _letters(r.text) == (
            _letters("μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι")
            + known
            + _letters("ος οὐλομένην, ἣ μυρί᾽ Ἀχαιοῖς ἄλγε᾽ ἔθη")
            + gap2
            + _letters("πολλὰς δ᾽ ἰφθίμους")
        )
        assert len(r.marks.replace(" ", "")) == len(known) + len(gap2)  # one ^ per restored letter


class _BlankAfter:
    """A stand-in model whose char head says: letter ρ at the first ``k`` MASK slots of a gap,
    BLANK after them (every other head uniform)."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __call__(self, batch):
        chars = batch["chars"]
        B, T = chars.shape
        out = {
            h: torch.zeros(B, T, n)
            for h, n in (("char", 27), ("boundary", 3), ("dia", 48), ("cap", 2), ("punct", 6))
        }
        for b in range(B):
            run = 0
            for t in range(T):
                is_gap = chars[b, t] in (
                    A.MASK,
                    A.LETTERS.index("ρ"),
                )  # the text has no ρ of its own
                run = run + 1 if is_gap else 0
                if is_gap:
                    out["char"][b, t, A.LETTERS.index("ρ") if run <= self.k else A.BLANK] = 8.0
        return out


def test_uncertain_width_gap_can_come_back_shorter():
    from stoicheia.inference.loading import LoadedModel
    from stoicheia.inference.restore import restore

    class Loaded(LoadedModel):
        def __call__(self, batch):
            return self.encoder(batch)

    stub = Loaded(_BlankAfter(3), {"data": {"seq_len": 512}}, "stub", "checkpoint")
    res = restore(stub, "καὶ [5±3] καὶ [---] τοῦ", top_k=2, beam=3, unknown_width=10)
    best = res.restorations[0]
    assert best.fills == ["ρρρ", "ρρρ"]  # shorter than 8 and than 10: BLANK ended both gaps
    assert [g.slots for g in res.gaps] == [10, 12]  # maximum width + 2 BLANK-able slots
    assert best.text.startswith("καὶ [ῥρρ] καὶ [ῥρρ] τοῦ")  # an initial ρ is rough


def test_restore_errors_and_windowing(model):
    from stoicheia.inference.restore import RestoreError, restore

    for bad, why in (
        ("καὶ [... τοῦ", "character"),
        ("καὶ [0] τοῦ", "character"),
        ("hello [...]", "no Greek"),
        ("καὶ τοῦ", "nothing to restore"),
    ):
        with pytest.raises(RestoreError, match=why):
            restore(model, bad)
    long = " ".join(["καὶ τοῦ λόγου"] * 60) + " ἀρ[...]ος " + " ".join(["καὶ τοῦ λόγου"] * 60)
    with pytest.raises(RestoreError, match="--window 0 refuses windowing: leave --window out"):
        restore(model, long, window=0)
    res = restore(model, long, top_k=2, window=96)
    assert len(res.restorations[0].fills[0]) == 3 and res.windows == 1
    two = long + " ἔ[..]ε " + " ".join(["καὶ τοῦ λόγου"] * 30)
    res2 = restore(model, two, top_k=3, window=96)
    assert res2.windows == 2 and [len(f) for f in res2.restorations[0].fills] == [3, 2]
    assert [r.logprob for r in res2.restorations] == sorted(
        (r.logprob for r in res2.restorations), reverse=True
    )


def test_restore_width_errors_name_the_model_limit(trained, capsys):
    """One line, exit 2, the limit of the model (its 96-slot rows) or of --window."""
    from stoicheia.cli import main

    def error(*argv):
        rc = main(["restore", str(trained), "--device", "cpu", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        return err

    for text in (
        "καὶ [100000] τοῦ",
        "καὶ [99999999999999999999] τοῦ",
        "καὶ [200] τοῦ",
    ):  # ([3000000000]: the parser test)
        err = error(text)
        assert "more than the model can fill: at most 96 letters at once" in err, err
        assert "96-slot rows the model was trained on" in err and "--unknown-width" not in err
    assert "give --unknown-width 94 or less" in error("--unknown-width", "200", "καὶ [---] τοῦ")
    assert "at most 3 letters at once (--window 3" in error("--window", "3", "καὶ [.5.] τοῦ")
    long = " ".join(["καὶ τοῦ λόγου"] * 20) + " ἀρ[...]ος"
    assert "--window 0 refuses windowing: leave --window out" in error("--window", "0", long)
    assert "Leiden notation at character 4" in error("καὶ [ τοῦ")


def test_evaluate_command_counts_unread_files(trained, small_shards, tmp_path, capsys):
    from stoicheia.cli import main

    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "hymn.txt").write_text(
        "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην, ἣ μυρί᾽ Ἀχαιοῖς ἄλγε᾽ ἔθηκε.\n",
        encoding="utf-8",
    )
    (folder / "scan.tiff").write_bytes(b"II*\x00")
    rc = main(
        [
            "evaluate",
            str(trained),
            "--shards",
            str(folder),
            "--ngram-order",
            "0",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "e.json"),
        ]
    )
    printed = capsys.readouterr().out
    assert rc == 0
    assert "1 files in the folders given are not sources" in printed and "scan.tiff" in printed
    assert "n-gram baseline left out (--ngram-order 0)" in printed
    assert json.loads((tmp_path / "e.json").read_text())["input"]["not_read"] == [
        str(folder / "scan.tiff")
    ]


def test_restore_command(trained, capsys):
    from stoicheia.cli import main

    assert (
        main(
            [
                "restore",
                str(trained),
                "--device",
                "cpu",
                "--top-k",
                "2",
                "--respace",
                "ΚΑΙΤΟΥΛΟΓ[...]ΑΙΤΟΥ",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    marks = [
        line for line in out.splitlines() if line.startswith(" ") and set(line) <= {" ", "^", "."}
    ]
    assert out.count("\n#") == 2 and [m.count("^") for m in marks] == [
        3,
        3,
    ]  # 3 restored letters each
    assert main(["restore", str(trained), "--device", "cpu", "καὶ [ τοῦ"]) == 2


def test_model_card_names_the_licence_of_every_corpus_trained_on(corpus_root, tmp_path):
    """Perseus (CC BY-SA 3.0 US), both UD treebanks (CC BY-NC-SA 2.5 / 3.0) and I.Sicily
    (CC BY 4.0; its EpiDoc records were "no known licence") each get their licence; a plain
    text file has none and is named; a tier of weight 0 trained nothing and adds none."""
    from stoicheia.data.shards import convert
    from stoicheia.inference.export.training_data import describe_training_data

    isic = sorted((corpus_root / "isicily" / "inscriptions").glob("ISic*.xml"))[:40]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "own.txt").write_text(
        "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος οὐλομένην\n", encoding="utf-8"
    )
    out = tmp_path / "shards"
    convert(
        {
            "gold": [corpus_root / "perseus" / "Hesiod"],
            "silver": [
                corpus_root / "ud" / "grc_proiel-ud-dev.conllu",
                corpus_root / "ud" / "grc_perseus-ud-dev.conllu",
            ],
            "bronze": isic,
            "own": [notes],
        },
        out,
        val_fraction=0.0,
        workers=1,
        progress=False,
    )
    run = {"data": {"tier_weights": {"gold": 1.0, "silver": 0.5, "bronze": 0.3, "own": 0.0}}}
    td = describe_training_data(run, out)
    assert td["sources"]["bronze"] == ["epidoc:isicily"]
    lic = "\n".join(td["licences"])
    for want in (
        "CC BY-SA 3.0 US",
        "CC BY-NC-SA 2.5",
        "CC BY-NC-SA 3.0",
        "I.Sicily inscriptions (J. Prag et al., http://sicily.classics.ox.ac.uk): CC BY 4.0",
    ):
        assert want in lic, want
    assert "licences_unknown" not in td and "own" not in td["sources"]
    run["data"]["tier_weights"]["own"] = 0.1
    assert describe_training_data(run, out)["licences_unknown"] == ["plain"]


def test_inference_threads_leave_busy_cores_alone(monkeypatch):
    import stoicheia.inference.loading as L

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(L.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    for load, want in ((0.0, 4), (1.2, 3), (2.6, 1), (9.0, 1)):
        monkeypatch.setattr(L.os, "getloadavg", lambda load=load: (load, load, load))
        assert L.inference_threads() == want
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert L.inference_threads() == L.torch.get_num_threads()
