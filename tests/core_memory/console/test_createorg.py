
import pytest
from django.core.management import CommandError

from core_memory.keys.models import KEY_CAPABILITIES, ApiKey
from core_memory.organisations.models import Organisation
from tests.factories import client_for, createorg

pytestmark = pytest.mark.django_db


def test_createorg_prints_json_with_a_working_owner_key():
    """R-1.3: every capability, a policy of all indexes now and later."""
    answer = createorg("Acme", "--timezone", "Europe/Amsterdam", "--capability", "improvements")

    assert set(answer) == {"organisation_id", "key_id", "key"}
    organisation = Organisation.objects.get(id=answer["organisation_id"])
    assert (organisation.name, organisation.timezone, organisation.capabilities) == ("Acme", "Europe/Amsterdam", ["improvements"])
    key = ApiKey.objects.get(id=answer["key_id"], organisation=organisation)
    assert key.capabilities == sorted(KEY_CAPABILITIES)  # stored sorted
    assert key.policy == {"read": ["*"], "write": ["*"]}
    client = client_for(answer["key"])
    assert client.get(f"/v1/tenants/{organisation.id}").status_code == 200
    index_id = client.post("/v1/indexes", {"name": "later"}, format="json").json()["id"]
    assert client.get(f"/v1/indexes/{index_id}").status_code == 200


def test_createorg_refuses_an_unknown_time_zone():
    """R-3.1: IANA names only."""
    with pytest.raises(CommandError, match=r"^Unknown time zone 'Mars/Olympus' \(use an IANA name such as Europe/Amsterdam\)\.$"):
        createorg("Acme", "--timezone", "Mars/Olympus")

    assert not Organisation.objects.exists()


@pytest.mark.parametrize("name", ["", "x" * 201])
def test_createorg_refuses_a_name_it_cannot_keep_with_a_message(name):
    """R-1.3: an operator's mistake is a command error, not a traceback."""
    with pytest.raises(CommandError, match="name"):
        createorg(name)

    assert not Organisation.objects.exists()
