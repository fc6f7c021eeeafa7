"""Translate with a TensorFlow Serving REST endpoint, using only the standard library.

    python examples/serving/client.py "twenty-four" "one hundred and five"
    python examples/serving/client.py --version 2 "twenty-four"

Prints one translation per line, in the order of the texts. Exit status 1 with
one line on stderr when the server cannot be reached or answers an error.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request


def translate(
    texts: list[str],
    url: str = "http://localhost:8501",
    model: str = "translator",
    version: int | None = None,
    timeout: float = 60.0,
) -> list[str]:
    """POST `{"instances": texts}` to `:predict` and return the `predictions`."""
    path = f"/v1/models/{model}" + (f"/versions/{version}" if version is not None else "")
    request = urllib.request.Request(
        f"{url.rstrip('/')}{path}:predict",
        data=json.dumps({"instances": list(texts)}).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as error:  # TF Serving explains errors in {"error": ...}
        try:
            detail = json.load(error).get("error", error.reason)
        except (ValueError, AttributeError):
            detail = error.reason
        raise RuntimeError(f"{request.full_url}: HTTP {error.code}: {detail}") from None
    predictions = answer.get("predictions")
    if not isinstance(predictions, list) or len(predictions) != len(texts):
        raise RuntimeError(f"{request.full_url}: unexpected answer {answer!r}")
    return predictions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("texts", nargs="+")
    parser.add_argument("--url", default="http://localhost:8501")
    parser.add_argument("--model", default="translator")
    parser.add_argument("--version", type=int, default=None, help="default: the served one")
    args = parser.parse_args(argv)
    try:
        for line in translate(args.texts, args.url, args.model, args.version):
            print(line)
    except (RuntimeError, urllib.error.URLError, OSError) as error:
        print(f"client: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
