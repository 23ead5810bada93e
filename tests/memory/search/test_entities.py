"""Names and numbers a question shares with a record (memory.search.entities), offline rules."""
import pytest

from memory.search.entities import entity_overlaps, question_entities


@pytest.mark.parametrize(
    ("question", "entities"),
    [
        ("Where is Sanne based?", ["sanne"]),
        ("Wie is de leidinggevende van Joris bij Tulp Energie?", ["joris", "tulp", "energie"]),
        ("What did I agree with Emma in March?", ["emma", "march"]),
        ("Who approves quotes above €25.000?", ["25000"]),
        ("Heeft hij 25,000 of 25000 euro?", ["25000"]),
        ("how does anna take her coffee", []),  # no capitals: no names read
    ],
)
def test_a_questions_names_and_numbers_are_read_without_its_function_words(question, entities):
    assert question_entities(question) == entities


def test_a_record_holding_the_questions_rare_name_overlaps_most():
    texts = [
        "Caroline: I went to the support group in Sweden.",
        "Caroline: my kids love the beach.",
        "Melanie: we painted a sunset together.",
    ]

    overlaps = entity_overlaps(question_entities("What did Caroline do in Sweden?"), texts)

    # "Sweden" is in one record, "Caroline" in two: the first record holds both, the second
    # only the commoner name, the third neither.
    assert overlaps[0] == pytest.approx(1.0)
    assert 0 < overlaps[1] < 0.5
    assert overlaps[2] == 0.0


def test_a_question_without_names_overlaps_nothing():
    assert entity_overlaps([], ["Sanne woont in Zwolle."]) == [0.0]
