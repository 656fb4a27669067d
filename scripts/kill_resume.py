"""Kill a training run at random moments, re-run the same command until it completes, and
check that it ends exactly where an uninterrupted run ends.

    python scripts/kill_resume.py [--shards DIR] [--work DIR] [--kills K] [--sigterms M]
                                  [--steps N] [--save-interval I] [--num-workers W]
                                  [--launcher python|composer] [--nproc P] [--seed S]

1. Shards: ``--shards DIR``, else small ones converted from ../shared/corpus (Hesiod and the
   Homeric Hymns as gold, the PROIEL UD dev set as silver) into ``WORK/shards``.
2. The reference: the run trained once, uninterrupted, with the command users run
   (``python recipes/train.py yamls/demo.yaml key=value...``, or ``composer -n P
   recipes/train.py ...`` with ``--launcher composer``), shrunk to a small model.
3. The same command for a second run, SIGKILLed K times (seeded): about half of the kills
   are aimed at a checkpoint write (the run folder is polled for a new ``ep*-ba*.pt`` file and
   the kill sent the moment it appears), the rest at a uniformly random time between start
   and the expected end. After each kill the run's processes (trainers, DataLoader workers)
   must all be gone within 20 s; then the command is run again. A kill "landed during a
   save" if, afterwards, the newest checkpoint file is incomplete or ``latest`` does not
   point at it. The M SIGTERMs (the preemption signal) come first, two batches into a start
   (at a random point of the third),
   so that the run is never so near its end that it completes before acting on the signal:
   each must end the run with exit status 143 after a checkpoint of the batch in progress,
   and the next start must resume there (at most one batch lost). An aimed kill lets a
   checkpoint pass only while two save intervals remain, and every kill (aimed or not) is
   sent at the latest when the run has logged its second-to-last batch, so the K kills all
   land before the run completes.
4. Compared with the reference: the final weights (``final.pt``, on CPU) bit for bit, and
   the per-step losses of ``metrics.jsonl`` (retrained steps de-duplicated, the last kept).

Prints ``kills survived N/K, weights identical yes/no`` and the other figures; exit status 0
if every kill was survived, the weights are identical and the losses equal, else 1.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout this script is in (the shared .venv may point at another).
_sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import psutil  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("STOICHEIA_CORPUS", REPO.parent / "shared" / "corpus"))


def build_shards(out: Path) -> Path:
    """Small real shards (as the tests' ``small_shards``), converted once into ``out``."""
    if (out / "stats.json").exists():
        return out
    from stoicheia.data.shards import convert

    if not (CORPUS / "perseus").is_dir():
        sys.exit(
            f"kill_resume.py: no corpus at {CORPUS}: give --shards DIR or set STOICHEIA_CORPUS"
        )
    convert(
        {
            "gold": [CORPUS / "perseus" / "Hesiod", CORPUS / "perseus" / "Homeric_Hymns"],
            "silver": [CORPUS / "ud" / "grc_proiel-ud-dev.conllu"],
        },
        out,
        val_fraction=0.1,
        max_record_letters=600,
        workers=1,
        progress=False,
    )
    return out


def overrides(args: argparse.Namespace, shards: Path, folder: Path, name: str) -> list[str]:
    """The demo YAML shrunk to a small model on the small shards."""
    return [
        f"run_name={name}",
        f"data.shard_root={shards}",
        "data.seq_len=128",
        "data.records_per_batch=4",
        f"data.num_workers={args.num_workers}",
        "data.eval_records=4",
        "data.eval_rows=4",
        "data.eval_sets=[holdout]",
        "train.decide_on=holdout/bits_per_char",
        f"model.d_model={args.d_model}",
        "model.n_layers=2",
        "model.n_heads=2",
        "model.char_window=16",
        "train.micro_batch_rows=2",
        f"train.global_batch_rows={2 * (args.nproc if args.launcher == 'composer' else 1)}",
        "train.grad_accum=null",
        "train.log_every=1000",
        "data.tier_weights.bronze=0",
        "callbacks.anneal_data.phases=[[0.5, {gold: 1.0, silver: 1.0}], [1.0, {gold: 1.0}]]",
        "train.warmup_frac=0.1",
        f"train.nominal_steps={args.steps}",
        f"train.max_steps={args.steps}",
        f"train.save_interval={args.save_interval}",
        f"train.save_folder={folder}/{{run_name}}",
        "callbacks.restoration_example=false",
    ]


def command(args: argparse.Namespace, extra: list[str]) -> list[str]:
    train = ["recipes/train.py", "yamls/demo.yaml", *extra]
    if args.launcher == "composer":
        return [str(Path(sys.executable).parent / "composer"), "-n", str(args.nproc), *train]
    return [sys.executable, *train]


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env["PYTHONPATH"] = str(REPO)
    return env


def _ignore_sigterm() -> None:
    # The composer launcher has no SIGTERM handler: started like this it survives the
    # signal and waits for its trainers to save (as scripts/slurm_chain.sh starts it).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def start(args: argparse.Namespace, extra: list[str], log: Path) -> subprocess.Popen:
    fh = open(log, "a")
    return subprocess.Popen(
        command(args, extra),
        cwd=REPO,
        env=_env(),
        stdout=fh,
        stderr=subprocess.STDOUT,
        preexec_fn=_ignore_sigterm if args.launcher == "composer" else None,
    )


def trainers(proc: subprocess.Popen) -> list[psutil.Process]:
    """The processes that train: the launcher's children, or the process itself."""
    try:
        p = psutil.Process(proc.pid)
        if proc.args[0].endswith("composer"):
            return [c for c in p.children() if "recipes/train.py" in " ".join(c.cmdline())]
        return [p]
    except psutil.NoSuchProcess:
        return []


def family(proc: subprocess.Popen) -> list[psutil.Process]:
    try:
        p = psutil.Process(proc.pid)
        return [p, *p.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def checkpoints(folder: Path) -> dict[str, tuple[int, int]]:
    """``{name: (size, mtime_ns)}`` of the periodic checkpoint files in ``folder``."""
    out = {}
    try:
        for e in os.scandir(folder):
            if e.name.startswith("ep") and e.name.endswith(".pt"):
                try:
                    st = e.stat()
                    out[e.name] = (st.st_size, st.st_mtime_ns)
                except FileNotFoundError:
                    pass
    except FileNotFoundError:
        pass
    return out


def steps_logged(folder: Path) -> int:
    from stoicheia.train import run_files

    rows = run_files.read_jsonl(folder / "metrics.jsonl")
    return max((int(r["step"]) for r in rows if "loss/total" in r), default=0)


@dataclass
class Report:
    kills: int = 0
    survived: int = 0
    during_save: int = 0
    leftovers: int = 0
    restarts: int = 0
    sigterms: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def wait_gone(procs: list[psutil.Process], timeout: float = 20.0) -> list[psutil.Process]:
    """Wait up to ``timeout`` s for ``procs`` to end; returns those still alive."""
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return alive


def landed_during_save(folder: Path, before: dict[str, tuple[int, int]]) -> bool:
    """After a kill: is the newest periodic checkpoint one that this start wrote (not as it was
    in ``before``) and incomplete, or not the one ``latest`` names?"""
    from stoicheia.train.checkpoints import checkpoint_is_complete, periodic_checkpoint

    files = sorted(
        (m[1], f) for f in folder.glob("ep*-ba*-rank0.pt") if (m := periodic_checkpoint(f.name))
    )
    if not files:
        return False
    newest = files[-1][1]
    if checkpoints(folder).get(newest.name) == before.get(newest.name):
        return False  # left by an earlier start (the repair of this one had not run yet)
    link = folder / "latest-rank0.pt"
    return (
        not checkpoint_is_complete(newest)
        or not link.is_symlink()
        or os.readlink(link) != newest.name
    )


def kill_once(
    args,
    extra,
    folder: Path,
    log: Path,
    rng: random.Random,
    aim_at_save: bool,
    expected: float,
    rep: Report,
) -> int | None:
    """Start the run and SIGKILL it once; returns the exit status if it ended by itself first."""
    before = checkpoints(folder)
    proc = start(args, extra, log)
    t0 = time.monotonic()
    deadline = t0 + (expected * 3 + 60)
    when = t0 + rng.uniform(0.0, 1.0) * expected
    let_pass = rng.randint(0, 1)  # checkpoint writes to let through before the one killed
    seen = set(before)
    checked = 0.0
    while proc.poll() is None and time.monotonic() < deadline:
        # whatever the aim, the kill lands before the run's last batch, so that no kill finds
        # the run complete (a late random moment, or an aimed one at the last checkpoint)
        if time.monotonic() - checked >= 0.01:
            checked = time.monotonic()
            if steps_logged(folder) >= args.steps - 1:
                break
        if aim_at_save:
            new = set(checkpoints(folder)) - seen
            if new and let_pass > 0 and steps_logged(folder) + 2 * args.save_interval < args.steps:
                let_pass -= 1
                seen |= new
            elif new:
                break
            time.sleep(0.0005)
        else:
            if time.monotonic() >= when:
                break
            time.sleep(0.01)
    if proc.poll() is not None:
        return proc.returncode
    procs = family(proc)
    for p in trainers(proc) or [psutil.Process(proc.pid)]:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    proc.wait()
    rep.kills += 1
    alive = wait_gone([p for p in procs if p.pid != proc.pid])
    if alive:
        rep.leftovers += len(alive)
        rep.notes.append(
            f"kill {rep.kills}: {len(alive)} process(es) outlived the trainer by 20 s: "
            f"{[p.pid for p in alive]}"
        )
        for p in alive:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
    if landed_during_save(folder, before):
        rep.during_save += 1
    return None


def sigterm_once(
    args, extra, folder: Path, log: Path, rng: random.Random, expected: float, rep: Report
) -> int | None:
    proc = start(args, extra, log)
    start_step = steps_logged(folder)
    t0 = time.monotonic()
    # a moment while training runs: within the batch after the second new step is logged, at
    # a random point of it (a batch's length as measured between the first two steps; a fixed
    # delay ran over most of a run whose batches are short, and left the kills no batches)
    logged: dict[int, float] = {}
    while proc.poll() is None and time.monotonic() < t0 + expected * 3 + 60:
        done = steps_logged(folder) - start_step
        if done >= 1:
            logged.setdefault(min(done, 2), time.monotonic())
        if done >= 2:
            break
        time.sleep(0.01)
    batch = logged[2] - logged[1] if len(logged) == 2 else 0.0
    time.sleep(rng.uniform(0.0, min(batch, 0.5)))
    if proc.poll() is not None:
        return proc.returncode
    seen = steps_logged(folder)  # at least this many batches were done when the signal came
    procs = family(proc)
    sent = time.monotonic()
    for p in procs:  # as SLURM does: every process of the job
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    rc = proc.wait()
    took = time.monotonic() - sent
    alive = wait_gone([p for p in procs if p.pid != proc.pid])
    link = folder / "latest-rank0.pt"
    saved = int(os.readlink(link).split("-ba")[1].split("-")[0]) if link.is_symlink() else -1
    rep.sigterms.append(
        {
            "rc": rc,
            "exit_s": round(took, 2),
            "logged_at_signal": seen,
            "saved_batch": saved,
            "lost_batches": max(0, seen - saved),
            "leftovers": len(alive),
        }
    )
    return None


def final_state(folder: Path) -> dict:
    import torch

    return torch.load(folder / "final.pt", map_location="cpu", weights_only=False)["state"]["model"]


def losses_rows(folder: Path) -> list[dict]:
    from stoicheia.train import run_files

    return [r for r in run_files.read_jsonl(folder / "metrics.jsonl") if "loss/total" in r]


def losses(folder: Path) -> dict[int, float]:
    from stoicheia.train import run_files

    out: dict[int, float] = {}
    for r in run_files.read_jsonl(folder / "metrics.jsonl"):
        if "loss/total" in r:
            out[int(r["step"])] = r["loss/total"]  # a retrained step: the last row counts
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--shards", type=Path, help="shard root (default: convert small shards into WORK/shards)"
    )
    ap.add_argument(
        "--work",
        type=Path,
        default=Path("runs/kill_resume"),
        help="folder for shards and runs (default runs/kill_resume)",
    )
    ap.add_argument("--kills", type=int, default=10, help="SIGKILLs (default 10)")
    ap.add_argument("--sigterms", type=int, default=2, help="SIGTERMs after the kills (default 2)")
    ap.add_argument("--steps", type=int, default=60, help="batches of the run (default 60)")
    ap.add_argument(
        "--save-interval", type=int, default=5, help="batches between checkpoints (default 5)"
    )
    ap.add_argument("--num-workers", type=int, default=2, help="DataLoader workers (default 2)")
    ap.add_argument("--d-model", type=int, default=64, help="model width (default 64)")
    ap.add_argument(
        "--launcher",
        choices=["python", "composer"],
        default="python",
        help="python recipes/train.py, or composer -n P",
    )
    ap.add_argument(
        "--nproc", type=int, default=1, help="processes with --launcher composer (default 1)"
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments (default 0)")
    args = ap.parse_args(argv)
    if args.launcher == "python" and args.nproc != 1:
        ap.error("--nproc needs --launcher composer")
    work = args.work.resolve()
    runs = work / "runs"
    for name in ("reference", "killed"):
        if (runs / name).exists():
            sys.exit(
                f"kill_resume.py: {runs / name} exists: remove it (or give another --work) first"
            )
    runs.mkdir(parents=True, exist_ok=True)
    shards = args.shards.resolve() if args.shards else build_shards(work / "shards")
    rng = random.Random(args.seed)
    t_all = time.monotonic()

    t = time.monotonic()
    ref = start(args, overrides(args, shards, runs, "reference"), work / "reference.log")
    if ref.wait() != 0:
        print(f"reference run failed (exit status {ref.returncode}); see {work / 'reference.log'}")
        return 1
    t_ref = time.monotonic() - t
    # a random kill comes within start-up plus a 1/(K+1) share of the batches, so that the K
    # kills spread over the run instead of the run completing after the first few
    times = [r["time"] for r in losses_rows(runs / "reference")]
    per_batch = (
        (times[-1] - times[0]) / max(1, len(times) - 1) if len(times) > 1 else t_ref / args.steps
    )
    startup = max(0.0, t_ref - per_batch * args.steps)
    window = startup + per_batch * args.steps / (args.kills + 1)
    print(
        f"reference: {len(times)} batches (the run's own end) in {t_ref:.1f} s "
        f"({args.launcher}, {args.nproc} process(es), {args.num_workers} workers)",
        flush=True,
    )

    extra = overrides(args, shards, runs, "killed")
    folder = runs / "killed"
    log = work / "killed.log"
    rep = Report()
    t = time.monotonic()
    plan = [i % 2 == 1 for i in range(args.kills)]  # every other kill aimed at a checkpoint write
    rng.shuffle(plan)
    failed = None
    term_rng = random.Random(args.seed + 1)  # the kill plan does not depend on --sigterms
    for _ in range(args.sigterms):
        if sigterm_once(args, extra, folder, log, term_rng, t_ref, rep) is not None:
            failed = f"the run ended before its SIGTERM (see {log})"
            break
    for aim in [] if failed else plan:
        rc = kill_once(args, extra, folder, log, rng, aim, window, rep)
        if rc is not None:  # it ended before the kill: completed, or failed
            if rc != 0:
                failed = f"a restart failed with exit status {rc} (see {log})"
                rep.survived = max(0, rep.survived - 1)  # the kill before it was not survived
            break
        rep.survived += 1  # provisional: the next start must take it up
    if not failed and not (folder / "complete.json").exists():
        proc = start(args, extra, log)
        rep.restarts += 1
        if proc.wait() != 0:
            failed = f"the last restart failed with exit status {proc.returncode} (see {log})"
            rep.survived = max(0, rep.survived - 1)
    t_killed = time.monotonic() - t

    identical = False
    same_losses = False
    detail = ""
    if not failed:
        a, b = final_state(runs / "reference"), final_state(folder)
        import torch

        identical = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        la, lb = losses(runs / "reference"), losses(folder)
        same_losses = la == lb
        diffs = [abs(la[s] - lb.get(s, float("nan"))) for s in la]
        detail = (
            f"{len(la)} steps in the reference, {len(lb)} after de-duplication, "
            f"max |loss difference| {max(diffs, default=0):.3g}"
        )
    if failed:
        print(f"FAILED: {failed}")
    for n in rep.notes:
        print(n)
    if rep.kills < args.kills:
        print(f"the run completed after {rep.kills} of the {args.kills} kills planned")
    print(
        f"kills survived {rep.survived}/{rep.kills}, "
        f"weights identical {'yes' if identical else 'no'}"
    )
    print(
        f"kills during a save: {rep.during_save}/{rep.kills}; "
        f"processes left behind: {rep.leftovers}"
    )
    print(f"per-step losses equal: {'yes' if same_losses else 'no'} ({detail})")
    for i, s in enumerate(rep.sigterms, 1):
        print(
            f"sigterm {i}: exit status {s['rc']} after {s['exit_s']} s, "
            f"checkpoint at batch {s['saved_batch']} "
            f"(>= {s['logged_at_signal']} logged at the signal), "
            f"batches lost {s['lost_batches']}, processes left {s['leftovers']}"
        )
    print(
        f"wall time: reference {t_ref:.1f} s, killed run {t_killed:.1f} s, "
        f"total {time.monotonic() - t_all:.1f} s"
    )
    summary = {
        "kills": rep.kills,
        "survived": rep.survived,
        "during_save": rep.during_save,
        "leftovers": rep.leftovers,
        "identical": identical,
        "same_losses": same_losses,
        "sigterms": rep.sigterms,
        "failed": failed,
        "wall_reference_s": round(t_ref, 1),
        "wall_killed_s": round(t_killed, 1),
    }
    (work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    ok = (
        not failed
        and identical
        and same_losses
        and rep.survived == rep.kills
        and rep.leftovers == 0
        and all(
            s["rc"] == 143 and s["lost_batches"] == 0 and s["leftovers"] == 0 for s in rep.sigterms
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
