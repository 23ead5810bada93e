"""Tenancy that cannot be forgotten (core_memory.base.tenancy, R-2.5, R-12.1).

Every model that belongs to an organisation has scoped entries on its manager, and no
code reads such a model's rows through `.objects` any other way: a new query that
forgets the organisation fails here, before it can leak.
"""
import ast
from pathlib import Path

from django.apps import apps

from core_memory.base.tenancy import SCOPED_ENTRIES, WRITE_ENTRIES

PROJECT = Path(__file__).resolve().parent.parent
SOURCE_ROOTS = ("core_memory", "audit", "stores", "memory", "extraction", "maintenance")
# Rows that belong to no organisation: the tenant itself, and Django's and libraries' own.
NOT_TENANT_MODELS = {"Organisation"}


def _our_models():
    return [
        model
        for model in apps.get_models()
        if model.__module__.split(".")[0] in SOURCE_ROOTS and not model.__name__.startswith("Historical")
    ]


def _tenant_model_names() -> set[str]:
    return {model.__name__ for model in _our_models() if model.__name__ not in NOT_TENANT_MODELS}


def _source_files():
    for root in SOURCE_ROOTS:
        for path in (PROJECT / root).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path


def _unscoped_reads(path: Path, tenant_models: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        # <Model>.objects.<entry>
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "objects"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in tenant_models
            and node.attr not in SCOPED_ENTRIES + WRITE_ENTRIES
        ):
            found.append(f"{path.relative_to(PROJECT)}:{node.lineno} {node.value.value.id}.objects.{node.attr}")
    return found


def test_every_tenant_model_has_its_scoped_entries():
    """`for_organisation` or `for_key` (or both), and the explicit `unscoped`."""
    tenant_models = [model for model in _our_models() if model.__name__ not in NOT_TENANT_MODELS]

    lacking = [
        model.__name__
        for model in tenant_models
        if not hasattr(model.objects, "unscoped")
        or not (hasattr(model.objects, "for_organisation") or hasattr(model.objects, "for_key"))
    ]

    assert lacking == []
    assert len(tenant_models) == 40


def test_no_code_reads_a_tenant_model_without_a_scope():
    tenant_models = _tenant_model_names()

    unscoped = [found for path in _source_files() for found in _unscoped_reads(path, tenant_models)]

    assert unscoped == []
