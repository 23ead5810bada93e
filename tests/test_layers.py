"""The house's direction (docs/decisions.md "Layers", README "Architecture"): the
contracts in pyproject.toml, checked by import-linter over the real import graph."""
import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def test_every_import_points_down_the_layers_and_no_domain_module_imports_an_interface():
    linter = Path(sys.executable).parent / "lint-imports"

    result = subprocess.run([str(linter), "--no-cache"], cwd=PROJECT, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_the_contracts_ignore_no_import_and_count_annotations_too():
    """No contract is kept by exempting imports (a glob of interface files, an annotation): a
    composite page or route stands on the top floor, and a type from a floor above is named by a
    protocol."""
    linter = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]

    assert linter["exclude_type_checking_imports"] is False
    ignored = [(contract["name"], contract["ignore_imports"]) for contract in linter["contracts"] if contract.get("ignore_imports")]
    assert ignored == []


ROOT_PACKAGES = tuple(tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"])


def _import_graph(*packages: str) -> dict[str, set[str]]:
    """Every module of `packages` and the modules of ours it imports, anywhere in it (inside a
    function too, and under TYPE_CHECKING)."""
    import grimp

    graph = grimp.build_graph(*packages, include_external_packages=False, exclude_type_checking_imports=False)
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def _bench_graph() -> dict[str, set[str]]:
    """The benches import each other as top-level modules (bench/ is their path), so grimp cannot
    resolve them: read their imports, at any depth, from their syntax."""
    names = {path.stem for path in (PROJECT / "bench").glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in (PROJECT / "bench").glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.partition(".")[0])
        graph[f"bench/{path.stem}"] = {f"bench/{name}" for name in imported & names}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's), each a circle of imports."""
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        order[module] = lowest[module] = len(order)
        stack.append(module)
        for imported in graph.get(module, ()):
            if imported not in order:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in stack:
                lowest[module] = min(lowest[module], order[imported])
        if lowest[module] == order[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return circles


def test_no_two_files_import_each_other_round_a_circle():
    """A circle of imports (even through a function-level import) makes two files one that reads as
    two: the production packages, the scripts, the tests and the benches each hold none."""
    graph = _import_graph(*ROOT_PACKAGES, "scripts", "tests") | _bench_graph()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        circles = _circles(graph)
    finally:
        # Left raised, the limit would let later tests in this worker parse JSON deeper than the app does.
        sys.setrecursionlimit(limit)

    assert circles == []


def test_every_production_module_stands_on_a_floor():
    """The layers contract names every module of ours: one it does not name could import anything."""
    layers = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    named = {name.strip() for layer in layers for name in re.split(r"[|:]", layer)}
    graph = _import_graph(*ROOT_PACKAGES)

    unplaced = sorted(
        module for module in graph
        if module not in ROOT_PACKAGES and not any(module == name or module.startswith(name + ".") for name in named)
    )

    assert unplaced == []
