"""A built documentation site, served on loopback and rendered by headless Chromium.

Used by the site tests in `tests/test_tutorials.py`. Chromium comes from Debian's
`chromium` package (`scripts/test.sh` installs it when missing). It runs the
page's JavaScript (MathJax among it) with a virtual-time budget, then either
dumps the rendered DOM or takes a screenshot. Every request the page makes is
answered by the loopback server and logged, so a test can also check that
nothing the page asked for was missing.
"""

from __future__ import annotations

import contextlib
import functools
import html.parser
import http.server
import re
import shutil
import subprocess
import tempfile
import threading

BROWSERS = ("chromium", "chromium-browser")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # the tests may run as root (CI does)
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
VIRTUAL_TIME_BUDGET_MS = 20_000  # MathJax typesets a page in well under this

# Text a reader must never see: TeX delimiters or commands left unrendered.
RAW_TEX = re.compile(
    r"\$\$"  # display delimiters
    r"|\\[()\[\]]"  # \( \) \[ \] (arithmatex's generic delimiters)
    r"|\\(?:mathrm|frac|sqrt|text|top|le|ge|dots|cdot|sum|in|times|operatorname|mathbf)\b"
    r"|\$[^$\s][^$\n]*\$"  # inline $...$
)
# Elements whose text is not prose: code, scripts, and MathJax's hidden MathML copy.
SKIPPED = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "textarea",
        "pre",
        "code",
        "mjx-assistive-mml",
    }
)


def chromium() -> str | None:
    """The Chromium executable, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, requests, **kwargs):
        self._requests = requests
        super().__init__(*args, **kwargs)

    def log_request(self, code="-", size="-"):
        self._requests.append((int(code) if str(code).isdigit() else code, self.path))

    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass


@contextlib.contextmanager
def serve(site_dir):
    """Serves `site_dir` on 127.0.0.1 at a free port; yields (base_url, requests).

    `requests` fills with (status, path) for every request answered.
    """
    requests: list[tuple[int, str]] = []
    handler = functools.partial(_QuietHandler, directory=str(site_dir), requests=requests)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: the OS picks
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _run_chromium(args, timeout):
    browser = chromium()
    if browser is None:
        raise RuntimeError(
            "no Chromium found (looked for chromium, chromium-browser): install Debian's "
            "package with 'apt-get install -y chromium' (scripts/test.sh does it)"
        )
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        completed = subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if completed.returncode != 0:
        raise RuntimeError(
            f"chromium exited with {completed.returncode}: {completed.stderr[-3000:]}"
        )
    return completed.stdout


def rendered_dom(url: str, timeout: float = 120) -> str:
    """The page's DOM after its JavaScript ran, serialized as HTML."""
    return _run_chromium(
        [f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}", "--dump-dom", url], timeout
    )


def screenshot(url: str, path, width: int = 1280, height: int = 2400, timeout: float = 120):
    """Writes a PNG of the rendered page (its first `height` pixels) to `path`."""
    _run_chromium(
        [
            f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
            f"--window-size={width},{height}",
            f"--screenshot={path}",
            url,
        ],
        timeout,
    )


class _Reader(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skipping: dict[str, int] = {}
        self.text: list[str] = []
        self.tags: dict[str, int] = {}

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag in SKIPPED:
            self.skipping[tag] = self.skipping.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if self.skipping.get(tag):
            self.skipping[tag] -= 1

    def handle_data(self, data):
        if not any(self.skipping.values()):
            self.text.append(data)


def read_dom(dom: str) -> tuple[str, dict[str, int]]:
    """(the prose text of a rendered page, {tag: count})."""
    reader = _Reader()
    reader.feed(dom)
    reader.close()
    return " ".join(reader.text), reader.tags


def raw_tex(text: str) -> list[str]:
    """The unrendered TeX in `text`, each with some context."""
    return [
        text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
        for match in RAW_TEX.finditer(text)
    ]
