"""Running a turn.

`turn_plan` resolves everything a request names — model, agent version, thread,
tools — and raises the request's 4xx errors before anything is written.
`turn_run` then writes the turn as it happens and yields its events: the response
opening, each item as it is stored on the thread, and the closed response. The
JSON answer and the Server-Sent Events stream are two readings of the same events.

No database transaction is held open while the model is called; every write is
its own short transaction, so a slow model never holds locks.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.utils import timezone

from core_memory.agents.models import Agent, AgentVersion
from core_memory.agents.selectors import agent_get_available, agent_version_latest
from core_memory.base.errors import InvalidRequest
from core_memory.base.telemetry.metrics import rate_limit_refusals, turn_injected_records, turn_injected_tokens
from core_memory.base.telemetry.tracing import LastingSpan, spanned
from core_memory.base.transactions import lazily_committed
from core_memory.flows.turns.conversation import items_to_messages
from core_memory.flows.turns.redaction import TurnRedaction
from core_memory.base.callers import Caller
from core_memory.keys.models import ApiKey
from core_memory.llm.metering import token_limit_reached
from core_memory.llm.protocol import ProviderError, TokenCount
from core_memory.llm.providers import chat_completion
from core_memory.llm.registry import model_get
from core_memory.pii.placeholders import RedactionError
from core_memory.threads.models import Item, Response, Thread
from core_memory.threads.selectors import (
    items_as_caller_reads,
    items_history,
    thread_get_available,
    thread_history,
    tool_results_from_outside,
)
from core_memory.threads.services import ItemDraft, thread_agent_record, thread_items_append, thread_start
from memory.retrieval import injection_block_retrieve
from memory.tools.calls import memory_tool_call
from memory.tools.catalogue import TRUST_ENVELOPE_NOTE, is_memory_tool_name, is_write_tool_name, memory_tools_offered, memory_tools_resolve

logger = logging.getLogger(__name__)

MAX_MODEL_CALLS = 8
# The most messages (items) one request may bring to a turn, on every surface: OpenAI's own
# Chat Completions takes at most 2048 `messages`; an app that resends its whole conversation
# fits, and one request can no longer store tens of thousands of items.
MAX_TURN_MESSAGES = 2048
CLIENT_DISCONNECTED = {"code": "client_disconnected", "message": "The stream's reader went away."}
INTERNAL_ERROR = {"code": "internal_error", "message": "The turn stopped on an internal error."}
TOKEN_LIMIT_REACHED = {"code": "token_limit_reached", "message": "The organisation has used its monthly token limit."}


@dataclass(frozen=True)
class TurnPlan:
    """A validated request: everything a turn needs, nothing written yet. `caller` is who asks,
    for the turn's person (the thread's, when it continues one)."""

    caller: Caller
    model: dict
    agent: Agent | None
    agent_version: AgentVersion | None
    thread: Thread | None
    input: list[ItemDraft]
    tools: list = field(default_factory=list)
    instructions: str | None = None
    timezone_name: str = "UTC"
    # The caller's own function tools (Chat Completions definitions): offered to the model
    # beside the memory tools; a call of one ends the turn and goes back to the caller.
    caller_tools: list[dict] = field(default_factory=list)
    # Sampling and output settings (temperature, response_format, …) sent with every model call.
    model_options: dict = field(default_factory=dict)

    @property
    def key(self) -> ApiKey:
        return self.caller.key

    @property
    def subject(self) -> str | None:
        return self.caller.subject

    @property
    def caller_tool_names(self) -> set[str]:
        return {tool["function"]["name"] for tool in self.caller_tools}


@dataclass(frozen=True)
class TurnEvent:
    """`created` (response), `item` (item), `completed` (response and output)."""

    kind: str
    response: Response
    item: Item | None = None
    output: list[Item] = field(default_factory=list)


@spanned("turn.plan")
def turn_plan(
    *,
    caller: Caller,
    model_id: str | None,
    input: list[ItemDraft],
    tool_names: list[str],
    agent_ref: str | None = None,
    thread_id: str | None = None,
    timezone_name: str | None = None,
    instructions: str | None = None,
    caller_tools: list[dict] | None = None,
    model_options: dict | None = None,
    offer_memory_tools: bool = False,
    now: datetime | None = None,
) -> TurnPlan:
    """Resolves the request's names. 404 for an agent or thread that is not the
    organisation's; 422 on `model` for a model not offered; 400 on `tools[i]`.

    `offer_memory_tools` adds the memory tools the key's own configuration offers, unnamed (a
    client that knows nothing of Core still gets them; `_turn_tools` says which)."""
    key = caller.key
    organisation = key.organisation
    agent = agent_version = None
    if agent_ref is not None:
        agent = agent_get_available(organisation=organisation, agent_ref=agent_ref, param="agent")
        agent_version = agent_version_latest(agent=agent)
    if model_id is None and agent_version is None:
        raise InvalidRequest("model: This field is required unless an agent is named.", param="model")
    model = model_get(organisation=organisation, model_id=model_id or agent_version.model, param="model")
    thread = None
    if thread_id is not None:
        # A turn on a thread is for the thread's person; a request for someone else does not see it.
        thread = thread_get_available(caller=caller, thread_id=thread_id, param="thread_id")
        caller = replace(caller, subject=thread.subject)
    timezone_name = timezone_name or organisation.timezone or "UTC"
    tools, caller_tools = _turn_tools(
        caller=caller, tool_names=tool_names, caller_tools=caller_tools or [], offer_memory_tools=offer_memory_tools,
        timezone_name=timezone_name, now=now or timezone.now(),
    )
    return TurnPlan(
        caller=caller,
        model=model,
        agent=agent,
        agent_version=agent_version,
        thread=thread,
        input=input,
        tools=tools,
        instructions=instructions,
        timezone_name=timezone_name,
        caller_tools=caller_tools,
        model_options=dict(model_options or {}),
    )


def _turn_tools(
    *, caller: Caller, tool_names: list[str], caller_tools: list[dict], offer_memory_tools: bool, timezone_name: str, now: datetime
) -> tuple[list, list[dict]]:
    """The memory tools a turn offers, and the caller's own function tools.

    `tool_names` name memory tools; so does a function of `caller_tools` named like one (an app on
    the OpenAI surface asks for it as `/v1` does, and Core runs it with its own definition); 400 on
    `tools[i]` for one the caller may not have. `offer_memory_tools` adds, unnamed, the memory tools
    the key's own configuration offers — a write tool only to a turn for a person: a turn for
    nobody writes the organisation's shared memory only when the app named the tool."""
    requested = list(enumerate(tool_names))
    own = []
    for position, tool in enumerate(caller_tools):
        name = tool["function"]["name"]
        if is_memory_tool_name(name):
            requested.append((position, name))
        else:
            own.append(tool)
    if offer_memory_tools:
        offered = memory_tools_offered(caller=caller)
        requested += [(None, name) for name in offered if caller.subject is not None or not is_write_tool_name(name)]
    tools = memory_tools_resolve(caller=caller, requested=requested, timezone_name=timezone_name, now=now) if requested else []
    return tools, own


def _turn_open(*, plan: TurnPlan, now: datetime) -> tuple[Response, Thread, list[Item]]:
    """The thread, the response and the input items. The commit does not wait for the disk:
    the turn's closing commit waits, and makes these durable with it (core_memory.base.transactions)."""
    with lazily_committed(durable=True):
        # Its id is known before it is saved: the input items name it, and it records where they end.
        response = Response(
            organisation_id=plan.key.organisation_id,
            key=plan.key,
            subject=plan.subject,
            agent_version=plan.agent_version,
            model=plan.model["id"],
        )
        if plan.thread is None:
            thread, input_items = thread_start(caller=plan.caller, drafts=plan.input, response_id=response.id, now=now)
        else:
            thread = plan.thread
            input_items = thread_items_append(thread=thread, caller=plan.caller, drafts=plan.input, response_id=response.id, now=now)
        response.thread = thread
        if plan.agent is not None:
            thread_agent_record(thread=thread, agent_id=plan.agent.id)
        response.output_position = input_items[-1].position + 1 if input_items else thread.item_count
        response.save(force_insert=True)
    return response, thread, input_items


def _system_messages(*, plan: TurnPlan, memory_block: str) -> list[dict]:
    """Instructions first (the agent's, then the request's), then the memory block as data."""
    texts = [plan.agent_version.instructions if plan.agent_version else "", plan.instructions or "", memory_block]
    return [{"role": "system", "content": text} for text in texts if text]


def _topic(drafts: list[ItemDraft]) -> str:
    users = [draft.content for draft in drafts if draft.role == Item.Role.USER and isinstance(draft.content, str)]
    return users[-1] if users else ""


def _tool_result_note(*, key: ApiKey) -> str | None:
    """With `trust_envelope`, the model is told in each tool message that its content is data."""
    return TRUST_ENVELOPE_NOTE if key.has_capability("trust_envelope") else None


def _tool_result(*, plan: TurnPlan, call, provenance: dict, now: datetime, trusted: bool) -> str:
    """The text the model reads for one tool call; a refusal is a result too, never an HTTP error.
    A record it writes is `trusted` only when the model has read no tool result from outside Core."""
    if call.name not in {tool.name for tool in plan.tools}:
        error = {"type": "unknown_tool", "message": f"No tool named {call.name!r} is offered in this turn."}
        return json.dumps({"error": error}, ensure_ascii=False)
    return memory_tool_call(
        caller=plan.caller, tool_name=call.name, arguments=call.arguments, provenance=provenance, now=now, trusted=trusted
    )


@dataclass
class _Turn:
    """A turn under way: what it wrote, what the model reads next, and how it stands so far."""

    response: Response
    thread: Thread
    input_items: list[Item]
    usage: TokenCount = field(default_factory=TokenCount)
    output: list[Item] = field(default_factory=list)
    model_calls: int = 0
    status: str = Response.Status.COMPLETED
    error: dict | None = None
    trace: dict = field(default_factory=lambda: {"memory": None})
    memory_detail: dict = field(default_factory=dict)
    system: list[dict] = field(default_factory=list)
    conversation: list[Item] = field(default_factory=list)
    tool_definitions: list[dict] | None = None
    tool_result_note: str | None = None
    redaction: TurnRedaction | None = None
    # Whether the model reads a tool result Core did not make (the app's function's, an import):
    # text anyone may have written, which may carry instructions to remember something.
    reads_outside_results: bool = False
    # The turn's span and its stages' (when tracing): it lasts across the events a stream yields.
    span: LastingSpan | None = None

    def stop(self, status: str, error: dict | None) -> None:
        self.status, self.error = status, error


def turn_run(*, plan: TurnPlan, now: datetime | None = None) -> Iterator[TurnEvent]:
    """Runs the turn, yielding its events; the last one is always `completed` (whatever the status).

    Its steps: the memory block (`_turn_prepare`), then model call, store, tools, again, until
    the model answers without a call of Core's own tools (`_turn_steps`)."""
    now = now or timezone.now()
    response, thread, input_items = _turn_open(plan=plan, now=now)
    turn_span = LastingSpan("turn", **{"core.organisation": response.organisation_id, "core.response": response.id, "core.thread": thread.id})
    turn = _Turn(response=response, thread=thread, input_items=input_items, span=turn_span)
    try:
        # Inside the try: a reader who leaves after the opening event still closes the turn.
        yield TurnEvent(kind="created", response=response)
        with turn_span.stage("turn.memory_block"):
            _turn_prepare(plan=plan, turn=turn, now=now)
        yield from _turn_steps(plan=plan, turn=turn, now=now)
    except BaseException as stopped:
        # A stream whose reader went away stops where it is; anything else is a bug, logged.
        disconnected = isinstance(stopped, GeneratorExit)
        if not disconnected:
            logger.exception("turn.failed", extra={"response": response.id})
        turn.stop(
            Response.Status.INCOMPLETE if disconnected else Response.Status.FAILED,
            CLIENT_DISCONNECTED if disconnected else INTERNAL_ERROR,
        )
        _turn_close(turn=turn)
        raise
    _turn_close(turn=turn)
    yield TurnEvent(kind="completed", response=response, output=turn.output)


def _turn_close(*, turn: _Turn) -> None:
    """The response as the turn ended: its status, tokens, trace and error."""
    response = turn.response
    response.status = turn.status
    response.usage = turn.usage.as_dict()
    response.trace = turn.trace
    response.memory_detail = turn.memory_detail
    response.error = turn.error
    response.model_calls = turn.model_calls
    response.completed_at = timezone.now()
    turn.span.end(**{"core.turn.status": response.status, "core.turn.model_calls": response.model_calls})
    # Named by organisation as well as by id: every statement names its organisation (docs/scaling.md).
    Response.objects.for_organisation(response.organisation_id).filter(pk=response.pk).update(
        **{name: getattr(response, name) for name in ("status", "usage", "trace", "memory_detail", "error", "model_calls", "completed_at")}
    )


def _turn_prepare(*, plan: TurnPlan, turn: _Turn, now: datetime) -> None:
    """The memory block (its records counted as retrieved), the system messages, the thread's
    conversation as this key may read it, and the tools the model is offered."""
    block = injection_block_retrieve(caller=plan.caller, agent_version=plan.agent_version, topic=_topic(plan.input), now=now)
    turn.trace, turn.memory_detail = {"memory": block.trace}, block.detail
    turn_injected_records.observe(block.trace["injected"])
    turn_injected_tokens.observe(block.trace["estimated_tokens"])
    turn.system = _system_messages(plan=plan, memory_block=block.text)
    # Another key's thread may hold what this key may not read: its memory tools' calls and
    # results of indexes this key cannot read are left out of what the model reads.
    # A thread the turn began holds its input items only: they are its history.
    own_history = items_history(turn.input_items) if plan.thread is None else thread_history(thread=turn.thread)
    history = items_as_caller_reads(caller=plan.caller, items=own_history)
    turn.conversation = [item for item in history if not getattr(item, "withheld", False)]
    turn.reads_outside_results = tool_results_from_outside(thread=turn.thread, items=turn.conversation)
    turn.tool_definitions = [tool.definition() for tool in plan.tools] + plan.caller_tools or None
    turn.tool_result_note = _tool_result_note(key=plan.key)
    turn.redaction = TurnRedaction(thread=turn.thread) if plan.key.pii_redaction else None


def _turn_steps(*, plan: TurnPlan, turn: _Turn, now: datetime) -> Iterator[TurnEvent]:
    """Model call → store its answer → run Core's own tools and store their results, until the
    model answers without a tool call, hands a call back to the caller, or a limit stops it."""
    while True:
        with turn.span.stage("turn.model_call", **{"core.model": plan.model["id"]}):
            answer = _model_answer(plan=plan, turn=turn, now=now)
        if answer is None:
            return
        drafts = [ItemDraft(role=Item.Role.ASSISTANT, content=answer.content)] if answer.content else []
        drafts += [
            ItemDraft(role=Item.Role.ASSISTANT, kind=Item.Kind.TOOL_CALL, content=call.arguments, name=call.name, call_id=call.id)
            for call in answer.tool_calls
        ]
        items = yield from _turn_store(plan=plan, turn=turn, drafts=drafts)
        if not answer.tool_calls:
            if answer.finish_reason == "length":
                error = {"code": "max_output_tokens", "message": "The model stopped at its output limit."}
                turn.stop(Response.Status.INCOMPLETE, error)
            return
        # The caller's own tools run at the caller: their calls end the turn unanswered,
        # after Core has answered the calls of its own tools in the same answer.
        own_calls = [call for call in answer.tool_calls if call.name not in plan.caller_tool_names]
        handed_back = len(own_calls) < len(answer.tool_calls)
        if turn.model_calls >= MAX_MODEL_CALLS and not handed_back:
            error = {"code": "max_model_calls", "message": f"The turn stopped after {MAX_MODEL_CALLS} model calls."}
            turn.stop(Response.Status.INCOMPLETE, error)
            return
        with turn.span.stage("turn.tools", **{"core.tool_calls": len(own_calls)}):
            results = _tool_results(plan=plan, turn=turn, calls=own_calls, items=items)
        yield from _turn_store(plan=plan, turn=turn, drafts=results)
        if handed_back:
            return


def _model_answer(*, plan: TurnPlan, turn: _Turn, now: datetime):
    """One model call on the conversation so far, its tokens counted; None when the turn stops
    instead (the token limit, a redaction that failed, the provider's error)."""
    if token_limit_reached(organisation=plan.key.organisation, at=now):
        # At the limit no further model call is made (docs/decisions.md "Metering").
        rate_limit_refusals.labels(cause="token_limit").inc()
        turn.stop(Response.Status.FAILED, TOKEN_LIMIT_REACHED)
        return None
    history = items_to_messages(turn.conversation, response_id=turn.response.id, tool_result_note=turn.tool_result_note)
    messages = turn.system + history
    try:
        if turn.redaction is not None:
            messages = turn.redaction.messages(messages)
        answer = chat_completion(
            organisation=plan.key.organisation,
            model=plan.model,
            messages=messages,
            tools=turn.tool_definitions,
            options=plan.model_options,
            now=now,
        )
    except RedactionError as redaction_error:
        logger.warning("turn.pii_redaction_failed", extra={"response": turn.response.id, "error": str(redaction_error)})
        turn.stop(Response.Status.FAILED, redaction_error.as_dict())
        return None
    except ProviderError as provider_error:
        turn.stop(Response.Status.FAILED, provider_error.as_dict())
        return None
    turn.model_calls += 1
    turn.usage += answer.usage
    return turn.redaction.answer(answer) if turn.redaction is not None else answer


def _turn_store(*, plan: TurnPlan, turn: _Turn, drafts: list[ItemDraft]) -> Iterator[TurnEvent]:
    """Appends the drafts to the thread, yields each item stored, and returns the items."""
    # Durable with the turn's closing commit, which waits for the disk.
    with turn.span.stage("turn.store", **{"core.items": len(drafts)}), lazily_committed():
        items = thread_items_append(thread=turn.thread, caller=plan.caller, drafts=drafts, response_id=turn.response.id)
    turn.conversation.extend(items)
    turn.output.extend(items)
    for item in items:
        yield TurnEvent(kind="item", response=turn.response, item=item)
    return items


def _tool_results(*, plan: TurnPlan, turn: _Turn, calls: list, items: list[Item]) -> list[ItemDraft]:
    """The results of Core's own tools' calls, each with the provenance of what it may write."""
    call_items = {item.call_id: item for item in items if item.kind == Item.Kind.TOOL_CALL}
    return [
        ItemDraft(
            role=Item.Role.TOOL,
            kind=Item.Kind.TOOL_RESULT,
            name=call.name,
            call_id=call.id,
            content=_tool_result(
                plan=plan,
                call=call,
                provenance={
                    "thread_id": turn.thread.id,
                    "item_ids": [item.id for item in turn.input_items] + [call_items[call.id].id],
                    "response_id": turn.response.id,
                },
                now=timezone.now(),
                trusted=not turn.reads_outside_results,
            ),
        )
        for call in calls
    ]
