"""The command-line options of an experiment whose models may run as the embedded SmolLM2 on a
GPU: the model's dtype and device, and how many samples share its generation batches.

One definition, so that two experiments spell them alike and a new experiment gets the same
defaults: nothing given means the backend's own (float32 on a CPU, bfloat16 on a GPU; a GPU when
there is one; Inspect's batch size)."""

from __future__ import annotations

import argparse
from typing import Any

from scorers.lm.loading import DTYPES


def add_model_options(parser: argparse.ArgumentParser, *, dtype_used_as: str) -> None:
    """Add ``--dtype`` (one of :data:`scorers.lm.loading.DTYPES`), ``--device`` and
    ``--max-connections`` to ``parser``; ``dtype_used_as`` says in the help which models the
    dtype reaches (e.g. "as the model under test and as the MI scorer's LM")."""
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        help=f"the embedded model's dtype, {dtype_used_as} (default: the backend's, float32 on "
        "a CPU and bfloat16 on a GPU: ask for float32 there to get a CPU's numbers)",
    )
    parser.add_argument(
        "--device", help="where the embedded model runs (default: a GPU when there is one)"
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        help="the model's concurrent samples, merged into shared generation batches (default: "
        "the provider's; more fills a GPU's batches)",
    )


def lm_args(args: argparse.Namespace) -> dict[str, str]:
    """The dtype and device given on the command line (only those given), as a loader's
    options: the model's ``model_args`` and a scorer LM's options."""
    return {k: v for k, v in (("dtype", args.dtype), ("device", args.device)) if v}


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """Inspect's ``eval`` options for the model under test: its ``model_args`` (the dtype and
    device given) and ``max_connections`` when given."""
    given = lm_args(args)
    options: dict[str, Any] = {"model_args": given} if given else {}
    if args.max_connections:
        options["max_connections"] = args.max_connections
    return options
