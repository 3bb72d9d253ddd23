"""``gem-tasks data fetch``: the public datasets the evidence uses, from where they are published
(pinned to a commit, sha256-checked where the bytes are known), converted to the files the tasks
read, with their licence and attribution beside them.

- :mod:`gem_data.fetch.catalog`: what each dataset is, where it comes from, what it writes.
- :mod:`gem_data.fetch.download`: one resumable, checked download.
- :mod:`gem_data.fetch.convert`: the published files to the tasks' files.
- :mod:`gem_data.fetch.fetching`: one dataset end to end, with its provenance.
"""

from gem_data.fetch.catalog import DATASETS, Dataset, SourceFile, dataset
from gem_data.fetch.download import FetchError
from gem_data.fetch.fetching import fetch_dataset, fetch_order, fetched

__all__ = [
    "DATASETS",
    "Dataset",
    "FetchError",
    "SourceFile",
    "dataset",
    "fetch_dataset",
    "fetch_order",
    "fetched",
]
