"""The serving examples: image pinned to the TensorFlow the export uses, models.config, REST client."""

from __future__ import annotations

import http.server
import importlib.metadata
import importlib.util
import json
import pathlib
import re
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "serving"


def _client():
    spec = importlib.util.spec_from_file_location("serving_client", EXAMPLES / "client.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_serving_image_is_pinned_to_the_tensorflow_of_the_export():
    tensorflow = importlib.metadata.version("tensorflow")  # what writes the SavedModel
    minor = ".".join(tensorflow.split(".")[:2])
    assert f"tensorflow=={minor}.*" in (ROOT / "setup.cfg").read_text()
    for doc in (ROOT / "docs" / "serving.md", ROOT / "README.md"):
        images = re.findall(r"tensorflow/serving(:[\w.\-]+)?", doc.read_text())
        assert images, doc
        assert all(tag.startswith(f":{minor}.") for tag in images), (doc, images)


def test_models_config_serves_two_labelled_versions():
    text = (EXAMPLES / "models.config").read_text()
    assert re.search(r'name:\s*"translator"', text)
    assert re.search(r'base_path:\s*"/models/translator"', text)
    versions = [int(v) for v in re.findall(r"versions:\s*(\d+)", text)]
    labels = dict(re.findall(r'key:\s*"(\w+)"\s*value:\s*(\d+)', text))
    assert versions == [1, 2] and {int(v) for v in labels.values()} <= set(versions)
    assert text.count("{") == text.count("}")


class _FakeServing(http.server.BaseHTTPRequestHandler):
    requests: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append((self.path, body))
        if "/versions/9" in self.path:
            status, answer = (
                404,
                {"error": "Servable not found for request: Specific(translator, 9)"},
            )
        else:
            status, answer = 200, {"predictions": [text.upper() for text in body["instances"]]}
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture()
def fake_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _FakeServing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeServing.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_rest_client_posts_instances_and_returns_predictions(fake_server, capsys):
    client = _client()
    assert client.translate(["twenty-four", "ünf"], fake_server) == ["TWENTY-FOUR", "ÜNF"]
    assert client.main(["--url", fake_server, "--version", "2", "one", "two"]) == 0
    assert capsys.readouterr().out == "ONE\nTWO\n"
    paths = [path for path, _ in _FakeServing.requests]
    assert paths == ["/v1/models/translator:predict", "/v1/models/translator/versions/2:predict"]
    assert _FakeServing.requests[1][1] == {"instances": ["one", "two"]}


def test_rest_client_reports_the_server_error_in_one_line(fake_server, capsys):
    client = _client()
    with pytest.raises(RuntimeError, match="HTTP 404: Servable not found"):
        client.translate(["x"], fake_server, version=9)
    assert client.main(["--url", fake_server, "--version", "9", "x"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Servable not found" in err[0]
