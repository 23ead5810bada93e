"""House rules that a reader of production code relies on (docs/decisions.md "Traceability"):
production code explains itself in plain words, without requirement ids, spec sections or issue
numbers; which test pins which requirement is the tests' business and docs/traceability.md's."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
# Production code: every top-level folder that ships (packages, templates, scripts), whatever
# the layers are called; not the tests, the benches, the docs, the catalogues or what runs makes.
NOT_PRODUCTION = {"tests", "bench", "docs", "locale", "static", "var", "node_modules"}
PRODUCTION = tuple(
    sorted(path.name for path in PROJECT.iterdir() if path.is_dir() and not path.name.startswith((".", "_")) and path.name not in NOT_PRODUCTION)
)
PRODUCTION_SUFFIXES = {".py", ".html", ".txt"}
REFERENCE = re.compile(r"\bR-\d+(?:\.\d+)*\b|SPEC §|\b[Ii]ssues? \d+")
# A path on the machine the code was written on, or beside the checkout: a reader of the
# repository has neither. (`base/work/models.py` is ours: a slash after a name is no root.)
OUTSIDE = re.compile(r"(?<![\w.])/(?:work|check|opt|tmp|home)/|\.\./shared\b")
# The longest a function of the domain's services and selectors, or of a flow, may be, from its
# `def` to its last line: longer, it does several things and wants helpers named after them.
MAX_FUNCTION_LINES = 60
TEXT_SUFFIXES = {".py", ".html", ".txt", ".md", ".po", ".toml", ".cfg", ".yml", ".yaml", ".json", ".jsonl"}


def production_files() -> list[Path]:
    return sorted(
        path
        for folder in PRODUCTION
        for path in (PROJECT / folder).rglob("*")
        if path.suffix in PRODUCTION_SUFFIXES and path.is_file()
    )


def test_production_code_names_no_requirement_id_spec_section_or_issue_number():
    found = [
        f"{path.relative_to(PROJECT)}:{number}: {line.strip()}"
        for path in production_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if REFERENCE.search(line)
    ]

    assert not found, (
        "Production code says why in plain words; requirement ids (R-n.n), 'SPEC §' and issue numbers "
        "belong in tests' docstrings and docs/traceability.md:\n" + "\n".join(found)
    )


def test_the_traceability_table_is_current_with_the_tests_docstrings():
    spec = importlib.util.spec_from_file_location("traceability", PROJECT / "scripts" / "traceability.py")
    traceability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(traceability)

    assert traceability.TABLE.read_text(encoding="utf-8") == traceability.table(), (
        "docs/traceability.md is not current with the tests' docstrings: run `.venv/bin/python scripts/traceability.py`"
    )


def test_no_document_or_source_names_a_path_outside_the_repository():
    texts = [PROJECT / "README.md", PROJECT / "Makefile", PROJECT / "pyproject.toml"] + sorted(
        path
        for folder in (*PRODUCTION, "docs", "bench", "tests", "locale")
        for path in (PROJECT / folder).rglob("*")
        if path.suffix in TEXT_SUFFIXES and path.is_file()
    )
    found = [
        f"{path.relative_to(PROJECT)}:{number}: {line.strip()}"
        for path in texts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if OUTSIDE.search(line)
    ]

    assert not found, "A reader of the repository has no such path; say in words what it was:\n" + "\n".join(found)


def _is_service_selector_or_flow(path: Path) -> bool:
    folders = path.relative_to(PROJECT).parts[:-1]
    return (
        path.stem.startswith(("services", "selectors"))
        or any(folder in ("services", "selectors", "flows") for folder in folders)
    ) and "migrations" not in folders


def test_no_function_of_a_service_selector_or_flow_is_longer_than_60_lines():
    found = [
        f"{path.relative_to(PROJECT)}:{node.lineno}: {node.name} is {node.end_lineno - node.lineno + 1} lines"
        for path in production_files()
        if path.suffix == ".py" and _is_service_selector_or_flow(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]

    assert not found, f"Split these into helpers named after what each part does (at most {MAX_FUNCTION_LINES} lines):\n" + "\n".join(found)


# An organisation or its id, as one parameter: the reader cannot tell which she holds. Below the
# interfaces an organisation travels as its id; only the tenancy door (`for_organisation`) takes either.
EITHER_ORGANISATION = re.compile(r"\bOrganisation(?:Like)? \| str\b|\bstr \| Organisation(?:Like)?\b")
EITHER_ORGANISATION_ALLOWED = {
    "core_memory/base/tenancy.py",  # the door itself: organisation_id_of
}


def test_no_parameter_takes_an_organisation_or_its_id():
    found = [
        f"{path.relative_to(PROJECT)}:{node.lineno}: {node.arg}"
        for path in production_files()
        if path.suffix == ".py" and str(path.relative_to(PROJECT)) not in EITHER_ORGANISATION_ALLOWED
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.arg) and node.annotation is not None and EITHER_ORGANISATION.search(ast.unparse(node.annotation))
    ]

    assert not found, "Take the organisation's id (`organisation_id: str`), not either of two types:\n" + "\n".join(found)


def test_only_retrieval_counts_a_retrieval():
    """A reader that counted for itself could count twice or forget to: the search route, the
    search tool and a turn's block read through memory.retrieval, which counts."""
    callers = [
        f"{path.relative_to(PROJECT)}:{node.lineno}"
        for path in production_files()
        if path.suffix == ".py" and path.relative_to(PROJECT).as_posix() != "memory/retrieval.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "records_retrieved"
    ]

    assert not callers, "Read through memory.retrieval instead of counting here:\n" + "\n".join(callers)


# The longest a production module may be: longer, it holds several things and wants to become a
# package of modules named after them (a newcomer finds a thing by the file's name).
MAX_FILE_LINES = 500


def test_no_production_module_is_longer_than_500_lines():
    found = [
        f"{path.relative_to(PROJECT)} is {length} lines"
        for path in production_files()
        if path.suffix == ".py"
        for length in [len(path.read_text(encoding="utf-8").splitlines())]
        if length > MAX_FILE_LINES
    ]

    assert not found, f"Split these into a package of modules named after their parts (at most {MAX_FILE_LINES} lines):\n" + "\n".join(found)


def _public_functions_of_services_selectors_and_flows():
    for path in production_files():
        if path.suffix == ".py" and _is_service_selector_or_flow(path):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                    parameters = {argument.arg: argument for argument in node.args.args + node.args.kwonlyargs}
                    yield f"{path.relative_to(PROJECT)}:{node.lineno}: {node.name}", parameters


# Who asks is one value (core_memory.base.callers.Caller: a key's, the console's or the system's,
# each with its organisation and its actor). These count what still passes who asks in pieces;
# each may only go down, to zero. A function that works across organisations is a platform
# function named so, not one whose organisation may be None.
LOOSE_ORGANISATION_OR_KEY = 0
ORGANISATION_OR_EVERY = 0
CALLER_AND_ACTOR_APART = 0


def test_who_asks_travels_as_one_caller_more_and_more():
    loose, either, apart = [], [], []
    for where, parameters in _public_functions_of_services_selectors_and_flows():
        if "organisation_id" in parameters or "key" in parameters:
            loose.append(where)
        organisation = parameters.get("organisation_id")
        if organisation is not None and organisation.annotation is not None and "None" in ast.unparse(organisation.annotation):
            either.append(where)
        if "caller" in parameters and "actor" in parameters:
            apart.append(where)

    assert len(loose) <= LOOSE_ORGANISATION_OR_KEY, "Take the caller first, not a loose organisation id or key:\n" + "\n".join(loose)
    assert len(either) <= ORGANISATION_OR_EVERY, "None must not mean every organisation; name a platform function:\n" + "\n".join(either)
    assert len(apart) <= CALLER_AND_ACTOR_APART, "The caller carries its actor (`caller.actor`):\n" + "\n".join(apart)
    # Lower the counts when they fall: a ratchet.
    assert (len(loose), len(either), len(apart)) == (LOOSE_ORGANISATION_OR_KEY, ORGANISATION_OR_EVERY, CALLER_AND_ACTOR_APART)


# The request paths: the API's views, the MCP server and the OpenAI-compatible surface; and the
# console's pages. None of them may reach a platform function (one named `platform_…`, which works
# across organisations) but the console superuser's pages about every organisation (her home
# page's dashboard, the person list and the search), which ask for it by name when she administers no one
# organisation.
API_PATHS = ("core_memory/api/", "core_memory/base/api/", "core_memory/mcp/", "core_memory/openai_compat/")
CONSOLE_PATHS = ("core_memory/console/", "core_memory/base/console/")
SUPERUSER_PAGES = {
    "core_memory/console/site.py:ConsoleSite.index",
    "core_memory/console/persons.py:PersonAdmin.changelist_view",
    "core_memory/console/search.py:search_view",
}


def _call_graph():
    """Every production function by its name, and the names each one calls or hands over. A name
    called as `self.name(…)` is a method's; any other use of a name (called, `module.name(…)`, a
    callback) is a module's function. A superset of what Python resolves at run time, of the kind
    the domain is written in (services and selectors are module functions)."""
    functions: dict[tuple[str, str], list[str]] = {}
    calls: dict[str, set[tuple[str, str]]] = {}

    def visit(node, module: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, module, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{module}:{prefix}{child.name}"
                functions.setdefault(("method" if prefix else "function", child.name), []).append(where)
                called = {id(node.func) for node in ast.walk(child) if isinstance(node, ast.Call)}
                names = calls.setdefault(where, set())
                for inner in ast.walk(child):
                    if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                        names.add(("function", inner.id))
                    elif isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Load):
                        own = isinstance(inner.value, ast.Name) and inner.value.id in ("self", "cls")
                        if not own:
                            names.add(("function", inner.attr))
                        elif id(inner) in called:
                            names.add(("method", inner.attr))
                    elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and getattr(inner.func.value, "func", None) is not None:
                        if getattr(inner.func.value.func, "id", None) == "super":
                            names.add(("method", inner.func.attr))
                visit(child, module, f"{prefix}{child.name}.")

    for path in production_files():
        if path.suffix == ".py":
            visit(ast.parse(path.read_text(encoding="utf-8")), path.relative_to(PROJECT).as_posix(), "")
    return functions, calls


def _reached(functions, calls, *, entries, stops=frozenset()) -> dict[str, str | None]:
    """Each function reachable from `entries` (not through `stops`), with the one that reaches it."""
    reached: dict[str, str | None] = dict.fromkeys(entries)
    waiting = list(entries)
    while waiting:
        where = waiting.pop()
        for name in calls.get(where, ()):
            for target in functions.get(name, ()):
                if target not in reached and target not in stops:
                    reached[target] = where
                    waiting.append(target)
    return reached


def _chains_to_platform(reached: dict[str, str | None]) -> list[str]:
    chains = []
    for where in reached:
        if where.split(":")[1].split(".")[-1].startswith("platform_"):
            chain = [where]
            while reached[chain[-1]] is not None:
                chain.append(reached[chain[-1]])
            chains.append(" <- ".join(chain))
    return sorted(chains)


def test_no_request_path_reaches_a_platform_function():
    """A function that works across organisations is named `platform_…`; no route of the API, the
    MCP server, the OpenAI-compatible surface or the console reaches one (through any chain of
    calls), but the console superuser's every-organisation pages, named above."""
    functions, calls = _call_graph()
    platform = {where for where in calls if where.split(":")[1].split(".")[-1].startswith("platform_")}
    requests = [
        where for where in calls if (where.startswith(API_PATHS) or where.split(":")[0].endswith("/apis.py")) and where not in platform
    ]
    console = [
        where
        for where in calls
        if (where.startswith(CONSOLE_PATHS) or "/admin" in where.split(":")[0]) and where not in SUPERUSER_PAGES | platform
    ]
    # The graph sees what it should: a request reaches erasing a person, and the console's pages theirs.
    assert "core_memory/flows/erasure.py:person_erase" in _reached(functions, calls, entries=requests)
    assert "core_memory/flows/erasure.py:person_erasure_preview" in _reached(functions, calls, entries=console, stops=SUPERUSER_PAGES)
    assert all(where in calls for where in SUPERUSER_PAGES), "A superuser's page moved: name it again here"

    through_requests = _chains_to_platform(_reached(functions, calls, entries=requests))
    through_console = _chains_to_platform(_reached(functions, calls, entries=console, stops=SUPERUSER_PAGES))

    assert not through_requests, "A request reaches work across organisations:\n" + "\n".join(through_requests)
    assert not through_console, "A console page reaches work across organisations:\n" + "\n".join(through_console)
