"""Erasing a person (core_memory.flows.erasure, R-3.4): her records and every version of them,
her subject tokens, the real values behind her threads' placeholders and her rules are gone
for good; what others hold stays."""
import json
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.db import connection

from audit.chain import audit_chains_verify
from audit.models import AuditEvent
from audit.services import audit_event_record, person_commitment
from core_memory.base.api.models import IdempotentRequest
from core_memory.flows.erasure import person_erase
from core_memory.base.callers import Caller
from core_memory.keys.models import SubjectToken
from core_memory.keys.services import subject_token_create
from core_memory.persons.models import Person
from core_memory.persons.services import person_update
from core_memory.pii.models import ThreadPlaceholders
from core_memory.pii.services import thread_texts_redact
from core_memory.threads.models import Item, Response, Thread
from core_memory.threads.services import thread_create
from core_memory.webhooks.delivery import webhook_delivery_run
from core_memory.webhooks.models import EVENT_KINDS, WebhookAttempt, WebhookDelivery, WebhookEvent, WebhookSubscription
from extraction.models import ExtractionCursor, ExtractionRun, ExtractionWindow
from extraction.services.planning import extraction_switch_plan
from maintenance.models import ContradictionCheck, EpisodeUse, PromotionReview, Proposal
from maintenance.services.planning import maintenance_store_plan
from memory.embedding.storage import embedding_storage_ready
from memory.models import EmbeddingBatch, MemoryRecord, ModelEmbedding, RecordEmbedding
from memory.services.erasure import person_records_erase
from tests.extraction.builders import conversation, switch_put
from tests.factories import erasure_receipt as receipt
from tests.factories import make_record
from tests.fake_model import completion
from tests.maintenance.builders import episode, promotion_on, sections

pytestmark = pytest.mark.django_db


def test_erasing_a_person_removes_her_records_and_their_history_only(tenant, other_tenant, write):
    old = write("Woont in Delft", subject="anna")
    new = write("Woont in Leiden", subject="anna", replaces=old.id)
    write("woont in leiden", subject="anna")
    shared = write("Kantoor in Utrecht")
    brams = write("Woont in Delft", subject="bram")
    elsewhere = MemoryRecord.objects.create(
        organisation=other_tenant.organisation, index=other_tenant.index, subject="anna", type="fact", text="x",
        normalised_text="x", changed_at=new.changed_at,
    )

    removed = person_records_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")

    assert removed == {"records": 2, "episodes": 0, "lessons": 0}
    assert set(MemoryRecord.objects.values_list("id", flat=True)) == {shared.id, brams.id, elsewhere.id}
    assert not MemoryRecord.history.filter(id__in=[old.id, new.id]).exists()
    assert MemoryRecord.history.filter(id=shared.id).count() == 1
    assert MemoryRecord.history.filter(subject="anna", organisation_id=other_tenant.organisation.id).count() == 1


def test_a_shared_record_that_corrected_hers_loses_only_the_pointer(tenant, write):
    annas = write("Drinkt thee", subject="anna")
    # A shared record pointing at hers: written before corrections kept the person (set up directly).
    correction = write("Drinkt koffie")
    MemoryRecord.objects.filter(pk=correction.pk).update(replaces=annas)

    person_records_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")

    correction.refresh_from_db()
    assert correction.replaces_id is None
    assert correction.status == "active"


def test_erasing_a_person_removes_her_records_tokens_and_rules_only(tenant, other_tenant):
    """R-3.4: her records go, shared ones and other persons' stay; audited as person.erased (R-11.2)."""
    make_record(tenant.index, "Anna likes tea.", subject="anna")
    make_record(tenant.index, "Anna lives in Utrecht.", subject="anna")
    kept = [
        make_record(tenant.index, "Bert likes coffee.", subject="bert"),
        make_record(tenant.index, "The office opens at nine.", subject=None),
        make_record(other_tenant.index, "Another organisation's Anna.", subject="anna"),
    ]
    tenant.client().patch("/v1/persons/anna", {"helper_model_may_read": False}, format="json")
    tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json")

    answer = person_erase(caller=Caller(key=tenant.key), subject="anna")

    # Her rules' `person.updated` event named her: scrubbed.
    assert answer == {"subject": "anna", "erased": receipt(records=2, subject_tokens=1, audit_events_scrubbed=1)}
    assert set(MemoryRecord.objects.values_list("id", flat=True)) == {record.id for record in kept}
    assert not Person.objects.filter(organisation=tenant.organisation, subject="anna").exists()
    assert not SubjectToken.objects.exists()
    event = AuditEvent.objects.get(action="person.erased")
    commitment = person_commitment(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")
    assert (event.organisation_id, event.actor, event.target) == (tenant.organisation.id, tenant.key.id, commitment)


def test_delete_person_route_erases_her(tenant):
    """R-3.4: `DELETE /v1/persons/{subject}` erases her records and answers what was erased."""
    make_record(tenant.index, "Anna likes tea.", subject="anna")
    shared = make_record(tenant.index, "The office opens at nine.", subject=None)
    tenant.client().post("/v1/subject-tokens", {"subject": "anna"}, format="json")

    response = tenant.client().delete("/v1/persons/anna")

    assert response.status_code == 200
    assert response.json() == {"subject": "anna", "erased": receipt(records=1, subject_tokens=1)}
    assert list(MemoryRecord.objects.values_list("id", flat=True)) == [shared.id]
    commitment = person_commitment(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject="anna")
    assert AuditEvent.objects.filter(action="person.erased", target=commitment, actor=tenant.key.id).count() == 1


def test_erasing_a_person_never_named_is_not_an_error(tenant):
    """R-3.4: afterwards she is gone either way."""
    response = tenant.client().delete("/v1/persons/nobody")

    assert response.status_code == 200
    assert response.json() == {"subject": "nobody", "erased": receipt()}


def test_erasing_a_person_removes_the_real_values_behind_her_threads_placeholders(tenant):
    """R-3.4, R-8.8: the placeholders hold her e-mail and phone number in clear; counted in the receipt."""
    hers = [thread_create(caller=Caller(key=tenant.key, subject="anna")) for _ in range(2)]
    brams = thread_create(caller=Caller(key=tenant.key, subject="bram"))
    for thread in (*hers, brams):
        thread_texts_redact(thread=thread, texts=["Mail anna@example.nl of bel 06-12345678"])

    answer = person_erase(caller=Caller(key=tenant.key), subject="anna")

    assert answer == {"subject": "anna", "erased": receipt(threads=2, thread_placeholders=2)}
    assert list(ThreadPlaceholders.objects.values_list("thread_id", flat=True)) == [brams.id]
    assert AuditEvent.objects.get(action="person.erased").details == {**receipt(threads=2, thread_placeholders=2), "scrubbed_events": []}


def test_erasing_a_person_removes_her_threads_with_their_extraction_windows(tenant, fake_model):
    """R-3.4: her threads go with their windows (both counted in the receipt); a run waiting for
    her window no longer does, and nothing of hers is read again."""
    switch_put(tenant.client(), tenant.index.id)
    conversation(organisation=tenant.organisation, key=tenant.key, messages=["Ik heet Anna."])
    bert, _ = conversation(organisation=tenant.organisation, key=tenant.key, subject="bert", messages=["Ik heet Bert."])
    extraction_switch_plan(index_id=tenant.index.id)

    answer = person_erase(caller=Caller(key=tenant.key), subject="anna")

    assert answer["erased"] == receipt(threads=1, extraction_windows=1)
    assert list(ExtractionWindow.objects.values_list("thread_id", flat=True)) == [bert.id]
    assert list(Thread.objects.values_list("id", flat=True)) == [bert.id]
    assert ExtractionRun.objects.get().pending == 1
    assert extraction_switch_plan(index_id=tenant.index.id, force=True).window_ids == []


ERASED = "anna-erasure-7f3"


def _models_naming_a_person():
    """Every model with a person column: a field called `subject` (the person, R-0), whose table
    this database has (record vectors exist only where PostgreSQL has pgvector)."""
    tables = set(connection.introspection.table_names())
    return sorted(
        (
            model
            for model in apps.get_models()
            if model._meta.db_table in tables
            and any(field.name == "subject" and field.concrete for field in model._meta.get_fields())
        ),
        key=lambda model: model._meta.label,
    )


def _hers(model):
    return model._default_manager.filter(subject=ERASED)


@pytest.fixture
def everything_about_her(tenant, write, fake_model, settings):
    """Her in every place Core keeps a person: records of every kind with history, contested marks,
    a store lesson from her episodes, proposals resting on her alone and with a colleague, her
    rules and token, a thread with items, a turn's response, redaction values, an extraction
    window, a maintenance job waiting, webhook events about her (one tried and failed, with its
    log; the others waiting)."""
    settings.CORE_HELPER_MODEL = "fake-chat"
    settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    WebhookSubscription.objects.create(
        organisation=tenant.organisation, url="http://127.0.0.1:9/hooks", events=list(EVENT_KINDS), secret="whsec_" + "A" * 44
    )
    promotion_on(tenant.index)
    sections(tenant.index, lessons={"enabled": True, "min_episodes": 2})
    old = write("Woont in Delft", subject=ERASED)
    write("Woont in Leiden", subject=ERASED, replaces=old.id)
    delft = write("Werkt in Delft", subject=ERASED)
    write("Werkt in Leiden", subject=ERASED)
    for number in range(2):
        episode(tenant.index, f"Sessie {number} ging goed.", subject=ERASED)
    write("De kantine sluit om 14 uur.", subject=ERASED)
    write("Declaraties gaan voor de 25e naar financiën.", subject=ERASED)
    write("Declaraties gaan voor de 25e naar financiën.", subject="bram")
    annas_lunch = MemoryRecord.objects.get(subject=ERASED, text__startswith="De kantine")

    def answer(body):
        name = body["response_format"]["json_schema"]["name"]
        data = json.loads(body["messages"][-1]["content"])
        if name == "core_contradictions":
            return completion(json.dumps({"contradictions": [pair for pair in data["pairs"] if delft.id in pair]}))
        if name == "core_promotion":
            return completion(json.dumps({"general": [annas_lunch.id]}))
        return completion(json.dumps({"lesson": "Werk in kleine stappen."}))

    fake_model.default = answer
    call_command("run_maintenance", "--store", tenant.index.id, stdout=StringIO())
    write("Werkt in Gouda", subject=ERASED)
    maintenance_store_plan(index_id=tenant.index.id, force=True)  # a job about her, waiting (and three done)
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject=ERASED, helper_model_may_read=False)
    subject_token_create(caller=Caller(key=tenant.key, subject=ERASED), ttl_seconds=600)
    switch_put(tenant.client(), tenant.index.id)
    thread, _ = conversation(organisation=tenant.organisation, key=tenant.key, subject=ERASED, messages=["Mail me op anna@example.nl"])
    Response.objects.create(organisation=tenant.organisation, thread=thread, key=tenant.key, subject=ERASED, model="fake-chat")
    extraction_switch_plan(index_id=tenant.index.id)
    thread_texts_redact(thread=thread, texts=["Mail me op anna@example.nl"])
    webhook_delivery_run(delivery_id=WebhookDelivery.objects.filter(run__subject=ERASED).order_by("id").first().id)
    # A model switch's batch planned for her record and a colleague's, not yet run.
    bram = MemoryRecord.objects.filter(subject="bram").order_by("id").first()
    EmbeddingBatch.objects.create(
        organisation=tenant.organisation, index=tenant.index, model="served-test", record_ids=[delft.id, bram.id], queued_at=delft.created_at
    )
    if embedding_storage_ready():
        # Her record's vector, set down directly (the index does not embed; what counts here is
        # that a row names her): the database removes it with the record.
        RecordEmbedding.objects.create(
            record=delft, organisation=tenant.organisation, index=tenant.index, subject=ERASED, type="fact",
            created_at=delft.created_at, model="test", text_digest="", vector=[1.0] + [0.0] * 383, embedded_at=delft.created_at,
        )
        # And its vector by a model served elsewhere, in that model's space (the same cascade).
        ModelEmbedding.objects.create(
            record=delft, organisation=tenant.organisation, index=tenant.index, subject=ERASED, type="fact",
            created_at=delft.created_at, space="served-test:4", text_digest="", vector=[1.0, 0.0, 0.0, 0.0],
            embedded_at=delft.created_at,
        )


def test_after_erasure_no_model_with_a_person_column_names_her(tenant, everything_about_her):
    """R-3.4, R-9.8: the test walks every model that names a person; the world above puts her in
    each of them first, so a new model with a person column fails here until erasure covers it.
    The audit log names her nowhere in clear: `person.erased`, the append-only record that she was
    erased (R-11.1), names her by a commitment (docs/decisions.md "Erasing a person")."""
    models = _models_naming_a_person()
    assert [model._meta.label for model in models] == [
        "keys.SubjectToken", "maintenance.MaintenanceJob", "memory.HistoricalMemoryRecord", "memory.MemoryRecord",
        *(["memory.ModelEmbedding", "memory.RecordEmbedding"] if embedding_storage_ready() else []), "persons.Person", "threads.Response", "threads.Thread",
        "webhooks.WebhookEvent",
    ]
    assert {model._meta.label for model in models if _hers(model).exists()} == {model._meta.label for model in models}
    contested = MemoryRecord.objects.filter(subject=ERASED, contested=True).values_list("id", flat=True)
    assert len(contested) == 2
    lesson = MemoryRecord.objects.get(subject=ERASED, type="lesson")
    assert EpisodeUse.objects.filter(lesson=lesson).count() == 2
    hers_alone = Proposal.objects.get(reason="general_knowledge")
    shared = Proposal.objects.get(reason="several_persons")
    her_events = WebhookEvent.objects.filter(subject=ERASED).count()
    assert her_events > 0 and WebhookAttempt.objects.filter(delivery__run__subject=ERASED).exists()

    answer = person_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ERASED)

    assert answer["erased"] == receipt(
        records=7, episodes=2, lessons=1, proposals=1, threads=1, thread_placeholders=1, extraction_windows=1, maintenance_jobs=4,
        subject_tokens=1, audit_events_scrubbed=1, webhook_events=her_events,
    )
    assert not WebhookAttempt.objects.filter(delivery__run__subject=ERASED).exists()
    assert {model._meta.label: _hers(model).count() for model in models} == {model._meta.label: 0 for model in models}
    assert not MemoryRecord.contradicts.through.objects.filter(from_memoryrecord_id__in=list(contested)).exists()
    assert not EpisodeUse.objects.exists() and not PromotionReview.objects.exists() and not ContradictionCheck.objects.exists()
    assert not Proposal.objects.filter(pk=hers_alone.pk).exists()
    assert list(Proposal.objects.get(pk=shared.pk).sources.values_list("record__subject", flat=True)) == ["bram"]
    assert not Item.objects.exists() and not ExtractionCursor.objects.exists()
    assert AuditEvent.objects.get(action="person.erased").target == person_commitment(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ERASED)
    assert not AuditEvent.objects.filter(target=ERASED).exists()


# --- what else held her data: stored answers, the console's action log, the audit (issue 19) ----

ZOE = "zoe"


def test_a_replay_after_erasure_does_not_hand_back_her_erased_record(tenant):
    """Issue: erasure left the idempotency store's answer, and a replay of `POST /v1/memory` with
    its Idempotency-Key answered 201 with the erased record's id and text. The stored answers
    about her go with her (counted); a retry is a new request."""
    body = {"index_id": tenant.index.id, "type": "fact", "text": "ZOE-MARK-1 Zoe woont in Haarlem."}
    first = tenant.client(subject=ZOE).post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="zoe-1")
    thread = tenant.client().post("/v1/threads", {"subject": ZOE}, format="json").json()
    tenant.client().post(
        f"/v1/threads/{thread['id']}/items", {"items": [{"role": "user", "content": "mail zoe@example.nl"}]},
        format="json", HTTP_IDEMPOTENCY_KEY="zoe-items",
    )
    tenant.client(subject="bram").post("/v1/memory", {**body, "text": "Bram woont in Gouda."}, format="json", HTTP_IDEMPOTENCY_KEY="bram-1")
    assert first.status_code == 201

    answer = tenant.client().delete(f"/v1/persons/{ZOE}")

    assert answer.json()["erased"]["idempotent_answers"] == 2
    assert list(IdempotentRequest.objects.values_list("idempotency_key", flat=True)) == ["bram-1"]
    replay = tenant.client(subject=ZOE).post("/v1/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="zoe-1")
    assert replay.status_code == 201 and "Idempotent-Replayed" not in replay.headers
    assert replay.json()["memory_id"] != first.json()["memory_id"]
    assert tenant.client().get(f"/v1/memory/{first.json()['memory_id']}").status_code == 404


def test_a_turn_for_her_stored_for_a_replay_goes_with_her(tenant, fake_model):
    """Issue: a turn's stored answer kept her e-mail and IBAN; a replay answered them raw."""
    fake_model.default = completion("Genoteerd: zoe@example.nl, NL91ABNA0417164300.")
    turn = tenant.client(subject=ZOE).post(
        "/v1/responses", {"model": "fake-chat", "input": "Mijn IBAN is NL91ABNA0417164300"}, format="json", HTTP_IDEMPOTENCY_KEY="turn-1"
    )
    assert turn.status_code == 200
    again = tenant.client(subject=ZOE).post(
        "/v1/responses", {"model": "fake-chat", "input": "nog eens", "thread_id": turn.json()["thread_id"]},
        format="json", HTTP_IDEMPOTENCY_KEY="turn-2",
    )
    assert again.status_code == 200

    receipt_of = person_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ZOE)

    assert receipt_of["erased"]["idempotent_answers"] == 2
    assert not IdempotentRequest.objects.exists()


def test_erasure_removes_the_console_action_log_about_her_records(tenant, console, write):
    """Issue: `django_admin_log` kept `object_repr='fact: … Zoe woont in Zwolle.'` and the
    console's home listed it under recent actions."""
    hers = write("Zoe woont in Zwolle.", subject=ZOE)
    shared = write("De kantine sluit om twee uur.")
    for record in (hers, shared):
        form = {"text": record.text + " Echt.", "metadata": "{}", "confidence": "1.0"}
        assert console.post(f"/console/memory/memoryrecord/{record.id}/change/", form).status_code == 302
    assert "Zoe woont in Zwolle" in console.get("/console/").content.decode()

    receipt_of = person_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ZOE)

    assert receipt_of["erased"]["console_actions"] == 1
    assert list(LogEntry.objects.values_list("object_id", flat=True)) == [shared.id]
    assert "Zoe woont in Zwolle" not in console.get("/console/").content.decode()


def test_erasure_scrubs_her_from_other_events_and_the_chain_still_verifies(tenant, console, write):
    """Issue: her subject stayed the target of `memory.console_read` events and an
    administrator's search term stayed in their details. They are blanked (counted), her rules'
    `person.updated` too (issue 28); `person.erased` names her by a commitment; every chain still
    verifies, the scrubbed events counted."""
    write("Zoe woont in Zwolle.", subject=ZOE)
    write("Bram woont in Gouda.", subject="bram")
    console.get("/console/persons/person/", {"q": "zo"})
    console.get(f"/console/persons/person/{tenant.organisation.id}/{ZOE}/")
    console.get("/console/persons/person/", {"q": "bra"})
    person_update(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), organisation=tenant.organisation, subject=ZOE, helper_model_may_read=False)

    receipt_of = person_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ZOE)

    reads = AuditEvent.objects.filter(action="memory.console_read").order_by("sequence")
    assert [(event.target, event.details.get("search"), event.details.get("subjects")) for event in reads] == [
        ("", "[erased]", ["[erased]"]),
        ("", None, None),
        ("", "bra", ["bram"]),
    ]
    assert receipt_of["erased"]["audit_events_scrubbed"] == 3
    assert [event.scrubbed_at is not None for event in reads] == [True, True, False]
    assert set(AuditEvent.objects.filter(action__startswith="person.").values_list("action", "target")) == {
        ("person.updated", ""), ("person.erased", person_commitment(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ZOE)),
    }
    (report,) = audit_chains_verify(organisation_id=tenant.organisation.id)
    assert report.intact and report.scrubbed == 3
    assert (reads[0].details_salt, reads[1].target_salt, reads[2].details_salt is not None) == (None, None, True)


def test_the_scrub_can_only_blank(tenant):
    """The database's scrub writes nothing but '' and "[erased]"; a path that is not there is skipped."""
    event = audit_event_record(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="memory.console_read", target=ZOE, details={"search": ZOE})
    erasure = audit_event_record(
        caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), action="person.erased", details={"scrubbed_events": [event.pk]}
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT audit_event_scrub(%s, %s, false, ARRAY['{search}', '{nothing,here}'])", [event.pk, erasure.pk])

    stored = AuditEvent.objects.get(pk=event.pk)
    assert (stored.target, stored.details, stored.details_salt, stored.target_salt is not None) == (ZOE, {"search": "[erased]"}, None, True)
    (report,) = audit_chains_verify(organisation_id=tenant.organisation.id)
    assert report.intact


CANARY = "ANNA-CANARY-51"
CANARY_MAIL = "anna@example.nl"

# Every table of the schema. A new table fails the guard below until `everything_about_her` (and
# the test) puts her data wherever the new table could hold some, and it is named here.
KNOWN_TABLES = {
    "agents_agent", "agents_agentversion", "audit_auditchainhead", "audit_auditevent", "auth_group", "auth_group_permissions",
    "auth_permission", "auth_user", "auth_user_groups", "auth_user_user_permissions", "console_consoleadministrator",
    "core_api_idempotentrequest", "django_admin_log", "django_celery_beat_clockedschedule", "django_celery_beat_crontabschedule",
    "django_celery_beat_intervalschedule", "django_celery_beat_periodictask", "django_celery_beat_periodictasks",
    "django_celery_beat_solarschedule", "django_content_type", "django_migrations", "django_session",
    "extraction_extractionconnector", "extraction_extractioncursor", "extraction_extractionrun", "extraction_extractionswitch",
    "extraction_extractionwindow", "keys_apikey", "keys_keytrailentry", "keys_subjecttoken", "llm_tokenusage",
    "maintenance_contradictioncheck", "maintenance_episodeuse", "maintenance_maintenancejob", "maintenance_maintenancerun",
    "maintenance_maintenancestate", "maintenance_promotionreview", "maintenance_proposal", "maintenance_proposalsource",
    "memory_embeddingbatch", "memory_embeddingswitchrun", "memory_historicalmemoryrecord", "memory_memoryrecord", "memory_memoryrecord_contradicts", "memory_sharedsetversion",
    "organisations_organisation", "persons_person",
    "pii_threadplaceholders", "stores_knowledgeindex", "stores_memorystore", "threads_item", "threads_response",
    "threads_thread", "threads_thread_agents",
    "webhooks_webhookattempt", "webhooks_webhookdelivery", "webhooks_webhookevent", "webhooks_webhooksubscription",
}


def _dump(table: str) -> list[str]:
    """Every row of `table` as text, the audit log's included: `person.erased` names her by a
    commitment (docs/decisions.md "Erasing a person")."""
    with connection.cursor() as cursor:
        if table == "webhooks_webhookevent":
            # The event telling subscribers she was erased names her until each of its deliveries
            # has ended (core_memory.webhooks.delivery); here none has been tried yet.
            cursor.execute(
                "SELECT (id, kind, CASE WHEN kind = 'person.erased' THEN NULL ELSE payload END, subject)::text FROM webhooks_webhookevent"
            )
        else:
            cursor.execute(f'SELECT t::text FROM "{table}" AS t')
        return [row[0] for row in cursor.fetchall()]


def _her_traces(tenant, console) -> tuple[list[str], str]:
    """Her in the places issue 28 found her after an erasure, and her ids (records, threads, turns)
    as canaries: an OpenAI-surface turn continuing her thread without naming her, stored for a
    replay; audit events whose target is her record's or her thread's id; console searches that
    found her by a word of her messages, part of her name or her record's text. Answers her ids
    and the OpenAI-surface turn the continued one followed."""
    first = tenant.client(subject=ERASED).post("/openai/v1/responses", {"model": "fake-chat", "input": f"Mail {CANARY_MAIL}"}, format="json")
    assert first.status_code == 200
    continued = tenant.client().post(
        "/openai/v1/responses", {"model": "fake-chat", "input": "verder", "previous_response_id": first.json()["id"]},
        format="json", HTTP_IDEMPOTENCY_KEY="canary-continued",
    )
    assert continued.status_code == 200 and CANARY_MAIL in continued.content.decode()
    deleted = MemoryRecord.objects.filter(subject=ERASED, type="fact").order_by("id").first()
    assert tenant.client().delete(f"/v1/memory/{deleted.id}").status_code == 204
    threads = list(Thread.objects.filter(subject=ERASED).values_list("id", flat=True))
    for thread_id in threads:
        assert console.get(f"/console/threads/thread/{thread_id}/change/").status_code == 200
    assert console.get("/console/threads/thread/", {"q": "verder"}).status_code == 200
    assert console.get("/console/persons/person/", {"q": ERASED[:9]}).status_code == 200
    ids = [*MemoryRecord.history.filter(subject=ERASED).values_list("id", flat=True), *threads]
    ids += Response.objects.filter(thread_id__in=threads).values_list("id", flat=True)
    return sorted(set(ids)), first.json()["id"]


def test_after_erasure_no_table_holds_anything_of_hers(tenant, everything_about_her, console, fake_model):
    """Issue 19: every table is dumped after an erasure and none holds her subject, her e-mail or
    her record's text — stored answers, the console's action log and the audit included. Issue
    28: nor her records', threads' and turns' ids, the stored answer of a turn that continued her
    thread without naming her, or a console search that found her."""
    fake_model.default = completion(f"Genoteerd, {CANARY_MAIL}.")
    written = tenant.client(subject=ERASED).post(
        "/v1/memory", {"index_id": tenant.index.id, "type": "fact", "text": f"{CANARY} woont in Haarlem."},
        format="json", HTTP_IDEMPOTENCY_KEY="canary-write",
    )
    assert written.status_code == 201
    turn = tenant.client(subject=ERASED).post(
        "/v1/responses", {"model": "fake-chat", "input": f"Mail {CANARY_MAIL}"}, format="json", HTTP_IDEMPOTENCY_KEY="canary-turn"
    )
    assert turn.status_code == 200
    form = {"text": f"{CANARY} woont in Zwolle.", "metadata": "{}", "confidence": "1.0"}
    assert console.post(f"/console/memory/memoryrecord/{written.json()['memory_id']}/change/", form).status_code == 302
    assert console.get("/console/persons/person/", {"q": ERASED}).status_code == 200
    assert console.get(f"/console/persons/person/{tenant.organisation.id}/{ERASED}/").status_code == 200
    assert console.get("/console/memory/memoryrecord/", {"q": CANARY}).status_code == 200
    her_ids, first_turn = _her_traces(tenant, console)
    tables = set(connection.introspection.table_names())
    before = {table: "\n".join(_dump(table)) for table in tables}
    canaries = (ERASED, CANARY, CANARY_MAIL, *her_ids)
    holding = {table for table, text in before.items() if any(canary in text for canary in canaries)}

    person_erase(caller=Caller.system(organisation_id=tenant.organisation.id, actor="test"), subject=ERASED)

    assert tables == KNOWN_TABLES | ({"memory_modelembedding", "memory_recordembedding"} if embedding_storage_ready() else set()), (
        "a new table: put her data in it in this test's world, then name it in KNOWN_TABLES"
    )
    after = {table: [row for row in _dump(table) if any(canary in row for canary in canaries)] for table in tables}
    assert {table: rows for table, rows in after.items() if rows} == {}
    assert {"core_api_idempotentrequest", "django_admin_log", "audit_auditevent", "memory_memoryrecord", "memory_embeddingbatch"} <= holding
    (batch,) = EmbeddingBatch.objects.all()
    assert len(batch.record_ids) == 1 and MemoryRecord.objects.filter(id=batch.record_ids[0], subject="bram").exists()
    replay = tenant.client().post(
        "/openai/v1/responses", {"model": "fake-chat", "input": "verder", "previous_response_id": first_turn},
        format="json", HTTP_IDEMPOTENCY_KEY="canary-continued",
    )
    assert replay.status_code == 404 and CANARY_MAIL not in replay.content.decode()
    (report,) = audit_chains_verify(organisation_id=tenant.organisation.id)
    assert report.intact
