"""Configuration is parsed strictly (R-1.2): a value the code would ignore stops start-up."""
import os
import subprocess
import sys

import pytest

MODELS = '[{"id": "jouw-chatmodel", "provider": "openai", "base_url": "http://models.invalid/v1"}]'


def start(**variables: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "CORE_MODELS": MODELS, **variables}
    return subprocess.run(
        [sys.executable, "-c", "import core_memory.settings"], env=environment, capture_output=True, text=True, timeout=60
    )


def test_the_documented_helper_and_embeddings_settings_start():
    """R-1.2."""
    assert start(CORE_HELPER_MODEL="jouw-chatmodel", CORE_EMBEDDINGS="off").returncode == 0


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"CORE_HELPER_MODEL": "elsewhere"}, "CORE_HELPER_MODEL 'elsewhere' is not an id in CORE_MODELS"),
        ({"CORE_EMBEDDINGS": "openai"}, "CORE_EMBEDDINGS 'openai': only 'off' is supported"),
    ],
)
def test_a_helper_model_or_embedding_backend_that_would_be_ignored_stops_start_up(variables, message):
    """R-1.2: strict parsing; nothing documented is silently ignored."""
    result = start(**variables)

    assert result.returncode == 1
    assert message in result.stderr
