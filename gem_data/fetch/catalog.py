"""The public datasets ``gem-tasks data fetch`` knows: where each is published (a repository
pinned to a commit), every file taken from it pinned (its sha256; its git object id where only
the repository's tree was at hand; for the sources of many small files, one digest over every
file's sha256), its licence and attribution, and the converter that writes the files the tasks
read.

Every output is pinned too: a fetch that converts to other bytes than the ones the committed
evidence was computed on stops and says so.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gem_data.fetch.convert as convert
import gem_data.fetch.iclr2026 as iclr2026
from scorers.registries import Registry

__all__ = ["DATASETS", "Dataset", "SourceFile", "dataset", "files_digest"]

RAW_BASE = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class SourceFile:
    """One file of a source repository at a pinned commit and its pin: its sha256, or
    ``git-blob:<object id>`` (:data:`~gem_data.fetch.download.GIT_BLOB`); None only for the
    files a dataset derives (``more_files``), which its ``more_files_digest`` pins together."""

    repo: str
    commit: str
    path: str
    sha256: str | None = None

    def url(self, base: str = RAW_BASE) -> str:
        """The file's URL under ``base``, its path percent-encoded (spaces, commas, ...)."""
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{urllib.parse.quote(self.path)}"

    def local(self, raw: Path) -> Path:
        """Where it is downloaded: ``<raw>/<owner>+<name>/<path>``."""
        return raw / self.repo.replace("/", "+") / self.path


@dataclass(frozen=True)
class Dataset:
    """A fetchable dataset.

    ``files`` lists what is downloaded (or, for sources with many small files, ``more_files``
    derives the rest from what is already there); ``convert(raw, out, data_dir)`` writes the
    outputs into ``out`` (``<data_dir>/<folder>``) from the downloads under ``raw`` and returns
    their names; ``outputs`` pins each output's sha256 (None: not known in advance);
    ``requires`` names datasets whose outputs the converter reads (fetched first);
    ``more_files_digest`` pins the files ``more_files`` derives, all together
    (:func:`files_digest`)."""

    name: str
    folder: str
    summary: str
    source: str
    licence: str
    attribution: str
    files: tuple[SourceFile, ...]
    convert: Callable[[Path, Path, Path], list[str]]
    outputs: dict[str, str | None]
    licence_file: SourceFile | None = None
    more_files: Callable[[Path], list[SourceFile]] | None = None
    requires: tuple[str, ...] = field(default=())
    more_files_digest: str | None = None


def files_digest(digests: dict[str, str]) -> str:
    """One sha256 over many files: of the lines ``<path> <sha256>``, sorted by path, each ended
    by a newline (``digests``: path -> the file's sha256)."""
    lines = "".join(f"{path} {digest}\n" for path, digest in sorted(digests.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def _repo_file(repo: str, commit: str) -> Callable[[str, str | None], SourceFile]:
    return lambda path, sha256=None: SourceFile(repo, commit, path, sha256)


GEM = _repo_file(
    "yx-lu/Benchmarking-LLMs--Judgments-with-No-Gold-Standard",
    "b19e1ee26a2d54e4c9656638912d5ff383d6329a",
)
GPPM = _repo_file(
    "yx-lu/Eliciting-Informative-Text-Evaluations-with-Large-Language-Models",
    "b17df54a515f24972ac575a267a9b401d6d10400",
)
PAPERLISTS_2020 = SourceFile(
    "papercopilot/paperlists",
    "78cd1f45c0f9788f78c68c92bd41e5eb5346ac0b",
    "iclr/iclr2020.json",
    "6d6f64bebcddd22be0a88ebe87a2e9c09424d6a784902930bd8bdcdf1bbfb0e8",
)
PAPERLISTS_2023 = SourceFile(
    "papercopilot/paperlists",
    "8446533d9819f5f916772aff2ac750b181c28d88",
    "iclr/iclr2023.json",
    "a9281c44d2964cc0a5ac205ab01c092c0de83f8f3cd2ce1686ffc139a91f0c44",
)
LFQA_E_BENCHMARK = "git-blob:cf2aeb245c1d7b7fd658b7293df77d4c890e101b"
"""LFQA-E's English benchmark, ``data/unified_benchmark_en.json`` at 81eb3e3: pinned by the git
object id its repository's tree gives it (its bytes were not at hand); the fetch copies it as
it is, so the output has the same id."""
ICLR2026_PAPERS_DIGEST = "7d16bcc90f7a507fd3dea3e3acba74fcd13a8abdc2c3372cf06c736d9d797bda"
""":func:`files_digest` of the 17,275 tracker paper files the converter reads at 8dc6f4d3 (the
17,274 the list names and the one it leaves out), computed from the repository's objects."""
SPACE_GOLD_DIGEST = "b65a2c0481ef2cf63eb4cbad431fe802ea66ca4f8cafd55b0b11f1d4320fd4e6"
""":func:`files_digest` of the 525 gold summaries of SPACE's development hotels at c136ac00."""
BARTSCORE = _repo_file("neulab/BARTScore", "248f511cb34ae3753fc81f7d7a945de5bfe33458")
SUMMEVAL = _repo_file("Yale-LILY/SummEval", "7e4330d0e08c78d536711657ac2bf8895152c9ed")
QT = _repo_file("stangelid/qt", "c136ac00e03adf443b90cd65ba0523a3617be01f")
LFQA_E = _repo_file("YuchenFan48/LFQA-E", "81eb3e37523f2806b25e2f20834ae528239d479d")
LFQA_E_FIRST = _repo_file("ChenLing03/LFQA-E", "f22577c35c858f2a8a0c134e4d5f55956f1e58ba")

ICLR2026_TRACKER = _repo_file(
    "imczxx/ICLR2026ReviewTracker", "8dc6f4d36a3417acdbe26b7fc391511f47bf4aa9"
)
ICLR2026_ACCEPTED = _repo_file(
    "alickzhu/iclr2026-papers", "cefdae8fee477c033281c696abdb801d88a273db"
)

SPACE_SPLITS = QT(
    "data/space_summ_splits.txt", "837ed47f418c036cfcf26c97196ae7549e5ef951017bffcc543919865eed7f42"
)


def _in(raw: Path, spec: SourceFile) -> Path:
    """The folder a converter reads a repository's files from."""
    return raw / spec.repo.replace("/", "+")


def _ids(path: Path, key: str) -> list[str]:
    return [
        str(json.loads(line)[key])
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def _decisions(raw: Path, out: Path, data_dir: Path) -> list[str]:
    sets = (
        (PAPERLISTS_2020, "ICLR 2020", data_dir / "iclr2020_gppm" / "iclr2020_papers.jsonl", "id"),
        (
            PAPERLISTS_2023,
            "ICLR 2023",
            data_dir / "iclr2023_gem" / "iclr2023_reviews.jsonl",
            "paper_id",
        ),
    )
    written = []
    for spec, venue, papers, key in sets:
        year = venue.split()[-1]
        written += convert.decisions_csv(
            spec.local(raw),
            _ids(papers, key),
            out / f"iclr{year}_decisions.csv",
            venue=venue,
        )
    return written


# The list's sha256 is that of its bytes rebuilt from the tracker's paper files the way its
# generate_static_site.py writes them, which give git blob 78fb0a68, the list's blob in the tree
# at 8dc6f4d3 (the bytes themselves were not at hand: checked by their git object id).
ICLR2026_LIST = ICLR2026_TRACKER(
    iclr2026.LIST_PATH, "bb2617d5fb57ec417ce946fedf3af4ebced862f407a0def2b525fac95d944115"
)
ICLR2026_LISTS = {
    "alignment, fairness, safety, privacy, and societal considerations": (
        "50373c3743bbc9ad806631a5d6b3d0061b151caaf2b209e8d31048f205b1438d"
    ),
    "applications to computer vision, audio, language, and other modalities": (
        "be8aa20b2b05e0efa6a48a225a7438d8ee38069b18c16b1cf38300e80f0bedda"
    ),
    "datasets and benchmarks": "3e2a9a86a974177a1882c18efb7766d6f40698de27dbaca473ac251c442c1129",
    "foundation or frontier models, including LLMs": (
        "f523280e0bfc8190bf311d74697baf4ec7489e38bfe70467bae585a827bc5303"
    ),
    "generative models": "f22c891365566040d6ac04abf98b72c32a9a6c21e26b0d20e9f7739bf0c8eea6",
    "interpretability and explainable AI": (
        "9e3e4cca9f808ab8407b70312c24bc416e6ab98cd11f91d8d209130c9210ea2a"
    ),
    "learning theory": "33967e82aab1fd81f49fbb1bbdb4d7d7c49d347c192f9478c5907c637f14a812",
    "optimization": "f8931704378ee5d198e649760efeaf52f472bda57017b471e7f6be60caafdecd",
    "probabilistic methods (Bayesian methods, variational inference, sampling, UQ, etc.)": (
        "b8e8ddd81c8a666cbfd6b5734a2a7f7c8468f627742f51ccc49bfe3d226fa798"
    ),
    "reinforcement learning": "70aa2c385ec3f4455e447c88723c9826fe7fc27d99c41cdf3125b940e4086ce3",
    "transfer learning, meta learning, and lifelong learning": (
        "6d191aac239144ec418e95bacf5860b0e978c94f1e0197dc95dc8e363c1d5e13"
    ),
    "unsupervised, self-supervised, semi-supervised, and supervised representation learning": (
        "3cabd1ff21c286c1aa02ee5b57eaf5d2a2464edd17e6ab915fe1cccf893cbef8"
    ),
}
"""The sha256 of each primary area's accepted list (iclr2026.AREAS, in its order)."""


def _iclr2026_papers(raw: Path) -> list[SourceFile]:
    """The tracker's paper files the converter reads, from its list (already downloaded)."""
    return [ICLR2026_TRACKER(path) for path in iclr2026.paper_paths(ICLR2026_LIST.local(raw))]


def _space_gold(raw: Path) -> list[SourceFile]:
    hotels = convert.space_split(_in(raw, SPACE_SPLITS), "dev")
    return [QT(path) for path in convert.space_gold_paths(hotels)]


_CATALOG: tuple[Dataset, ...] = (
    Dataset(
        name="iclr2023-gem",
        folder="iclr2023_gem",
        summary="ICLR 2023 reviews of the GEM authors' release: 1,200 papers, 3 reviews each "
        "with GPT-4o judgment summaries (no abstracts)",
        source="the GEM authors' release (Xu, Lu, Schoenebeck and Kong, 'Benchmarking LLMs' "
        "Judgments with No Gold Standard', ICLR 2025), task_iclr23/dataset/",
        licence="Apache-2.0 (the release's LICENSE, copied beside the data)",
        attribution="Reviews: public ICLR 2023 OpenReview content. Judgment summaries and "
        "selection: the GEM authors' release. Rows 300-1,499 of its three "
        "dataset_human_review<k>.parquet files, one paper per line.",
        files=(
            GEM(
                "task_iclr23/dataset/dataset_human_review1.parquet",
                "864bb02efeaf4364b7f5ef164f237356d7899f1aea98b06890ff36cc2aa1b8aa",
            ),
            GEM(
                "task_iclr23/dataset/dataset_human_review2.parquet",
                "399f88ae29813c6eec8cc41413834aab8a42b041ff347b6640d1f388a779b5d1",
            ),
            GEM(
                "task_iclr23/dataset/dataset_human_review3.parquet",
                "02d2c7753e10cbb80080958397b77e0d57216dc773c7acd8124ce68889d0e9dc",
            ),
        ),
        licence_file=GEM(
            "LICENSE", "50e6751797c50dedd75ef1b8a0d9e42f5f8472e9fbce91f34718e9f97b0c780a"
        ),
        convert=lambda raw, out, _: convert.gem_release_reviews(_in(raw, GEM("x")), out),
        outputs={
            "iclr2023_reviews.jsonl": (
                "0bcdf8b956722a37e3788d1a8b56dedec856cc5e4216c21953335d8e0f54ffb5"
            ),
        },
    ),
    Dataset(
        name="iclr2020-gppm",
        folder="iclr2020_gppm",
        summary="ICLR 2020: 300 papers (title, abstract) and their 911 official reviews with "
        "ratings, the GPPM authors' random sample",
        source="the GPPM authors' repository (Lu, Xu, Zhang, Kong and Schoenebeck, 'Eliciting "
        "Informative Text Evaluations with Large Language Models', EC 2024), openreview/",
        licence="no licence file in the source repository; the paper and review texts are "
        "public ICLR 2020 OpenReview content",
        attribution="Papers and reviews: ICLR 2020 on OpenReview. Sample: the GPPM authors. "
        "Converted to one paper per line with its reviews (rating from the label's number).",
        files=(
            GPPM(
                "openreview/openreview_item_rand.json",
                "6f8dc3264489b68f51eb8be93d5587286744074a6554d7c93b5482e8d1b74ce7",
            ),
            GPPM(
                "openreview/openreview_review_rand.json",
                "f3ed37d22f6b4a597bd0d3f559356ae58207a6e4d08cafb8796c9caee484e7a7",
            ),
        ),
        convert=lambda raw, out, _: convert.gppm_papers(_in(raw, GPPM("x")), out),
        outputs={
            "iclr2020_papers.jsonl": (
                "f3f6d17310efbf956993f0a3fe6280df6a80d95adb99706c51f968ef6297acb0"
            ),
            "openreview_item_rand.json": (
                "6f8dc3264489b68f51eb8be93d5587286744074a6554d7c93b5482e8d1b74ce7"
            ),
            "openreview_review_rand.json": (
                "f3ed37d22f6b4a597bd0d3f559356ae58207a6e4d08cafb8796c9caee484e7a7"
            ),
        },
    ),
    Dataset(
        name="decisions",
        folder="decisions",
        summary="accept/reject decisions and every official reviewer's rating for the papers "
        "of iclr2020-gppm and iclr2023-gem (fetched first when absent)",
        source="papercopilot/paperlists (iclr/iclr2020.json, iclr/iclr2023.json)",
        licence="no licence file in the source repository; the decisions and ratings are "
        "public OpenReview outcomes: attribute paperlists (Paper Copilot)",
        attribution="Decisions and ratings: ICLR 2020 and 2023 on OpenReview, as listed by "
        "papercopilot/paperlists. paperlists' status is written in OpenReview's decision "
        "wording (Poster -> 'Accept (Poster)', Top-25% -> 'Accept (Spotlight, "
        "notable-top-25%)', ...); the papers in their set's order.",
        files=(PAPERLISTS_2020, PAPERLISTS_2023),
        convert=_decisions,
        outputs={
            "iclr2020_decisions.csv": (
                "fb2cc723ea8cd45b63e697e077b9c374aab46f652fa047b2b5088d961db2b42e"
            ),
            "iclr2023_decisions.csv": (
                "79e07d3a787f4e70a2774a1ab4beb400f90a944b9258aaa30b1ac5584f58da06"
            ),
        },
        requires=("iclr2020-gppm", "iclr2023-gem"),
    ),
    Dataset(
        name="summeval",
        folder="summeval",
        summary="SummEval: 100 CNN/DailyMail articles, 11 human summaries and 16 systems' "
        "summaries with expert ratings each (and the 60-article subset the evidence uses)",
        source="SummEval (Fabbri, Kryściński, McCann, Xiong, Socher and Radev, 'SummEval: "
        "Re-evaluating Summarization Evaluation', TACL 2021), as packaged by neulab/BARTScore "
        "(SUM/SummEval/data.pkl)",
        licence="MIT (SummEval's LICENSE, copied beside the data)",
        attribution="SummEval by Fabbri et al. (TACL 2021); the copy in neulab/BARTScore, read "
        "as plain data. Each system's expert_avg is the mean of three expert ratings (1-5).",
        files=(
            BARTSCORE(
                "SUM/SummEval/data.pkl",
                "008f1639a3352f0248cac88b74ff431c27287a027a888902ef425a26005f0acf",
            ),
        ),
        licence_file=SUMMEVAL(
            "LICENSE", "277a0ce9704840854ff8d31b8a6adbc4af73f5688eb4a8820e372ed10fff850e"
        ),
        convert=lambda raw, out, _: convert.summeval_articles(_in(raw, BARTSCORE("x")), out),
        outputs={
            "summeval.jsonl": ("4095c7ebeb20449a8726be82d508e3b31c13157d68fe19a37eb13957aff2989b"),
            "summeval_60docs.jsonl": (
                "68144b3b3e7f5e03c8580ef596fc2b46ccd8034fba0ff230718ac63211d368c4"
            ),
        },
    ),
    Dataset(
        name="space",
        folder="space",
        summary="SPACE: the 25 development hotels' human reference summaries, 3 per aspect "
        "(7 aspects)",
        source="SPACE (Angelidis, Amplayo, Suhara, Wang and Lapata, 'Extractive Opinion "
        "Summarization in Quantized Transformer Spaces', TACL 2021), stangelid/qt data/gold/",
        licence="MIT (the repository's LICENSE, copied beside the data)",
        attribution="SPACE by Angelidis et al. (TACL 2021). The dev split's gold summaries, "
        "whitespace collapsed, one hotel per line.",
        files=(SPACE_SPLITS,),
        more_files=_space_gold,
        more_files_digest=SPACE_GOLD_DIGEST,
        licence_file=QT(
            "LICENSE", "2a9515eb0c8f8a1757cb23e2155f439c79657ce0bd7cd44fac63e9c5b6a98592"
        ),
        convert=lambda raw, out, _: convert.space_references(_in(raw, SPACE_SPLITS), out),
        outputs={
            "space_dev_refs.jsonl": (
                "2fc9c715b7380153b267ff015b1b4891cf4609a88db9c1fedee52bc7dedd52d6"
            ),
        },
    ),
    Dataset(
        name="lfqa-e",
        folder="lfqa_e",
        summary="LFQA-E (English): long-form answers to ELI5 questions compared in pairs by "
        "experts, with an expert reference answer per question (and the 12-record English "
        "test sample of its first release)",
        source="LFQA-E ('LFQA-E: Carefully Benchmarking Long-form QA Evaluation'): the "
        "benchmark YuchenFan48/LFQA-E data/unified_benchmark_en.json, and the first release's "
        "sample ChenLing03/LFQA-E data/en_test.json",
        licence="MIT, as both repositories' READMEs state (no licence file at the pinned commits)",
        attribution="LFQA-E by its authors; questions from Reddit's ELI5. Both files as "
        "published, checked for the fields the task reads.",
        files=(
            LFQA_E("data/unified_benchmark_en.json", LFQA_E_BENCHMARK),
            LFQA_E_FIRST(
                "data/en_test.json",
                "b7f5aefcf79382c83a6cfff530460762204d043f0dc79c02c7c6423f2ab352ea",
            ),
        ),
        convert=lambda raw, out, _: convert.lfqa_e_benchmark(
            _in(raw, LFQA_E("x")), _in(raw, LFQA_E_FIRST("x")), out
        ),
        outputs={
            "lfqa_e_en.json": LFQA_E_BENCHMARK,
            "lfqa_e_en_sample.json": (
                "b7f5aefcf79382c83a6cfff530460762204d043f0dc79c02c7c6423f2ab352ea"
            ),
        },
    ),
    Dataset(
        name="iclr2026",
        folder="iclr2026",
        summary="ICLR 2026 (GRE-bench's contamination-free edition): 1,200 submissions, a seeded "
        "sample of the 13,514 eligible ones of 12 primary areas (and all 13,514), each with "
        "title, abstract, decision and its official reviews (3 or more: text, rating on "
        "0/2/4/6/8/10, confidence, soundness, presentation, contribution), as of 2025-11-22",
        source="OpenReview's ICLR 2026 notes (API v2) as crawled by imczxx/ICLR2026ReviewTracker "
        "(docs/data/papers-list.json, docs/data/papers/<forum>.json), and the accepted papers "
        "of 12 primary areas from alickzhu/iclr2026-papers (iclr_paper/*.csv)",
        licence="each review note is CC BY 4.0 (its OpenReview licence field): attribute "
        "OpenReview and the ICLR 2026 reviewers; neither repository has a licence file",
        attribution="Reviews: the ICLR 2026 reviewers, on OpenReview (CC BY 4.0); papers' "
        "titles and abstracts: their authors, on OpenReview; crawl: imczxx/ICLR2026ReviewTracker; "
        "accepted lists: alickzhu/iclr2026-papers. Eligible: one of the 12 areas, not withdrawn, "
        "3 or more official reviews (the latest version of each); a paper on no accepted list "
        "is 'Reject', marked inferred. Sample: draws 300-1,499 of random.Random(20261127)"
        ".sample(eligible sorted by id, 1,500) (gem_data.fetch.iclr2026).",
        files=(
            ICLR2026_LIST,
            *(
                ICLR2026_ACCEPTED(iclr2026.accepted_list_path(area), ICLR2026_LISTS[area])
                for area in iclr2026.AREAS
            ),
        ),
        more_files=_iclr2026_papers,
        more_files_digest=ICLR2026_PAPERS_DIGEST,
        convert=lambda raw, out, _: iclr2026.convert(
            _in(raw, ICLR2026_LIST), _in(raw, ICLR2026_ACCEPTED("x")), out
        ),
        outputs={
            "iclr2026_records.jsonl": (
                "7bd83efa69c1ee6e541f4e8fb672e135b892f77b8bb59aa3b059a0ead04d7b20"
            ),
            "iclr2026_eligible.jsonl": (
                "9f1d103e246b1258044b3e3d6bb5f63f8d26677529a127780cc4119c0052cedf"
            ),
        },
    ),
)

DATASETS: Registry[Dataset] = Registry.of(
    "dataset",
    _CATALOG,
    hint="another ICLR (2018-) or NeurIPS (2021-) year is built from OpenReview: gem-tasks data "
    "build --venue ICLR.cc/<year>/Conference --out data/<name>",
)


def dataset(name: str) -> Dataset:
    """The dataset of that name; an unknown name is an
    :class:`~scorers.registries.UnknownNameError` (a ``KeyError``) listing the names and how to
    build another year."""
    return DATASETS[name]


def names() -> Sequence[str]:
    return list(DATASETS)
