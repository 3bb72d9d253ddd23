"""GRE-bench in lm-evaluation-harness: options, documents, the config's metrics, and a real
offline ``lm_eval`` run whose per-sample GEM equals the core's and the Inspect task's."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gem_tasks.cli import main as cli_main
from gem_tasks.lm_eval_tasks import CONFIG_PATH, task_manager
from gem_tasks.lm_eval_tasks.gre_bench import (
    DEFAULT_SCORERS,
    HarnessOptions,
    load_docs,
    process_results,
    score_reviews,
    total,
)
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.registry import metric_spec

CONFIG = CONFIG_PATH / "gre_bench_iclr.yaml"


class _FunctionTag(yaml.SafeLoader):
    """Reads lm_eval's ``!function`` tags as plain strings."""


_FunctionTag.add_constructor("!function", lambda loader, node: f"!function {node.value}")


def _config() -> dict:
    return yaml.load(CONFIG.read_text(encoding="utf-8"), Loader=_FunctionTag)


@pytest.mark.slow
def test_the_cli_prints_the_folder_lm_eval_includes(capsys):
    assert cli_main(["lm-eval-path"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder == CONFIG_PATH and (folder / "gre_bench_iclr.yaml").is_file()
    assert "gre_bench_iclr" in task_manager().all_tasks


def test_the_configs_metrics_are_the_registrys_with_its_directions():
    config = _config()
    listed = [m["metric"] for m in config["metric_list"]]
    scored = [m for m in listed if not m.endswith("_unscored")]
    assert config["metadata"]["scorers"] == DEFAULT_SCORERS == ",".join(scored)
    assert sorted(m for m in listed if m.endswith("_unscored")) == sorted(
        f"{m}_unscored" for m in scored
    )
    for entry in config["metric_list"]:
        name = entry["metric"]
        if name.endswith("_unscored"):
            assert entry["higher_is_better"] is False and entry["aggregation"].endswith("total")
        else:
            assert entry["higher_is_better"] is metric_spec(name).higher_is_better, name
            assert entry["aggregation"] == "nanmean"


def test_options_ignore_lm_evals_own_keys_and_catch_near_misses():
    options = HarnessOptions.from_metadata(
        {"pretrained": "x", "dtype": "float32", "version": 1.0, "candidate": "human"}
    )
    assert options.candidate == "human" and options.scorers == DEFAULT_SCORERS
    with pytest.raises(ValueError, match="did you mean 'scorer_lm'"):
        HarnessOptions.from_metadata({"scorer_llm": "embedded"})
    with pytest.raises(ValueError, match="candidate must be"):
        HarnessOptions(candidate="humans")
    with pytest.raises(ValueError, match="unknown scorer 'gemm'"):
        HarnessOptions(scorers="gem,gemm")
    with pytest.raises(ValueError, match="scorer_options for bleu, which are not among"):
        HarnessOptions(scorers="gem", scorer_options={"bleu": {}}).plan()
    built = HarnessOptions(scorers="gem,bleu", dataset_summaries=True).metrics()
    assert list(built) == ["gem", "bleu"]
    assert built["gem"].options.dataset_summaries is True


def test_documents_are_the_inspect_tasks_samples():
    """Both harnesses put the same paper document and the same C.3 prompt in each sample."""
    from gem_tasks.tasks.samples import DEMO_DATASET, paper_samples
    from scorers.data.task_data import TaskData

    docs = load_docs(version=1.0, references=2, seed=3)["test"]
    samples = paper_samples(
        TaskData.load(DEMO_DATASET), references=2, seed=3, max_paper_tokens=12000
    )
    assert len(docs) == len(samples) == 10
    for doc, sample in zip(docs, samples, strict=True):
        assert json.loads(doc["document"]) == sample.metadata
        assert [doc["system_prompt"], doc["user_prompt"]] == [m.text for m in sample.input]
        assert doc["held_out_review"] == sample.target
        assert json.loads(doc["options"])["seed"] == 3


def test_negatives_are_drawn_when_a_metric_needs_them():
    docs = load_docs(scorers="fmi_tv_fvar_report")["test"]
    negatives = json.loads(docs[0]["document"])["negatives"]
    assert len(negatives) == 4 and all(n["paper_id"] != docs[0]["paper_id"] for n in negatives)
    assert json.loads(load_docs()["test"][0]["document"])["negatives"] == []


def test_unscored_samples_keep_their_reason_and_are_counted():
    """A paper whose references are all empty is unscored (NaN, counted, reason logged); an
    empty review is scored as the family defines it (no overlap, flagged), never dropped."""
    docs = [dict(d) for d in load_docs(scorers="bleu,rouge_l")["test"]][:3]
    document = json.loads(docs[0]["document"])
    document["references"] = [{**r, "text": "  "} for r in document["references"]]
    docs[0]["document"] = json.dumps(document)
    out = score_reviews([["a review"], ["   "], [docs[2]["held_out_review"]]], docs)
    first, empty, real = (
        process_results(doc, [resp[0]]) for doc, resp in zip(docs, out, strict=True)
    )
    assert math.isnan(first["bleu"]) and first["bleu_unscored"] == 1.0
    assert json.loads(out[0][0])["scores"]["bleu"]["unscored_reason"].startswith(
        "no usable reference"
    )
    assert empty["bleu"] == 0.0 and empty["bleu_unscored"] == 0.0
    assert "empty_candidate" in json.loads(out[1][0])["scores"]["bleu"]["flags"]
    assert real["bleu"] == pytest.approx(
        get_metric("bleu").score(_item(docs[2], docs[2]["held_out_review"]), None).value
    )
    assert real["bleu_unscored"] == 0.0 and real["rouge_l"] > 0
    assert total([first["bleu_unscored"], empty["bleu_unscored"], real["bleu_unscored"]]) == 1.0


def test_the_human_candidate_replaces_the_models_answer():
    docs = load_docs(scorers="bleu", candidate="human")["test"]
    [[text]] = score_reviews([["anything the model said"]], [docs[0]])
    scored = json.loads(text)
    assert scored["candidate_source"] == "human"
    assert scored["candidate"] == docs[0]["held_out_review"]


def _item(doc, candidate: str) -> Item:
    """The item built by hand from the document's JSON (not through the harness code)."""
    document = json.loads(doc["document"])
    held_out = document["held_out"]
    return Item(
        paper=Paper(
            id=document["paper_id"], title=document["title"], abstract=document["abstract"]
        ),
        candidate=candidate,
        references=tuple(Review(r["id"], r["text"], r["summary"]) for r in document["references"]),
        candidate_summary=held_out["summary"] if candidate == held_out["text"] else None,
    )


@pytest.mark.slow
def test_lm_eval_run_gives_the_cores_and_the_inspect_tasks_numbers(
    tmp_path, embedded_folder, demo_records
):
    """A real offline ``lm_eval`` run (hf backend on the embedded SmolLM2 folder, demo data,
    two papers, the human baseline so that the candidate text is fixed in both harnesses): each
    sample's GEM and GEM-S equal the core's value for the same texts computed with a cache of
    its own (equal up to float32 noise from other batch shapes), and exactly the core's and the
    Inspect task's values read through lm_eval's cache (the same requests: every one a hit)."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.iclr import iclr
    from scorers.data.records import split_reviews

    names = ["gem", "gem_s", "bleu"]
    metadata = {
        "candidate": "human",
        "dataset_summaries": True,
        "scorers": ",".join(names),
        "cache_dir": str(tmp_path / "cache_lm_eval"),
    }
    command = [
        sys.executable,
        "-m",
        "lm_eval",
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={embedded_folder},dtype=float32",
        "--device",
        "cpu",
        "--tasks",
        "gre_bench_iclr",
        "--include_path",
        str(CONFIG_PATH),
        "--limit",
        "2",
        "--apply_chat_template",
        "--gen_kwargs",
        "max_gen_toks=1",
        "--log_samples",
        "--output_path",
        str(tmp_path / "out"),
        "--metadata",
        json.dumps(metadata),
    ]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200
    )
    assert run.returncode == 0, run.stderr[-4000:]
    [samples_file] = list((tmp_path / "out").rglob("samples_gre_bench_iclr_*.jsonl"))
    logged = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(logged) == 2
    [results_file] = list((tmp_path / "out").rglob("results_*.json"))
    aggregate = json.loads(results_file.read_text())["results"]["gre_bench_iclr"]

    [log] = inspect_eval(
        iclr(
            candidate="human",
            scorers=",".join(names),
            dataset_summaries=True,
            cache_dir=str(tmp_path / "cache_lm_eval"),
        ),
        model="mockllm/model",
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    inspect_scores = {s.id: s.scores for s in log.samples}

    resources = Resources(evaluation_lm="embedded", cache_dir=tmp_path / "cache_core")
    shared = Resources(evaluation_lm="embedded", cache_dir=tmp_path / "cache_lm_eval")
    by_id = {paper.id: paper for paper in demo_records}
    for sample in logged:
        paper = by_id[sample["doc"]["paper_id"]]
        split = split_reviews(paper, references=2, seed=0)
        item = Item(
            paper=Paper(id=paper.id, title=paper.title, abstract=paper.abstract),
            candidate=split.held_out.text,
            references=tuple(Review(r.id, r.text, r.summary) for r in split.references),
            candidate_summary=split.held_out.summary,
        )
        scored = json.loads(sample["filtered_resps"][0])
        assert scored["candidate"] == split.held_out.text
        for name in names:
            core = get_metric(name, **({"dataset_summaries": True} if name != "bleu" else {}))
            result = core.score(item, resources)
            assert result.value is not None, result.reason
            # computed independently (own cache, other batch shapes): float32 noise only
            assert sample[name] == pytest.approx(result.value, rel=1e-5), name
            assert sample[name] == inspect_scores[paper.id][name].value, name
            # through lm_eval's cache: the same requests, so every one is a hit and the number
            # is exactly the logged one
            before = shared.lm().computed["logprob_requests"]
            assert core.score(item, shared).value == sample[name], name
            assert shared.lm().computed["logprob_requests"] == before
            signature = scored["scores"][name]["signature"]
            assert signature["id"] == result.signature.as_dict()["id"]
            assert sample[f"{name}_unscored"] == 0.0
        assert sample["gem"] != sample["gem_s"]
    assert aggregate["gem,gre_bench"] == pytest.approx(sum(s["gem"] for s in logged) / 2)
    assert aggregate["gem_unscored,gre_bench"] == 0.0
