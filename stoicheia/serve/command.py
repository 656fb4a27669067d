"""``stoicheia serve [CHECKPOINT]``: the restoration page on a local address (no CHECKPOINT: the
shipped model, :func:`stoicheia.cli_args.choose_model`).

Loads the model once, then runs the FastAPI application of :mod:`stoicheia.serve.app` with
uvicorn (one process; requests are served from its thread pool), on the h11 protocol of
:mod:`stoicheia.serve.half_close` (a client that half-closes after its request is answered).
Exit status 2 with one line for a checkpoint that does not load or an address that cannot be
bound.
"""

from __future__ import annotations

import argparse
import errno
import sys

from stoicheia.cli_args import int_in


def add_serve_parser(sub: argparse._SubParsersAction, model_args: object) -> None:
    """Register ``serve`` on the ``stoicheia`` sub-command parsers ``sub``; ``model_args`` adds
    the ``CHECKPOINT``/``--config``/``--device`` arguments every model command takes."""
    p = sub.add_parser(
        "serve", help="a local web page (and JSON API) that restores texts with the model"
    )
    model_args(p, optional=True)  # type: ignore[operator]
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this computer only; 0.0.0.0 opens it "
        "to the network)",
    )
    p.add_argument(
        "--port",
        type=int_in(1, 65_535, meaning=" (a TCP port)"),
        default=8000,
        help="TCP port (default 8000)",
    )
    p.add_argument(
        "--parallels",
        metavar="INDEX",
        help="parallels index folder (default: fusion.json's beside the checkpoint, else the "
        "run's shards' parallels folder, found from the checkpoint's folder; '' for none)",
    )
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the server until Ctrl-C; returns the exit status."""
    import socket

    from stoicheia.inference.loading import ModelLoadError, load_model

    # the address first: a port in use fails before the model is loaded
    try:
        with socket.create_server((args.host, args.port)):
            pass
    except OSError as err:
        why = (
            "in use by another program"
            if err.errno == errno.EADDRINUSE
            else (err.strerror or str(err))
        )
        print(
            f"stoicheia serve: error: cannot listen on {args.host}:{args.port} ({why}); "
            "give another --port or --host",
            file=sys.stderr,
        )
        return 2
    from stoicheia.cli_args import choose_model

    code = choose_model(args, "serve")
    if code is not None:
        return code
    try:
        model = load_model(
            args.checkpoint, config=args.config, device=args.device, precision=args.precision
        )
    except ModelLoadError as err:
        print(f"stoicheia serve: error: {err}", file=sys.stderr)
        return 2
    import uvicorn

    from stoicheia.inference.restore.fusion_file import find_fusion
    from stoicheia.inference.restore.gaps import RestoreError
    from stoicheia.serve.app import create_app
    from stoicheia.serve.half_close import HalfCloseH11Protocol

    if args.parallels:  # a given index that does not open is refused now, not at each request
        try:
            find_fusion(model, parallels=args.parallels)
        except RestoreError as err:
            print(f"stoicheia serve: error: --parallels {err}", file=sys.stderr)
            return 2
    app = create_app(model, parallels=args.parallels)
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"serving {model.source} (step {model.step}) at http://{host}:{args.port}/ "
        "(API schema: /openapi.json); Ctrl-C stops",
        flush=True,
    )
    # uvicorn's h11 protocol, made to answer a client that half-closes after its request
    # (serve.half_close: uvicorn took that for a client that had gone, and answered nothing)
    uvicorn.run(app, host=args.host, port=args.port, http=HalfCloseH11Protocol, log_level="warning")
    return 0


__all__ = ["add_serve_parser", "cmd_serve"]
