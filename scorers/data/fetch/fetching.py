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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scorers.data.fetch import catalog
from scorers.data.fetch.catalog import RAW_BASE, Dataset, SourceFile
from scorers.data.fetch.download import FetchError, download, sha256_of
from scorers.data.records import RecordError

__all__ = ["fetch_dataset", "fetched", "fetch_order"]

DOWNLOADS = ".download"


def fetch_order(names: Sequence[str]) -> list[Dataset]:
    """The datasets to fetch for ``names`` (``all``: every one), each after those it requires."""
    wanted = [entry.name for entry in catalog.DATASETS] if "all" in names else list(names)
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


def fetched(entry: Dataset, data_dir: Path) -> bool:
    """Whether the dataset's outputs are in ``data_dir`` as its last fetch recorded them."""
    folder = data_dir / entry.folder
    record = folder / "SOURCE.json"
    if not record.exists():
        return False
    try:
        outputs = json.loads(record.read_text(encoding="utf-8"))["outputs"]
    except (ValueError, KeyError, TypeError):
        return False
    return set(outputs) == set(entry.outputs) and all(
        (folder / name).exists() and sha256_of(folder / name) == digest
        for name, digest in outputs.items()
    )


def _bar(total_files: int, progress: bool, label: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=None, unit="B", unit_scale=True, desc=f"{label} ({total_files} files)",
        disable=not progress, leave=False,
    )  # fmt: skip


DOWNLOAD_WORKERS = 8
"""Files downloaded at once: a dataset of many small files (ICLR 2026's 17,000 paper notes, SPACE's
525 summaries) waits on round trips, not bandwidth."""


def _download_all(files: Sequence[SourceFile], raw: Path, base: str, bar: Any) -> dict[str, str]:
    """Download every file (several at once); the first failure stops the rest and is raised
    (what finished stays on disk for the next try)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(spec: SourceFile) -> tuple[str, str]:
        url = spec.url(base)
        return url, download(url, spec.local(raw), sha256=spec.sha256, progress=bar)

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
    if fetched(entry, data_dir):
        return folder
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
            digests |= _download_all(entry.more_files(raw), raw, base, bar)
        if entry.licence_file is not None:
            spec = entry.licence_file
            digests[spec.url(base)] = download(
                spec.url(base), folder / "LICENSE", sha256=spec.sha256
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
        if pinned is not None and digest != pinned:
            (folder / output).unlink()
            raise FetchError(
                f"{name}: {output} converts to sha256 {digest}, not the pinned {pinned} that "
                "the published results were computed on (the source at its pinned commit "
                "changed, or the converter did); removed"
            )
        outputs[output] = digest
    _write_provenance(entry, folder, base, digests, outputs)
    shutil.rmtree(raw, ignore_errors=True)
    return folder


def _write_provenance(
    entry: Dataset, folder: Path, base: str, downloads: dict[str, str], outputs: dict[str, str]
) -> None:
    from scorers.signature import package_version

    when = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    pinned = {spec.url(base): spec.sha256 for spec in entry.files}
    if entry.licence_file is not None:
        pinned[entry.licence_file.url(base)] = entry.licence_file.sha256
    record = {
        "dataset": entry.name,
        "source": entry.source,
        "licence": entry.licence,
        "fetched": when,
        "fetched_by": f"gem-tasks {package_version()}",
        "downloads": {
            url: {"sha256": digest, "checked": pinned.get(url) is not None}
            for url, digest in sorted(downloads.items())
        },
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
