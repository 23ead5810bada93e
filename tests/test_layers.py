"""The house's direction (docs/decisions.md "Layers", README "Architecture"): the
contracts in pyproject.toml, checked by import-linter over the real import graph."""
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
