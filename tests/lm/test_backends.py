"""The evaluation-LM backend registry (scorers.lm.backends): every spec form, the spec error and
the option checks come from the registered entries, and the architecture guide's toy backend is
one module and one registration that works in every place a spec is read."""

from __future__ import annotations

import re
import sys
import types

import pytest

from conftest import REPO
from scorers.errors import SettingError
from scorers.lm import backends
from scorers.lm.backends import Backend, list_backends, parse_spec, register_backend, spec_forms
from scorers.lm.preflight import check_evaluation_lm

PAGE = REPO / "docs" / "architecture.md"


def test_the_projects_backends_parse_their_specs():
    assert [b.name for b in list_backends()][:3] == ["embedded", "hf", "vllm"]
    assert parse_spec("embedded") == parse_spec(" embedded/smollm2 ") == ("embedded", "smollm2")
    assert parse_spec("hf/meta-llama/Llama-3.1-8B") == ("hf", "meta-llama/Llama-3.1-8B")
    assert parse_spec("vllm/embedded") == ("vllm", "embedded")
    assert spec_forms()[:4] == [
        "embedded",
        "embedded/smollm2",
        "hf/<hub-id-or-path>",
        "vllm/<hub-id-or-path>",
    ]


def test_an_unknown_spec_names_every_registered_form_and_the_nearest():
    with pytest.raises(SettingError) as caught:
        parse_spec("embeded")
    assert str(caught.value) == (
        "unknown evaluation-LM spec 'embeded' (did you mean 'embedded'?): use 'embedded', "
        "'embedded/smollm2', 'hf/<hub-id-or-path>' or 'vllm/<hub-id-or-path>'"
    )
    for spec in ("hf", "hf/", "openai/gpt-4o", "embedded/other"):  # a model part, known
        with pytest.raises(SettingError, match="unknown evaluation-LM spec"):
            parse_spec(spec)


def test_an_entry_is_checked_and_registered_once():
    with pytest.raises(ValueError, match="one word"):
        Backend(name="a/b", form="a/<m>", description="d", loader="m:f", options="m:g")
    with pytest.raises(ValueError, match="is not module:function"):
        Backend(name="a", form="a/<m>", description="d", loader="m.f", options="m:g")
    with pytest.raises(ValueError, match="registered twice"):
        register_backend(
            Backend(name="hf", form="hf/<m>", description="d", loader="m:f", options="m:g")
        )
    with pytest.raises(ValueError, match="registered twice"):  # a whole spec of another's
        register_backend(
            Backend(name="x", form="x/<m>", description="d", loader="m:f", options="m:g",
                    specs=("embedded",), model_of_specs="m")
        )  # fmt: skip


def guide_module() -> tuple[str, str]:
    """The guide's backend module and the lines that use it (split where the module ends)."""
    section = PAGE.read_text().split("## Adding an evaluation-LM backend", 1)[1]
    snippet = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[0]
    module, usage = snippet.split("# the module ends here", 1)
    return module, "#" + usage


def run_guide_module(monkeypatch, code: str) -> types.ModuleType:
    """``code`` run as the module ``mylab_backend`` (importable, as a user's module is)."""
    module = types.ModuleType("mylab_backend")
    monkeypatch.setitem(sys.modules, "mylab_backend", module)
    monkeypatch.setattr(backends, "_BACKENDS", backends._BACKENDS.copy())  # undone after
    exec(compile(code, "mylab_backend.py", "exec", dont_inherit=True), module.__dict__)
    return module


def test_the_guides_backend_is_one_registration_that_specs_and_checks_read(monkeypatch):
    module_text, _ = guide_module()
    assert len(module_text.strip().splitlines()) < 30
    run_guide_module(monkeypatch, module_text)
    assert backends.backend("mylab").loader == "mylab_backend:load"
    assert parse_spec("mylab/ckpt-7") == ("mylab", "ckpt-7")
    assert "mylab/<checkpoint>" in spec_forms()
    with pytest.raises(SettingError, match="'mylab/<checkpoint>'"):
        parse_spec("mylabb/ckpt-7")  # the error lists the new form
    check_evaluation_lm("mylab/ckpt-7", {"dtype": "float32"})
    with pytest.raises(SettingError, match=r"no option 'dtyp' \(did you mean 'dtype'\?\)"):
        check_evaluation_lm("mylab/ckpt-7", {"dtyp": "float32"})
    with pytest.raises(SettingError, match="base_url is for vllm"):
        check_evaluation_lm("mylab/ckpt-7", {"base_url": "http://127.0.0.1:1"})


@pytest.mark.slow
def test_the_guides_backend_loads_and_scores(monkeypatch):
    module_text, usage = guide_module()
    module = run_guide_module(monkeypatch, module_text + usage)
    lm = module.lm
    assert lm.identity.startswith(f"mylab/{module.checkpoint}:float32")
    from scorers.lm.base import ScoringRequest

    ids = lm.tokenizer.encode("The evaluation is too small.")
    request = ScoringRequest(context_ids=tuple(ids[:2]), target_ids=tuple(ids[2:]))
    [result] = lm.target_logprobs([request])
    assert result.total < 0 and result.n_tokens == len(ids) - 2


def test_in_process_specs_are_read_with_the_registrys_grammar():
    from scorers.lm.backends import in_process_model

    said = "the Binoculars model"
    assert in_process_model(" embedded ", what=said) == "embedded"
    assert in_process_model("embedded/smollm2", what=said) == "embedded"
    assert in_process_model("hf/tiiuae/falcon-7b", what=said) == "tiiuae/falcon-7b"
    assert in_process_model("tiiuae/falcon-7b", what=said) == "tiiuae/falcon-7b"  # a Hub id
    assert in_process_model("/models/ckpt", what=said) == "/models/ckpt"  # a folder
    with pytest.raises(SettingError, match=r"^the Binoculars model: 'vllm/m' is a vllm spec"):
        in_process_model("vllm/m", what=said)
    with pytest.raises(SettingError, match="'hf/<hub-id-or-path>'"):
        in_process_model("vllm/m", what=said)
    with pytest.raises(SettingError, match="unknown evaluation-LM spec 'embedded/other'"):
        in_process_model("embedded/other", what=said)  # the backend has whole specs only
