"""The on-disk caches (transpiler/cache.py): a bound per cache with least-recently-used
eviction, Quadrants' cleaning policies through qd.init, `transpiler cache {info,clean}`, and
that neither a fuzz run nor the bench leaves anything in the temp folder or a cache over its
bound."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from transpiler import cache

KB = 1024


@pytest.fixture(autouse=True)
def own_settings(monkeypatch, tmp_path):
    """Each test its own cache root and settings, and the stamps read anew."""
    monkeypatch.setenv("QD_CACHE_DIR", str(tmp_path / "caches"))
    for name in ("QD_CPU_CACHE", "QD_OFFLINE_CACHE_FILE_PATH", "QD_OFFLINE_CACHE_MAX_SIZE_OF_FILES",
                 "QD_OFFLINE_CACHE_CLEANING_POLICY", "QD_OFFLINE_CACHE_CLEANING_FACTOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cache, "_settings", cache.Settings())
    monkeypatch.setattr(cache, "_checked", set())


def put(folder: Path, name: str, size: int, age_s: float) -> Path:
    """An entry of ``size`` bytes last used ``age_s`` seconds ago."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"x" * size)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def spirv_with(names_ages: list[tuple[str, float]], size: int = 10 * KB) -> Path:
    folder = Path(cache.directory("spirv"))
    for name, age in names_ages:
        put(folder, name, size, age)
        cache.added("spirv", str(folder), name, size)
    return folder


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_over_its_bound_a_cache_loses_its_least_recently_used_entries():
    cache.configure("lru", 45 * KB, 0.25)
    folder = spirv_with([("a", 400), ("b", 300), ("c", 200), ("d", 100)])
    assert names(folder) == ["a", "b", "c", "d"]  # 40 KB of 45
    cache.touch(folder / "a")                      # a hit: now the most recently used
    put(folder, "e", 10 * KB, 0)
    cache.added("spirv", str(folder), "e", 10 * KB)  # 50 KB: down to 45 * 0.75 = 33.75 KB, oldest first
    assert names(folder) == ["a", "d", "e"]
    assert sum(e.size for e in cache.entries("spirv", str(folder))) <= 45 * KB * 0.75
    assert int((folder / cache.LEDGER).read_text()) == 30 * KB  # the ledger says what the scan found


def test_a_write_under_the_bound_scans_nothing(monkeypatch):
    """The hot path: a hit is one utime, a write appends to the ledger; no scan until the
    ledger's total passes the bound."""
    cache.configure("lru", 1000 * KB)
    folder = spirv_with([("first", 1)])  # no ledger yet: one scan writes it
    scans = []
    monkeypatch.setattr(cache, "entries", lambda *a: scans.append(a) or [])
    for k in range(20):
        put(folder, f"n{k}", 10 * KB, 0)
        cache.added("spirv", str(folder), f"n{k}", 10 * KB)
        cache.touch(folder / f"n{k}")
    assert scans == []
    assert sum(int(x) for x in (folder / cache.LEDGER).read_text().split()) == 210 * KB


def test_what_is_in_use_stays_and_a_crashed_writes_leftover_goes():
    cache.configure("lru", 10 * KB, 0.0)
    folder = Path(cache.directory("cpu"))
    put(folder, "k-old", 8 * KB, 5000)
    rt = put(folder, "rt-runtime", 8 * KB, 10)             # pinned, used 10 s ago: a build may be linking it
    put(folder, "k-build.tmp", 8 * KB, 20)                 # a build in progress
    put(folder, "k-crashed.tmp", 8 * KB, 2 * cache.IN_PROGRESS_S)  # a crashed build's leftover
    put(folder, "k-new", 8 * KB, 0)
    cache.added("cpu", str(folder), "k-new", 8 * KB)
    assert names(folder) == ["k-build.tmp", "k-new", "rt-runtime"]
    os.utime(rt, (time.time() - 2 * cache.IN_USE_S,) * 2)  # no longer in use: an entry as any other
    put(folder, "k-newer", 1, 0)
    cache.added("cpu", str(folder), "k-newer", 1)
    assert names(folder) == ["k-build.tmp", "k-newer"]


def test_fifo_counts_no_hit_and_never_removes_nothing():
    cache.configure("fifo", 25 * KB, 0.0)
    folder = spirv_with([("a", 300), ("b", 200)])
    cache.touch(folder / "a")  # not a use under fifo: still the oldest
    spirv_with([("c", 0)])
    assert names(folder) == ["b", "c"]
    cache.configure("never", 1)
    spirv_with([("d", 0), ("e", 0)])
    assert names(folder) == ["b", "c", "d", "e"]
    assert cache.bound("spirv") is None


def test_the_version_policy_empties_a_cache_another_version_wrote():
    folder = Path(cache.directory("spirv"))
    put(folder, "mine", KB, 2 * cache.IN_PROGRESS_S)
    cache.configure("version", 1)          # no bound on size under `version`
    cache.tidy("spirv")
    assert names(folder) == ["mine"]       # no stamp yet (new, or older than the stamps): stamped, kept
    assert (folder / cache.STAMP).read_text() == f"{cache.FORMAT} {qd_version()}\n"
    put(folder, "theirs", KB, 2 * cache.IN_PROGRESS_S)
    put(folder, "recent", KB, 0)           # just made: a process of this version may be using it
    (folder / cache.STAMP).write_text("1 0.0.1\n")
    cache.configure("version")
    cache.tidy("spirv")
    assert names(folder) == ["recent"]
    (folder / cache.STAMP).write_text("1 0.0.1\n")
    put(folder, "old", KB, 2 * cache.IN_PROGRESS_S)
    cache.configure("never")               # never: not even another version's
    cache.tidy("spirv")
    assert names(folder) == ["old", "recent"]


def qd_version() -> str:
    import transpiler as qd

    return qd.__version__


def test_qd_init_honours_the_cleaning_policy_and_bound(monkeypatch):
    """qd.init cleans every cache as Quadrants' does: by its policy, with its bound; a bad
    value is an error that names the choices."""
    import transpiler as qd
    from transpiler.runtime import warm_up

    monkeypatch.setattr(warm_up, "start", lambda *a, **k: None)  # no precompiled header built in the folder
    folder = spirv_with([(f"s{k}", 1000 - k) for k in range(10)])  # 100 KB, the oldest first
    offline = Path(cache.directory("offline")) / "ab"
    for k in range(4):
        put(offline, f"ab{k}", 10 * KB, 1000 - k)
    qd.init(arch="cpu", offline_cache_cleaning_policy="never", offline_cache_max_size_of_files=30 * KB)
    assert len(names(folder)) == 10 and len(names(offline)) == 4
    qd.init(arch="cpu", offline_cache_cleaning_policy="lru", offline_cache_max_size_of_files=30 * KB,
            offline_cache_cleaning_factor=0.25)
    assert names(folder) == ["s8", "s9"] and names(offline) == ["ab2", "ab3"]  # to 22.5 KB, the newest kept
    monkeypatch.setenv("QD_OFFLINE_CACHE_MAX_SIZE_OF_FILES", str(10 * KB))  # Quadrants' variables, as qd.init reads them
    monkeypatch.setenv("QD_OFFLINE_CACHE_CLEANING_FACTOR", "0")
    qd.init(arch="cpu")
    assert names(folder) == ["s9"]
    with pytest.raises(ValueError, match="'sometimes' is not one of never, version, lru, fifo"):
        qd.init(arch="cpu", offline_cache_cleaning_policy="sometimes")
    monkeypatch.delenv("QD_OFFLINE_CACHE_MAX_SIZE_OF_FILES")
    qd.init(arch="cpu")
    assert cache.bound("cpu") == 512 * cache.MB and cache.bound("spirv") == 100 * cache.MB


def test_cache_info_and_clean(capsys):
    from transpiler.cli import main

    spirv_with([("a", 10), ("b", 5)], size=3 * KB)
    cpu = Path(cache.directory("cpu"))
    (cpu / "k-0123" / "kernel.so").parent.mkdir(parents=True)
    (cpu / "k-0123" / "kernel.so").write_bytes(b"x" * 2048)
    (cpu / "locks").mkdir()
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in out[1:5]}
    assert out[0].split() == ["cache", "folder", "entries", "size", "bound"]
    assert rows["spirv"][1:] == [cache.directory("spirv"), "2", "6.0", "KB", "100.0", "MB"]
    assert rows["cpu"][1:] == [str(cpu), "1", "2.0", "KB", "512.0", "MB"]
    assert rows["offline"][2:4] == ["0", "0"] and rows["jinja"][-1] == "templates)"
    assert main(["cache", "clean", "spirv"]) == 0
    assert capsys.readouterr().out.startswith("spirv: removed 2 entries, 6.0 KB")
    assert names(Path(cache.directory("spirv"))) == [] and names(cpu) == ["k-0123", "locks"]
    assert main(["cache", "clean"]) == 0
    assert names(cpu) == ["locks"]
    with pytest.raises(SystemExit) as exc:
        main(["cache", "clean", "spriv"])
    assert exc.value.code == 2 and "no cache 'spriv'; the caches are cpu, spirv, offline, jinja" in capsys.readouterr().err


def test_jinja_keeps_its_compiled_templates_beside_the_other_caches(tmp_path):
    """Not in the temp folder (Jinja's default): a fresh process renders from the cache folder."""
    env = dict(os.environ, TMPDIR=str(tmp_path / "temp"), PYTHONPATH=str(ROOT))
    (tmp_path / "temp").mkdir()
    subprocess.run([sys.executable, str(ROOT / "cli.py"), "emit", str(ROOT / "examples" / "saxpy.py"), "--target",
                    "all"], check=True, capture_output=True, env=env)
    assert list((tmp_path / "temp").iterdir()) == []
    assert any(n.endswith(".cache") for n in names(Path(cache.directory("jinja"))))


def test_make_fuzz_and_bench_set_up_the_toolchains_once(tmp_path):
    """The set-up runs when its stamp (the script's hash, in the venv) is missing, not after."""
    def plan(target: str) -> str:
        return subprocess.run(["make", "-n", target, f"VENV={tmp_path}"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout

    for target in ("fuzz", "bench"):
        assert "scripts/setup.sh toolchains" in plan(target)
    stamp = [line.split()[-1] for line in plan("fuzz").splitlines() if line.startswith("touch")][0]
    Path(stamp).touch()
    for target in ("fuzz", "bench"):
        assert "setup.sh" not in plan(target) and "bin/python" in plan(target)


# ----------------------------------------------------------------------------- whole runs

def fresh_env(tmp_path: Path, **extra: str) -> dict:
    """The environment of a run whose temp folder (tmp_path/temp) and caches are its own."""
    temp = tmp_path / "temp"
    temp.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env.update(TMPDIR=str(temp), QD_CACHE_DIR=str(tmp_path / "caches"))
    env.update(PYTHONPATH=f"{ROOT / 'tests'}:{ROOT}",
               PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def fuzz(tmp_path: Path, name: str, **env: str) -> Path:
    """Five seeds on the CPU executor, the caches in tmp_path/name; checks that the run passed,
    said its progress and left nothing in its temp folder. Returns the caches' folder."""
    env = fresh_env(tmp_path / name, QD_CACHE_DIR=str(tmp_path / name / "caches"), **env)
    r = subprocess.run([sys.executable, "-m", "fuzz.drive", "-n", "5", "--jobs", "1", "--executors", "cpu-cuda",
                        "--sample", "0", "--out", str(tmp_path / name / "failures")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "5/5 kernels" in r.stdout  # the progress line (plain: not a terminal)
    assert list((tmp_path / name / "temp").iterdir()) == []
    return tmp_path / name / "caches"


def cpu_builds(caches: Path) -> tuple[int, list[cache.Entry]]:
    found = cache.entries("cpu", str(caches / "cpu"))
    return sum(e.size for e in found), [e for e in found if os.path.basename(e.path).startswith(("k-", "kl-"))]


@pytest.mark.toolchain
@pytest.mark.slow
def test_a_fuzz_run_leaves_no_temp_files_and_its_caches_under_their_bound(tmp_path):
    """The same five seeds twice: unbounded, then with each cache bounded at what the first
    run's CPU builds took less half its kernels (the rest, the runtime and the precompiled
    headers, are in use throughout): nothing new in the temp folder, every cache under the
    bound, and kernels evicted on the way."""
    total, kernels = cpu_builds(fuzz(tmp_path, "unbounded"))
    assert len(kernels) >= 4
    bound = total - sum(e.size for e in kernels) // 2
    caches = fuzz(tmp_path, "bounded", QD_OFFLINE_CACHE_MAX_SIZE_OF_FILES=str(bound),
                  QD_OFFLINE_CACHE_CLEANING_FACTOR="0")
    for kind in ("cpu", "spirv", "offline"):
        found = cache.entries(kind, str(caches / kind))
        assert sum(e.size for e in found) <= bound, (kind, found)
    assert len(cpu_builds(caches)[1]) < len(kernels)


@pytest.mark.toolchain
@pytest.mark.slow
def test_the_bench_leaves_no_temp_files(tmp_path):
    env = fresh_env(tmp_path)
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--sections", "1", "--corpus", "3",
                        "--repeat", "1", "--json", str(tmp_path / "report.json")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (tmp_path / "report.json").exists()
    assert list((tmp_path / "temp").iterdir()) == []
