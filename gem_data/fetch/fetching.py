"""Fetch a public dataset into a data folder: download its pinned files (resumably, checked),
convert them, check the outputs, and write its licence and provenance beside them.

``fetch_dataset("summeval", Path("data"))`` leaves ``data/summeval/`` with the converted files,
``LICENSE`` (where the source has one), ``SOURCE.md`` (what it is, where it came from, the
licence and attribution) and ``SOURCE.json`` (every file's URL and sha256, the outputs' sha256:
a later fetch that finds the outputs intact does nothing). Downloads go to
``<folder>/.download/`` and are removed once the outputs are checked; a stopped fetch resumes
from them.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gem_data.fetch.catalog as catalog
from gem_data.fetch.catalog import RAW_BASE, Dataset, SourceFile, files_digest
from gem_data.fetch.download import GIT_BLOB, FetchError, download, matches, sha256_of
from scorers.data.records import RecordError

__all__ = ["damaged", "fetch_dataset", "fetch_order", "fetched"]

DOWNLOADS = ".download"


def fetch_order(names: Sequence[str]) -> list[Dataset]:
    """The datasets to fetch for ``names`` (``all``: every one), each after those it requires."""
    wanted = list(catalog.DATASETS) if "all" in names else list(names)
    order: list[Dataset] = []

    def visit(name: str) -> None:
        entry = catalog.dataset(name)
        for required in entry.requires:
            visit(required)
        if entry not in order:
            order.append(entry)

    for name in wanted:
        visit(name)
    return order


def damaged(entry: Dataset, data_dir: Path) -> list[str] | None:
    """None when the dataset was never fetched into ``data_dir`` (no ``SOURCE.json``); else what
    is wrong with its outputs against what its fetch recorded, one line each (empty: intact)."""
    folder = data_dir / entry.folder
    record = folder / "SOURCE.json"
    if not record.exists():
        return None
    try:
        outputs = json.loads(record.read_text(encoding="utf-8"))["outputs"]
    except (ValueError, KeyError, TypeError):
        return [f"{record} cannot be read"]
    problems = [f"{folder / name} is missing" for name in sorted(set(entry.outputs) - set(outputs))]
    for name, digest in sorted(outputs.items()):
        path = folder / name
        if not path.exists():
            problems.append(f"{path} is missing")
        elif sha256_of(path) != digest:
            problems.append(f"{path} is damaged (sha256 {sha256_of(path)}, fetched as {digest})")
    return problems


def fetched(entry: Dataset, data_dir: Path) -> bool:
    """Whether the dataset's outputs are in ``data_dir`` as its last fetch recorded them."""
    return damaged(entry, data_dir) == []


def _bar(total_files: int, progress: bool, label: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=None, unit="B", unit_scale=True, desc=f"{label} ({total_files} files)",
        disable=not progress, leave=False,
    )  # fmt: skip


DOWNLOAD_WORKERS = 8
"""Files downloaded at once: a dataset of many small files (ICLR 2026's 17,000 paper notes, SPACE's
525 summaries) waits on round trips, not bandwidth."""


def _download_all(
    files: Sequence[SourceFile], raw: Path, base: str, bar: Any
) -> dict[SourceFile, str]:
    """Download every file (several at once) and return each one's sha256; the first failure
    stops the rest and is raised (what finished stays on disk for the next try)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(spec: SourceFile) -> tuple[SourceFile, str]:
        url, canonical = spec.url(base), spec.url()
        return spec, download(
            url, spec.local(raw), sha256=spec.sha256, progress=bar, source=canonical
        )

    with ThreadPoolExecutor(max_workers=DOWNLOAD_WORKERS) as pool:
        futures = [pool.submit(one, spec) for spec in files]
        try:
            return dict(future.result() for future in futures)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def fetch_dataset(
    name: str, data_dir: Path, *, mirror: str | None = None, progress: bool = True
) -> Path:
    """Fetch one dataset into ``data_dir/<its folder>`` and return that folder.

    Args:
        name: a catalog name (``gem-tasks data fetch --help`` lists them).
        data_dir: the data folder (created); datasets the converter needs are read from it and
            must have been fetched first (:func:`fetch_order` orders them).
        mirror: a base URL laid out as ``<owner>/<repository>/<commit>/<path>`` to fetch from
            instead of raw.githubusercontent.com (a proxy, a local copy, a test server).
        progress: show a progress bar of the bytes downloaded.

    Raises:
        FetchError: a source unreachable (offline: the message says what to do), a pinned file
            missing or changed, the converted outputs differing from the pinned ones.
        RecordError: a downloaded file not of the shape its converter reads.
    """
    entry = catalog.dataset(name)
    folder = data_dir / entry.folder
    problems = damaged(entry, data_dir)
    if problems == []:
        return folder
    if problems:
        warnings.warn(f"{name}: {'; '.join(problems)}: fetched again", UserWarning, stacklevel=2)
    for required in entry.requires:
        if not fetched(catalog.dataset(required), data_dir):
            raise FetchError(
                f"{name} is converted from {required}'s files, not in {data_dir}: fetch "
                f"{required} first (gem-tasks data fetch {required} {name})"
            )
    base = mirror or RAW_BASE
    raw = folder / DOWNLOADS
    folder.mkdir(parents=True, exist_ok=True)
    bar = _bar(len(entry.files), progress, name)
    try:
        digests = _download_all(entry.files, raw, base, bar)
        if entry.more_files is not None:
            more = _download_all(entry.more_files(raw), raw, base, bar)
            _check_more_files(entry, more, mirror=mirror)
            digests |= more
        if entry.licence_file is not None:
            spec = entry.licence_file
            digests[spec] = download(
                spec.url(base), folder / "LICENSE", sha256=spec.sha256, source=spec.url()
            )
    finally:
        bar.close()
    written = entry.convert(raw, folder, data_dir)
    if set(written) != set(entry.outputs):
        raise RecordError(
            f"{name}: the converter wrote {sorted(written)}, expected {sorted(entry.outputs)}"
        )
    outputs = {}
    for output, pinned in entry.outputs.items():
        digest = sha256_of(folder / output)
        if pinned is not None and not matches(folder / output, pinned):
            (folder / output).unlink()
            raise FetchError(
                f"{name}: {output} converts to sha256 {digest}, not the pinned {pinned} that "
                "the published results were computed on (the source at its pinned commit "
                "changed, or the converter did); removed"
            )
        outputs[output] = digest
    _write_provenance(entry, folder, mirror, digests, outputs)
    shutil.rmtree(raw, ignore_errors=True)
    return folder


def _check_more_files(
    entry: Dataset, digests: dict[SourceFile, str], *, mirror: str | None
) -> None:
    """The files a dataset derives from its first ones are the pinned ones: their
    :func:`~gem_data.fetch.catalog.files_digest` is the dataset's ``more_files_digest``."""
    if entry.more_files_digest is None:
        raise FetchError(f"{entry.name}: its derived files have no pin (more_files_digest)")
    found = files_digest({spec.path: digest for spec, digest in digests.items()})
    if found != entry.more_files_digest:
        whose = f"the mirror's copies at {mirror}" if mirror else "the source's files"
        raise FetchError(
            f"{entry.name}: the {len(digests)} files derived from its list digest to {found}, "
            f"not the pinned {entry.more_files_digest}: {whose} differ from the pinned commit's "
            f"(or the list names other files); the downloads stay in place for a look"
        )


def _write_provenance(
    entry: Dataset,
    folder: Path,
    mirror: str | None,
    downloads: dict[SourceFile, str],
    outputs: dict[str, str],
) -> None:
    from scorers.signature import package_version

    when = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    record = {
        "dataset": entry.name,
        "source": entry.source,
        "licence": entry.licence,
        "fetched": when,
        "fetched_by": f"gem-tasks {package_version()}",
        # canonical URLs; the mirror the bytes came through, apart
        "fetched_through": mirror.rstrip("/") if mirror else None,
        "downloads": {
            spec.url(): {
                "sha256": digest,
                "pinned_by": "sha256"
                if spec.sha256 and not spec.sha256.startswith(GIT_BLOB)
                else "git object id"
                if spec.sha256
                else "the digest over the dataset's derived files",
            }
            for spec, digest in sorted(downloads.items(), key=lambda item: item[0].url())
        },
        "derived_files_digest": entry.more_files_digest,
        "outputs": outputs,
    }
    commits = sorted({f"{spec.repo}@{spec.commit}" for spec in (*entry.files,)})
    lines = [
        f"# {entry.name}",
        "",
        entry.summary[0].upper() + entry.summary[1:] + ".",
        "",
        f"- Source: {entry.source}, at {', '.join(commits)}.",
        f"- Licence: {entry.licence}.",
        f"- Attribution: {entry.attribution}",
        f"- Fetched {when} by `gem-tasks data fetch {entry.name}` ({len(downloads)} files; "
        "their URLs and sha256 in SOURCE.json).",
        "",
        "| file | sha256 |",
        "| --- | --- |",
        *(f"| {name} | `{digest}` |" for name, digest in sorted(outputs.items())),
        "",
    ]
    (folder / "SOURCE.md").write_text("\n".join(lines), encoding="utf-8")
    (folder / "SOURCE.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
