"""`transpiler inspect FILE.py --html OUT.html`: the page's content (fast, no browser) and its
line links in a real headless Chromium (toolchain)."""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transpiler.cli import main
from transpiler.inspect_html import highlight, instantiations
from transpiler.targets import TARGETS as BUILT_IN

ROOT = Path(__file__).resolve().parent.parent
LOOKBACK = ROOT / "examples" / "lookback_scan.py"
TARGETS = BUILT_IN  # the page's default, `--target all`: a pane per built-in target

TWO_KERNELS = '''import transpiler as qd


@qd.kernel
def scale(x: qd.types.ndarray(dtype=qd.f64, ndim=1), s: qd.f64):
    for i in range(x.shape[0]):
        x[i] = x[i] * s


@qd.kernel
def fill(x: qd.types.ndarray(dtype=qd.f32, ndim=1), v: qd.template()):
    for i in range(x.shape[0]):
        x[i] = v
'''


def page(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "page.html"
    assert main(["inspect", *map(str, args), "--html", str(out)]) == 0
    return out.read_text()


def panes(text: str) -> dict[str, str]:
    """Each target pane's HTML, by target."""
    parts = text.split('<div class="pane target" data-target="')[1:]
    parts[-1] = parts[-1].split("<details")[0]
    return {p[:p.index('"')]: p for p in parts}


def python_lines(text: str) -> dict[int, str]:
    return {int(n): body for n, body in re.findall(r'data-line="(\d+)"><code>(.*?)</code>', text)}


def test_page_shows_the_python_and_every_target_linked_line_by_line(tmp_path):
    text = page(tmp_path, LOOKBACK)
    source = LOOKBACK.read_text().splitlines()
    shown = python_lines(text)
    assert sorted(shown) == list(range(1, len(source) + 1))
    assert html.unescape(re.sub(r"<[^>]+>", "", shown[25])) == source[24]
    by_target = panes(text)
    assert list(by_target) == list(TARGETS)
    for target, pane in by_target.items():
        # every task's code in the pane, its lines linked to the Python lines they came from
        assert 'data-py="25"' in pane and 'data-py="35"' in pane, target
    assert "atomicAdd(&amp;tile_counter[<span" in by_target["cuda"]
    assert "prefix_sum_0.comp" in by_target["glsl"] and "prefix_sum_2.comp" in by_target["glsl"]
    # the manifest, the entry points and their grids
    plain = html.unescape(text)
    assert "<summary>Manifests (JSON)</summary>" in text and '"kernel": "prefix_sum"' in plain
    assert '<td class="mono">prefix_sum_2</td>' in text and "min(ceil(n / 128), 65535) blocks" in text
    assert '<option value="v0">prefix_sum</option>' in text


def test_page_is_self_contained():
    r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "inspect", str(LOOKBACK), "--html", "-"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "<style>" in r.stdout and "<script>" in r.stdout
    assert not re.search(r"https?://|\bsrc=|\bhref=|url\(|@import", r.stdout)


def test_page_is_deterministic(tmp_path):
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"{seed}.html"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, str(ROOT / "cli.py"), "inspect", str(LOOKBACK), "--html", str(out)],
                           capture_output=True, text=True, cwd=ROOT, env=env)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_a_target_that_refuses_shows_its_message_in_its_pane(tmp_path):
    src = tmp_path / "two.py"
    src.write_text(TWO_KERNELS)
    text = page(tmp_path, src, "--kernel", "scale")
    by_target = panes(text)
    assert '<pre class="refusal">' in by_target["msl"]
    assert "f64 is not supported on the msl target" in by_target["msl"] and "data-py=" not in by_target["msl"]
    for target in ("cuda", "hip", "glsl"):
        assert "refusal" not in by_target[target] and 'data-py="7"' in by_target[target]
    # and at its Python line, naming the target
    after_def = text.split('data-line="5">')[1].split('data-line="6"')[0]
    assert '<div class="diag error"><b>msl</b> error: f64 is not supported' in after_def


def test_a_kernel_every_target_refuses_is_a_located_error(tmp_path, capsys):
    src = tmp_path / "two.py"
    src.write_text(TWO_KERNELS)
    assert main(["inspect", str(src), "--kernel", "scale", "--target", "msl", "--html", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err
    assert "two.py:5:11: error: f64 is not supported on the msl target" in err and "Traceback" not in err
    assert not (tmp_path / "x.html").exists()


def test_kernel_and_template_selection(tmp_path):
    src = tmp_path / "two.py"
    src.write_text(TWO_KERNELS)
    options = re.compile(r'<option value="(v\d+)">([^<]*)</option>')
    assert options.findall(page(tmp_path, src, "--template", "v=1.5")) == [("v0", "scale"), ("v1", "fill")]
    assert options.findall(page(tmp_path, src, "--kernel", "fill", "--template", "v=1.5")) == [("v0", "fill")]
    # a NAME given several values: one instantiation each; a kernel without it appears once
    text = page(tmp_path, src, "--template", "v=1.5", "--template", "v=7")
    assert options.findall(text) == [("v0", "scale"), ("v1", "fill (v=1.5)"), ("v2", "fill (v=7)")]
    assert '<section class="variant" id="v2" hidden>' in text and 'x[i] = <span class="num">7.0f</span>;' in text


def test_instantiations_are_every_combination():
    assert instantiations(None) == [[]]
    assert instantiations(["a=1", "b=2", "a=3"]) == [["a=1", "b=2"], ["a=3", "b=2"]]


def test_hazard_warnings_show_at_their_lines(tmp_path):
    text = page(tmp_path, ROOT / "tests" / "hazard_kernels.py", "--kernel", "spin_on_plain_load")
    after = text.split('data-line="51">')[1].split('data-line="52"')[0]
    assert '<div class="diag warning"><b>cuda, hip, glsl, msl</b> warning: this loop waits on' in after
    for pane in panes(text).values():  # and under the target line it became
        assert re.search(r'data-py="51">.*?</div>\n<div class="diag warning">', pane, re.S)


def test_usage_errors(tmp_path, capsys):
    assert main(["inspect", str(LOOKBACK)]) == 2
    assert main(["inspect", str(LOOKBACK), "--kernel", "prefix_sum", "--resources"]) == 2
    assert main(["inspect", str(LOOKBACK), "--html", str(tmp_path / "no" / "dir.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_emit_does_not_load_the_page_module():
    code = ("import sys, io; from transpiler.cli import main; sys.stdout = io.StringIO(); "
            "main(['emit', 'examples/saxpy.py', '--target', 'all']); sys.stdout = sys.__stdout__; "
            "print('transpiler.inspect_html' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_highlighter():
    py = highlight(['x = """a', 'b""" + 3  # n', "@qd.kernel", "def f(): return 'it''s'"], "python")
    assert py[0] == [("", "x = "), ("str", '"""a')]
    assert py[1] == [("str", 'b"""'), ("", " + "), ("num", "3"), ("", "  "), ("com", "# n")]
    assert py[2] == [("kw", "@qd.kernel")]
    assert ("kw", "return") in py[3] and ("str", "'it''s'") in py[3]  # adjacent tokens of a class merge
    c = highlight(["#version 450", "int x1 = 0x1Fu; /* a", "b */ float y = 1.5f; // t.py:3"], "c")
    assert c[0] == [("pp", "#version"), ("", " "), ("num", "450")]
    assert c[1] == [("kw", "int"), ("", " x1 = "), ("num", "0x1Fu"), ("", "; "), ("com", "/* a")]
    assert c[2] == [("com", "b */"), ("", " "), ("kw", "float"), ("", " y = "), ("num", "1.5f"), ("", "; "),
                    ("com", "// t.py:3")]


# ---------------------------------------------------------------------------- in a real browser

def _browser_missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium; scripts/setup.sh toolchains installs it)"
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return "chromium is not installed (apt-get install chromium chromium-driver; scripts/setup.sh toolchains)"
    return None


@pytest.mark.toolchain
@pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))
def test_browser_lights_the_lines_a_python_line_became(tmp_path):
    """Hover a Python line: its lines in all four panes light up; click a CUDA line: its Python
    line does. INSPECT_SCREENSHOT=docs/inspect.png (make screenshot) saves the page with a
    Python line clicked, as the README shows it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    out = tmp_path / "lookback_scan.html"
    assert main(["inspect", str(LOOKBACK), "--html", str(out)]) == 0
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1000", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        driver.get(out.as_uri())

        def lit(selector: str) -> list[bool]:
            return ["hl" in e.get_attribute("class").split() for e in driver.find_elements(By.CSS_SELECTOR, selector)]

        line = driver.find_element(By.CSS_SELECTOR, '.python .ln[data-line="35"]')
        ActionChains(driver).move_to_element(line).perform()
        for target in TARGETS:
            marks = lit(f'.pane[data-target="{target}"] .ln[data-py="35"]')
            assert marks and all(marks), target
        assert not any(lit('.pane[data-target="cuda"] .ln[data-py="25"]'))

        # a click pins a line and scrolls every pane to what it became (the unrolled loop here)
        driver.find_element(By.CSS_SELECTOR, '.python .ln[data-line="34"]').click()
        assert all(lit('.pane[data-target="glsl"] .ln[data-py="34"]')) and not any(lit('.ln[data-py="35"]'))
        if os.environ.get("INSPECT_SCREENSHOT"):
            driver.save_screenshot(os.environ["INSPECT_SCREENSHOT"])

        driver.find_element(By.CSS_SELECTOR, '.pane[data-target="cuda"] .ln[data-py="25"]').click()
        assert lit('.python .ln[data-line="25"]') == [True]
        assert lit('.python .ln[data-line="34"]') == [False]
        assert all(lit('.pane[data-target="msl"] .ln[data-py="25"]'))
    finally:
        driver.quit()


def test_a_copy_of_a_file_links_to_its_own_name(tmp_path):
    """The same kernel at the same line of another file (bench/quality_kernels.py makes such
    copies): its line comments, which the page links by, name the file it was loaded from."""
    copy = tmp_path / "lookback_copy.py"
    copy.write_text(LOOKBACK.read_text())
    page(tmp_path, LOOKBACK)
    text = page(tmp_path, copy, "--target", "cuda")
    assert "// lookback_copy.py:25" in text and 'data-py="25"' in panes(text)["cuda"]
