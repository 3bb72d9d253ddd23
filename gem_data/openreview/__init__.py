"""Real benchmark data: GRE-bench datasets built from OpenReview for any ICLR (2018-) or NeurIPS
(2021-) year, and public releases converted into the canonical records (scorers/data/records.py).

- :mod:`.client`: which API serves a venue, guest ``openreview-py`` clients, the small client
  protocol tests fake;
- :mod:`.forms`: each ICLR and NeurIPS year's review form mapped onto the ICLR 2023
  four-section layout, and its rating scale onto the ICLR 2024/25 scale;
- :mod:`.filters`: the Beyond Rating quality filters (confidence, review count, rating variance);
- :mod:`.pdf`: paper text from PDFs (pypdfium2), optional cut of references/appendices;
- :mod:`.build`: the resumable builder; :mod:`.enrich`: judgment summaries and ASSW, cached;
- :mod:`.hub`, :mod:`.convert`: the Hub's ReviewBench and the GEM authors' release.

Nothing here imports inspect_ai; ``openreview-py`` and ``pypdfium2`` are imported only when a
build needs them.
"""

from gem_data.openreview.build import BuildConfig, BuildResult, build_dataset
from gem_data.openreview.convert import ConvertConfig, convert_dataset
from gem_data.openreview.enrich import Enricher, enrich_records, fit_to_context
from gem_data.openreview.errors import (
    OpenReviewError,
    RateLimited,
    Unreachable,
    VenueNotFound,
)
from gem_data.openreview.filters import BEYOND_RATING_FILTERS, apply_quality_filters
from gem_data.openreview.forms import (
    FORMS_BY_YEAR,
    NEURIPS_FORMS_BY_YEAR,
    RatingScale,
    form_for_venue,
    form_for_year,
    normalise_review,
    parse_score,
)
from gem_data.openreview.pdf import PdfError, pdf_to_text, strip_back_matter
from gem_data.openreview.submissions import clean_decision

__all__ = [
    "BEYOND_RATING_FILTERS",
    "FORMS_BY_YEAR",
    "NEURIPS_FORMS_BY_YEAR",
    "BuildConfig",
    "BuildResult",
    "ConvertConfig",
    "Enricher",
    "OpenReviewError",
    "PdfError",
    "RateLimited",
    "RatingScale",
    "Unreachable",
    "VenueNotFound",
    "apply_quality_filters",
    "build_dataset",
    "clean_decision",
    "convert_dataset",
    "enrich_records",
    "fit_to_context",
    "form_for_venue",
    "form_for_year",
    "normalise_review",
    "parse_score",
    "pdf_to_text",
    "strip_back_matter",
]
