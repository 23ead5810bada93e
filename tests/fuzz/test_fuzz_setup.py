"""The fuzz step's own set-up (issue 19): a new seed each run that it can be asked to repeat, and
an owner key that no case can revoke or limit, so the step tests the API, not 401s and 429s."""
from __future__ import annotations

import pytest

from core_memory.keys.models import ApiKey
from core_memory.organisations.models import Organisation
from tests.factories import client_for
from tests.fuzz.test_schemathesis import _limits_of, _limits_put_back, fuzz_organisation, fuzz_seed


def test_each_run_draws_a_new_seed_and_a_given_seed_is_kept():
    """The step was derandomised: every CI run sent the same cases."""
    drawn = {fuzz_seed({}) for _ in range(5)}

    assert len(drawn) > 1
    assert fuzz_seed({"FUZZ_SEED": "4242"}) == 4242


@pytest.mark.django_db
def test_a_case_that_revokes_the_key_it_names_leaves_the_fuzzing_key_working(fake_model):
    """The real `key_id` was the owner key's own: a valid DELETE revoked it and every later case was a 401."""
    secret, real = fuzz_organisation("fake-chat")
    client = client_for(secret)

    revoked = client.delete(f"/v1/tenants/{real['organisation_id']}/keys/{real['key_id']}")

    assert revoked.status_code in (200, 204), revoked.content
    assert ApiKey.objects.get(pk=real["key_id"]).revoked_at is not None
    assert client.get(f"/v1/tenants/{real['organisation_id']}").status_code == 200


@pytest.mark.django_db
def test_limits_a_case_lowers_are_put_back_before_the_next(fake_model):
    """A valid PATCH of the organisation set its rate limit to 1 a minute: every later case was a 429."""
    secret, real = fuzz_organisation("fake-chat")
    before = _limits_of(real["organisation_id"])

    changed = client_for(secret).patch(
        f"/v1/tenants/{real['organisation_id']}", {"rate_limit_per_minute": 1, "capabilities": []}, format="json"
    )
    _limits_put_back(real["organisation_id"], before)

    assert changed.status_code == 200, changed.content
    organisation = Organisation.objects.get(pk=real["organisation_id"])
    assert (organisation.rate_limit_per_minute, organisation.capabilities) == (before["rate_limit_per_minute"], before["capabilities"])
