"""Paper text from a PDF, with pypdfium2.

Why pypdfium2: it binds PDFium, the PDF engine of Chromium, whose text extraction keeps reading
order and word spacing on two-column LaTeX papers well and takes milliseconds per page; wheels
ship the engine for Linux, macOS and Windows, so nothing is compiled or downloaded at run time;
the bindings are Apache-2.0/BSD-3-Clause and PDFium is BSD-3-Clause/Apache-2.0, compatible with
this project's Apache-2.0 licence. (PyMuPDF is AGPL, so it is not used; the pure-Python pypdf
and pdfminer.six are permissive too but slower, and the GEM authors found PyPDF2's output on
these papers padded with junk text.)

Failures are values, not exceptions, at the builder's level: :func:`pdf_to_text` raises
:class:`PdfError` with the reason, and the builder records it for the paper and keeps the paper
(falling back to title + abstract as the task input).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scorers.errors import GemTasksError

__all__ = ["PdfError", "PdfText", "extract_pages", "pdf_to_text", "strip_back_matter"]


class PdfError(GemTasksError, ValueError):
    """A PDF could not be read or has no text layer."""


@dataclass(frozen=True)
class PdfText:
    """Text of a paper: the pages joined by blank lines, and what was cut off, if anything."""

    text: str
    n_pages: int
    stripped_at: str | None = None
    """The heading where references/appendix were cut (None when nothing was cut)."""
    n_chars_stripped: int = 0


def extract_pages(data: bytes) -> list[str]:
    """The text of each page of the PDF in ``data`` (line breaks normalised to ``\\n``).

    Raises :class:`PdfError` when the bytes are not a readable PDF.
    """
    try:
        import pypdfium2 as pdfium
    except ImportError as exc:
        raise PdfError("PDF text extraction needs pypdfium2: pip install pypdfium2") from exc
    if not data:
        raise PdfError("empty file")
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfError(f"not a readable PDF ({exc})") from exc
    pages = []
    try:
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
            finally:
                textpage.close()
                page.close()
            pages.append(text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", ""))
    except pdfium.PdfiumError as exc:
        raise PdfError(f"text extraction failed ({exc})") from exc
    finally:
        document.close()
    return pages


_BACK_MATTER = re.compile(
    r"^[ \t]*(?:(?:\d+|[A-Z])\.?[ \t]+)?"
    r"(references|bibliography|appendix|appendices|supplementary material)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def strip_back_matter(text: str, *, min_fraction: float = 0.2) -> tuple[str, str | None]:
    """``text`` cut before its first references/bibliography/appendix heading (a line holding
    only that word, optionally numbered, e.g. ``"References"``, ``"A APPENDIX"``), and the
    heading; ``(text, None)`` when there is none. Headings in the first ``min_fraction`` of the
    text (a table of contents) are ignored.
    """
    start = int(len(text) * min_fraction)
    match = _BACK_MATTER.search(text, start)
    if match is None:
        return text, None
    return text[: match.start()].rstrip() + "\n", match.group(0).strip()


def pdf_to_text(data: bytes, *, strip_references: bool = False) -> PdfText:
    """The text of a paper's PDF, optionally without references and appendices.

    Raises :class:`PdfError` for an unreadable PDF or one with no text layer (a scan).
    """
    pages = extract_pages(data)
    text = "\n\n".join(page.strip() for page in pages).strip()
    if not text:
        raise PdfError(f"no text layer in {len(pages)} page(s) (scanned PDF?)")
    text += "\n"
    if not strip_references:
        return PdfText(text=text, n_pages=len(pages))
    kept, heading = strip_back_matter(text)
    return PdfText(
        text=kept,
        n_pages=len(pages),
        stripped_at=heading,
        n_chars_stripped=len(text) - len(kept),
    )
