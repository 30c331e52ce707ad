#!/usr/bin/env python3
"""Loads report.html files in headless Chromium and checks what a student sees.

    scripts/check_reports.py --nw out/nw_regression/report.html \
        --tutorial out/translate/report.html --batched … --transformer … \
        --gpt out/gpt/report.html [--screenshot docs/images/report.png]

For each report: the page's script ran to its end (<body data-ready="1">)
with no error (its error trap, <pre id="report-errors">, stays empty, and
Chromium logs no console message), and every <svg> has drawn content. For the
Transformer and the GPT reports, the head selector switches the shown maps:
the page is loaded with #head=1 and #head=2 and only maps of that head are
visible, a different set each time. For the NW report, the width slider's pictures were
drawn (the weights have cells, the fit has a line). With --screenshot, the
Transformer report (else the first given) is captured as a PNG. Every report must stay under
--max-bytes (2,000,000).

Without Chromium it prints one "SKIP: …" line and exits 0. Exit status 1 when
a check fails (every failure is printed), 2 on bad arguments. Uses only
Python's standard library.
"""
import argparse
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class Dom(html.parser.HTMLParser):
    """The parts of a dumped DOM the checks read."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.body = {}
        self.svgs = []  # per <svg>: number of child elements
        self.maps = []  # attribute dicts of <figure class="map">
        self.errors = ""
        self.slider_cells = 0
        self.slider_line = ""
        self._svg_depth = []
        self._in_errors = False
        self._in_weights = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if self._svg_depth:
            self.svgs[self._svg_depth[-1]] += 1
        if tag == "svg":
            self.svgs.append(0)
            self._svg_depth.append(len(self.svgs) - 1)
            self._in_weights = a.get("id") == "nw-weights"
        if tag == "figure" and "map" in a.get("class", "").split():
            self.maps.append(a)
        if tag == "pre" and a.get("id") == "report-errors":
            self._in_errors = True
        if tag == "rect" and self._in_weights and "data-w" in a:
            self.slider_cells += 1
        if tag == "polyline" and a.get("stroke-dasharray") and self._svg_depth:
            self.slider_line = a.get("points", "")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag == "svg":
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "svg" and self._svg_depth:
            self._svg_depth.pop()
            self._in_weights = False
        if tag == "pre":
            self._in_errors = False

    def handle_data(self, data):
        if self._in_errors:
            self.errors += data


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium(browser, url, extra):
    """Runs headless Chromium on url; returns (stdout, console lines)."""
    with tempfile.TemporaryDirectory() as profile:
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu",
                   "--no-first-run", "--user-data-dir=" + profile,
                   "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"]
        result = subprocess.run(command + extra + [url], capture_output=True, text=True,
                                timeout=120)
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    return result.stdout, console, result.returncode


def load(browser, path, fragment=""):
    url = "file://" + os.path.abspath(path) + fragment
    out, console, status = chromium(browser, url, ["--dump-dom"])
    dom = Dom()
    dom.feed(out)
    return dom, console, status


def check_page(browser, kind, path, failures):
    def fail(message):
        failures.append(f"{kind} ({path}): {message}")

    if not os.path.isfile(path):
        fail("no such file")
        return
    size = os.path.getsize(path)
    dom, console, status = load(browser, path)
    if status != 0:
        fail(f"chromium exited with status {status}")
    if dom.body.get("data-ready") != "1":
        fail("the page's script did not run to its end (no <body data-ready=\"1\">)")
    if dom.errors.strip() or dom.body.get("data-errors"):
        fail(f"script errors: {dom.errors.strip()}")
    for line in console:
        fail(f"console: {line}")
    if not dom.svgs:
        fail("no <svg> in the page")
    empty = [i for i, children in enumerate(dom.svgs) if children == 0]
    if empty:
        fail(f"{len(empty)} of {len(dom.svgs)} <svg> elements are empty")
    if kind == "nw":
        if dom.slider_cells == 0:
            fail("the width slider drew no attention weights")
        if not dom.slider_line:
            fail("the width slider drew no fit")
    if kind in ("tutorial", "batched", "transformer", "gpt") and not dom.maps:
        fail("no attention maps")
    if kind in ("transformer", "gpt"):
        shown = {}
        for head in ("1", "2"):
            heads, _, _ = load(browser, path, "#head=" + head)
            visible = [m for m in heads.maps if "hidden" not in m]
            shown[head] = {(m.get("data-kind"), m.get("data-block"), m.get("data-head"))
                           for m in visible}
            if not visible:
                fail(f"#head={head} shows no map")
            if any(m.get("data-head") != head for m in visible):
                fail(f"#head={head} shows maps of other heads")
        if shown["1"] == shown["2"]:
            fail("the head selector did not change the shown maps")
    print(f"{'ok' if not [f for f in failures if f.startswith(kind)] else 'FAIL'}: {kind} "
          f"report, {size} bytes, {len(dom.svgs)} svg, {len(dom.maps)} attention maps, "
          f"script done {dom.body.get('data-ready-ms', '?')} ms after navigation began")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for kind in ("nw", "tutorial", "batched", "transformer", "gpt"):
        parser.add_argument("--" + kind, metavar="FILE", help=f"the {kind} report.html")
    parser.add_argument("--max-bytes", type=int, default=2_000_000,
                        help="the largest report allowed (default: 2,000,000 bytes)")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="write a screenshot of the Transformer report (else the first "
                             "given) here")
    parser.add_argument("--screenshot-fragment", default="",
                        help="appended to the screenshot's address, e.g. '#kind=encoder%%20self'")
    args = parser.parse_args()
    reports = [(kind, getattr(args, kind))
               for kind in ("nw", "tutorial", "batched", "transformer", "gpt")
               if getattr(args, kind)]
    if not reports:
        parser.error("give at least one report (--nw, --tutorial, --batched, --transformer, --gpt)")
    browser = find_browser()
    if browser is None:
        print("SKIP: the browser check of report.html needs Chromium (one of "
              f"{', '.join(BROWSERS)}); install it with scripts/setup.sh's "
              "attograd_install_browser")
        return 0
    failures = []
    for kind, path in reports:
        check_page(browser, kind, path, failures)
        if os.path.isfile(path) and os.path.getsize(path) > args.max_bytes:
            failures.append(f"{kind} ({path}): {os.path.getsize(path)} bytes, over --max-bytes "
                            f"{args.max_bytes}")
    if args.screenshot:
        target = os.path.abspath(args.screenshot)
        shot = dict(reports).get("transformer", reports[0][1])
        url = "file://" + os.path.abspath(shot) + args.screenshot_fragment
        shown, _, _ = load(browser, shot, args.screenshot_fragment)
        if shown.errors.strip() or shown.body.get("data-ready") != "1":
            failures.append(f"screenshot: {shot}{args.screenshot_fragment}: script errors: "
                            f"{shown.errors.strip()}")
        _, _, status = chromium(browser, url, ["--screenshot=" + target,
                                               "--window-size=1280,1000", "--hide-scrollbars"])
        if status != 0 or not os.path.isfile(target) or os.path.getsize(target) == 0:
            failures.append(f"screenshot: chromium wrote no PNG to {target}")
        else:
            with open(target, "rb") as png:
                if png.read(8) != b"\x89PNG\r\n\x1a\n":
                    failures.append(f"screenshot: {target} is not a PNG")
            print(f"ok: screenshot {target}, {os.path.getsize(target)} bytes")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
