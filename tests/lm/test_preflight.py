"""An evaluation-LM setting is checked before any work (scorers.lm.preflight): the spec, the
backend's options, where the weights come from (four different messages for a missing folder, an
offline Hub, a name the Hub lacks and a Hub that does not answer) and every vLLM server. The Hub
and the servers here are loopback fakes: nothing leaves the machine."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scorers.errors import SettingError
from scorers.lm import parse_spec
from scorers.lm.locate import locate_model
from scorers.lm.preflight import (
    check_evaluation_lm,
    check_server,
    served_model_name,
    server_urls,
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeHandler(http.server.BaseHTTPRequestHandler):
    """Answers what the test sets on the server: ``routes[(method, path)] = (status, headers,
    body)``; anything else is a 404."""

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, method: str) -> None:
        if method == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            self.server.posted.append(json.loads(self.rfile.read(length) or b"{}"))  # type: ignore[attr-defined]
        path = self.path.split("?")[0]
        status, headers, body = self.server.routes.get(  # type: ignore[attr-defined]
            (method, path), (404, {}, {"error": "no route"})
        )
        data = json.dumps(body).encode()
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")


@pytest.fixture
def fake_server() -> Iterator[http.server.ThreadingHTTPServer]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeHandler)
    httpd.routes = {}  # type: ignore[attr-defined]
    httpd.posted = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def url_of(httpd: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def vllm_routes(httpd, served: str = "m", *, prompt_logprobs=True) -> None:
    httpd.routes[("GET", "/v1/models")] = (200, {}, {"data": [{"id": served}]})
    choice = {"text": "x", "prompt_logprobs": [None, {"1": {"logprob": -1.0}}]}
    if not prompt_logprobs:
        choice.pop("prompt_logprobs")
    httpd.routes[("POST", "/v1/completions")] = (200, {}, {"choices": [choice]})


# -- the spec ------------------------------------------------------------------------------------


def test_a_misspelled_spec_names_the_nearest_form():
    with pytest.raises(SettingError, match=r"'embeded' \(did you mean 'embedded'\?\)"):
        parse_spec("embeded")
    with pytest.raises(SettingError, match=r"did you mean 'vllm'"):
        parse_spec("vlm/meta-llama/Llama-3.1-8B-Instruct")
    assert parse_spec("vllm/meta-llama/Llama-3.1-8B-Instruct") == (
        "vllm",
        "meta-llama/Llama-3.1-8B-Instruct",
    )


# -- where the weights come from -----------------------------------------------------------------


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return constants


def test_a_local_folder_is_found_and_a_missing_one_is_named(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    with pytest.raises(SettingError, match="without a model"):
        locate_model(str(model))
    (model / "config.json").write_text("{}")
    assert locate_model(str(model)) == "local"
    with pytest.raises(SettingError, match="no folder './nowhere'"):
        locate_model("./nowhere")
    with pytest.raises(SettingError, match="no folder"):
        locate_model(str(tmp_path / "a" / "b" / "c"))
    (tmp_path / "weights.bin").write_text("")
    with pytest.raises(SettingError, match="is a file"):
        locate_model(str(tmp_path / "weights.bin"))


def test_an_offline_hub_is_told_apart_from_a_wrong_name(empty_hub_cache):
    empty_hub_cache.HF_HUB_OFFLINE = True
    with pytest.raises(SettingError, match="not in the local Hugging Face cache and the Hub is "
                       "offline"):  # fmt: skip
        locate_model("meta-llama/Llama-3.1-8B-Instruc")


def test_a_model_in_the_local_cache_needs_no_hub(empty_hub_cache):
    snapshot = Path(empty_hub_cache.HF_HUB_CACHE) / "models--org--cached" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    refs = snapshot.parents[1] / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc")
    empty_hub_cache.HF_HUB_OFFLINE = True
    assert locate_model("org/cached") == "cache"


def test_a_name_the_hub_lacks_and_a_gated_model_have_their_own_messages(
    empty_hub_cache, fake_server, monkeypatch
):
    monkeypatch.setattr(empty_hub_cache, "ENDPOINT", url_of(fake_server))
    fake_server.routes[("GET", "/api/models/org/typo")] = (
        404,
        {"X-Error-Code": "RepoNotFound"},
        {"error": "Repository not found"},
    )
    with pytest.raises(SettingError, match="the Hugging Face Hub has no model 'org/typo'"):
        locate_model("org/typo")
    fake_server.routes[("GET", "/api/models/org/gated")] = (
        403,
        {"X-Error-Code": "GatedRepo"},
        {"error": "gated"},
    )
    with pytest.raises(SettingError, match="is gated on the Hugging Face Hub"):
        locate_model("org/gated")
    fake_server.routes[("GET", "/api/models/org/real")] = (200, {}, {"id": "org/real"})
    assert locate_model("org/real") == "hub"


def test_a_hub_that_does_not_answer_says_so(empty_hub_cache, monkeypatch):
    monkeypatch.setattr(empty_hub_cache, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(SettingError, match="the Hugging Face Hub does not answer") as caught:
        locate_model("meta-llama/Llama-3.1-8B-Instruct")
    assert "not in the local cache" in str(caught.value)
    assert "\n" not in str(caught.value)


# -- servers -------------------------------------------------------------------------------------


def test_server_urls_and_the_served_name():
    assert server_urls("http://a:1, http://b:2/v1/") == ["http://a:1/v1", "http://b:2/v1"]
    assert server_urls(["http://a:1"]) == ["http://a:1/v1"]
    assert served_model_name("m", {}) == "m"
    assert served_model_name("m", {"adapter": "/x/my-lora"}) == "my-lora"
    assert served_model_name("m", {"served_model_name": "s", "adapter": "/x/y"}) == "s"


def test_a_server_that_does_not_answer_is_refused():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(SettingError, match=f"no server answers at {url}"):
        check_server(url, "m")


def test_a_server_must_serve_the_model_and_return_prompt_logprobs(fake_server):
    url = f"{url_of(fake_server)}/v1"
    vllm_routes(fake_server, served="other-model")
    with pytest.raises(SettingError, match="serves 'other-model', not 'm'"):
        check_server(url, "m")
    vllm_routes(fake_server, served="m", prompt_logprobs=False)
    with pytest.raises(SettingError, match="no prompt log-probabilities"):
        check_server(url, "m")
    vllm_routes(fake_server, served="m")
    check_server(url, "m")
    assert fake_server.posted[-1]["prompt_logprobs"] == 0
    fake_server.routes[("GET", "/v1/models")] = (401, {}, {"error": "no key"})
    with pytest.raises(SettingError, match="api_key"):
        check_server(url, "m")


def test_every_server_of_a_list_is_checked(fake_server, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    vllm_routes(fake_server, served=str(model))
    good = url_of(fake_server)
    check_evaluation_lm(f"vllm/{model}", {"base_url": good})
    bad = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(SettingError, match=f"no server answers at {bad}/v1"):
        check_evaluation_lm(f"vllm/{model}", {"base_url": f"{good},{bad}"})


# -- options -------------------------------------------------------------------------------------


def test_backend_options_are_checked_by_name_and_value(tmp_path):
    with pytest.raises(SettingError, match=r"no option 'dtyp' \(did you mean 'dtype'\?\)"):
        check_evaluation_lm("embedded", {"dtyp": "bfloat16"})
    with pytest.raises(SettingError, match="dtype must be"):
        check_evaluation_lm("embedded", {"dtype": "fp8"})
    with pytest.raises(SettingError, match="padding_side"):
        check_evaluation_lm("embedded", {"padding_side": "middle"})
    with pytest.raises(SettingError, match="base_url is for vllm"):
        check_evaluation_lm("embedded", {"base_url": "http://127.0.0.1:1"})
    with pytest.raises(SettingError, match="holds no LoRA adapter"):
        check_evaluation_lm("embedded", {"adapter": str(tmp_path)})
    check_evaluation_lm("embedded", {"dtype": "bfloat16", "max_batch_tokens": 4096})


def test_the_vllm_engine_without_vllm_says_how_to_install_it(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a)
    )
    with pytest.raises(SettingError, match="vLLM is not installed"):
        check_evaluation_lm("vllm/embedded")
