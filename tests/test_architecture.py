"""The shape of the code: one-way layers (import-linter contracts in pyproject.toml), no
first-party import hidden in a function, and the public surface of :mod:`cta`."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import cta

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cta", "retriever", "service")
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layers_hold() -> None:
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


def test_every_module_of_cta_has_a_layer() -> None:
    """A new module cannot slip past the contract: each module and sub-package of ``cta``
    is named in a layer (``retriever`` and ``service`` are layers as a whole)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = config["tool"]["importlinter"]["contracts"]
    named = {m.strip() for layer in contract["layers"] for m in re.split(r"[|:]", layer)}
    modules = {
        f"cta.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "cta").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert len(modules) > 15
    assert modules - named == set()
    assert {"benchmarks", "retriever", "service"} <= named


@pytest.mark.parametrize(
    ("module", "back_edge"),
    [
        ("cta/table.py", "import cta.pipeline"),  # the table model reaching up to the pipeline
        ("retriever/dense.py", "import service.app"),  # a candidate source reaching the service
        ("cta/judge/nli.py", "import cta.training"),  # inference reaching for training code
        ("cta/cli/bench.py", "import benchmarks.harness"),  # the product importing a benchmark
        ("cta/registry.py", "import retriever.dense"),  # the registry naming a provider
    ],
)
def test_a_back_edge_breaks_the_layers(tmp_path: Path, module: str, back_edge: str) -> None:
    """The same contracts over a copy of the tree with one upward import added must fail,
    naming the import (so the passing test above is not vacuous)."""
    for package in (*PACKAGES, "benchmarks"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{back_edge}  # noqa\n")
    run = _lint(tmp_path)
    assert run.returncode != 0
    assert "0 kept, 1 broken" in run.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    assert importer in run.stdout, run.stdout


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """First-party imports inside functions, with the source line they stand on."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else ["."]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "." or n.split(".")[0] in PACKAGES for n in names):
                found.append((node.lineno, lines[node.lineno - 1]))
    return found


def _says_deferred(lines: list[str], lineno: int) -> bool:
    """The import line, or the block of imports it stands in, carries ``# deferred:`` (on a
    line of the block or on the comment right above it)."""
    i = lineno - 1
    while i >= 0:
        line = lines[i]
        if "# deferred:" in line:
            return True
        stripped = line.strip()
        if i != lineno - 1 and not stripped.startswith(("import ", "from ")):
            return False
        i -= 1
    return False


def test_no_first_party_import_hides_in_a_function() -> None:
    """Except where a heavy optional dependency is deferred on purpose, which the line, its
    block of imports or the comment above that block says with ``# deferred:``."""
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(files) > 50
    hidden = []
    for path in files:
        text = path.read_text(encoding="utf-8").splitlines()
        for lineno, line in _function_imports(path):
            if not _says_deferred(text, lineno):
                hidden.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert hidden == []


def test_the_cli_builds_without_the_service_package() -> None:
    """The image's artefacts stage copies cta/ alone and runs ``cta setup``: building every
    command's parser must not import ``service`` (each command defers it to its run)."""
    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'service' or name.startswith('service.'):\n"
        "            raise ImportError('service is not here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from cta.cli.main import build_parser\n"
        "parser = build_parser()\n"
        "assert parser.parse_args(['setup']).command == 'setup'\n"
        "assert not any(m == 'service' or m.startswith('service.') for m in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_command_imports_its_own_module_alone() -> None:
    """``cta judge`` must not pay for the libraries of every other command: the parser of a
    named command registers that command's module only; with none named, all of them."""
    code = (
        "import contextlib, io, sys\n"
        "from cta.cli.main import command_module, main\n"
        "assert command_module(['-v', 'judge', '--help']) == 'judge'\n"
        "assert command_module(['worker']) == 'serve'\n"
        "assert command_module(['--help']) is None and command_module(['nope']) is None\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['judge', '--help'])\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('cta.cli.') and m[8:9] != '_')\n"
        "assert loaded == ['cta.cli.judge', 'cta.cli.main'], loaded\n"
        "out = io.StringIO()\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(out):\n"
        "    main(['--help'])\n"
        "assert all(c in out.getvalue() for c in ('perturb', 'worker', 'openapi', 'bench'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_deferred_comment_covers_its_block_only() -> None:
    lines = [
        "def f():",
        "    # deferred: heavy",
        "    from service.a import A",
        "    from service.b import B",
        "    x = 1",
        "    from service.c import C",
    ]
    assert _says_deferred(lines, 3) and _says_deferred(lines, 4)
    assert not _says_deferred(lines, 6)


def test_the_scan_sees_function_imports(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from cta.table import Table\n    import json\n")
    assert _function_imports(path) == [(2, "    from cta.table import Table")]


def test_cta_exports_its_public_surface() -> None:
    expected = {
        "Pipeline",
        "PerturbOptions",
        "PerturbationResult",
        "PerturbedTable",
        "Table",
        "Column",
        "ColumnType",
        "Settings",
        "recipes",
    }
    assert expected <= set(cta.__all__)
    assert sorted(cta.__all__) == cta.__all__  # one name once, easy to read
    for name in cta.__all__:
        assert getattr(cta, name) is not None, name
    # Nothing public that __all__ does not list (modules and dunders aside).
    public = {
        n for n, v in vars(cta).items() if not n.startswith("_") and type(v).__name__ != "module"
    }
    assert public <= set(cta.__all__), public - set(cta.__all__)


#: the most lines a module may have, the benchmarks and the tests included
MAX_MODULE_LINES = 800


def test_no_private_name_is_imported_across_modules() -> None:
    """A name with a leading underscore stays in its module: what another module needs is
    public (the packages, the benchmarks and the scripts)."""
    crossing = []
    ours = (*PACKAGES, "benchmarks")
    for package in (*PACKAGES, "benchmarks", "scripts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ours:
                    crossing += [
                        f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
                        for alias in node.names
                        if alias.name.startswith("_") and not alias.name.startswith("__")
                    ]
    assert crossing == []


def test_no_module_is_long() -> None:
    """A module over :data:`MAX_MODULE_LINES` holds more than one concept: split it."""
    long = [
        f"{path.relative_to(ROOT)} ({lines} lines)"
        for package in (*PACKAGES, "benchmarks", "tests")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := path.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES
    ]
    assert long == []


# a repository path (not one under ../shared, which sits beside the repository)
_DOC_PATH = re.compile(
    r"(?<![\w/.-])((?:docs|benchmarks/results|models|data/annotations)/[\w./-]+\.(?:md|jsonl|json))\b"
)


def test_every_document_the_code_cites_is_in_the_repository() -> None:
    # A docstring that sends a reader to `docs/method.md §3.4` points at a file they have.
    cited: dict[str, str] = {}
    for package in ("cta", "retriever", "service", "benchmarks", "scripts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for found in _DOC_PATH.findall(path.read_text(encoding="utf-8")):
                cited.setdefault(found.rstrip("."), str(path.relative_to(ROOT)))
    assert "docs/method.md" in cited
    missing = {doc: where for doc, where in cited.items() if not (ROOT / doc).exists()}
    assert not missing, f"cited but not in the repository: {missing}"


def test_no_code_names_this_machine_s_checkout() -> None:
    # Code finds ../shared and the repository from its own place (a benchmark: the data folder
    # of benchmarks.harness, DEFAULT_DATA, or its --data): an absolute path of the machine it
    # was written on (the checkout's parent folder) skips or fails on every other.
    here = str(ROOT.parent.resolve()).rstrip("/") + "/"
    assert here.count("/") > 1, "the checkout's parent is the root: nothing to look for"
    files = [
        p for d in ("tests", "benchmarks", *PACKAGES) for p in sorted((ROOT / d).rglob("*.py"))
    ]
    files += sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file())
    named = [str(path.relative_to(ROOT)) for path in files if here in path.read_text("utf-8")]
    assert named == []
