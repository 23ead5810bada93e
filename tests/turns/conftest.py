import pytest

from core_memory.llm import openai
from tests.fake_model import FakeChatModel


@pytest.fixture
def fake_model(settings, monkeypatch):
    """A real OpenAI-compatible server on a free port, offered as the model `fake-chat`."""
    monkeypatch.setattr(openai, "BACKOFF_SECONDS", 0.01)
    with FakeChatModel() as model:
        settings.CORE_MODELS = [model.config("fake-chat")]
        yield model
