"""The walk: the block's sections in order, under the count and
the token budget, and the trace of what was injected and dropped.

Bounded cost: every section reads its candidates in SQL, ordered and LIMITed (a
page of the section's cap plus a small margin); a further page is read only when budget
skips used the page up and budget is left, and at most `MAX_PAGES` pages per section. A
person's records are never all loaded. `dropped_by_budget` counts the candidates the walk
tried and skipped; `dropped_by_count` counts (up to `COUNT_CAP`) the candidates left when
`limit` stopped the walk.

Besides the trace's counts, the result carries `detail` — which record went into which section,
and which the walk tried and skipped, and why (the budget, or the organisation's share) —
for the console's "why did the assistant know that?" (core_memory.flows.turns keeps it with
the response). It is gathered from the rows the walk reads anyway: no query of its own. The
records `limit` left out are counted per section, not named: naming them would read them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import connection
from django.db.models import F, QuerySet

from core_memory.base.callers import Caller
from core_memory.llm.embeddings import query_embed_begin
from memory.embedding.storage import index_embedding_model, index_embeds
from memory.injection.hot import first_pages_rows
from memory.injection.lines import record_line, token_estimate, tokens_of_bytes
from memory.injection.pages import PAGE_MARGIN, first_pages_read, merged_page, merged_pages, pages
from memory.injection.topic import RANK_SCORES, TopicRead, hits_are_rows, ranked_by_topic, relevance_score, topic_hits
from memory.injection.settings import BlockSettings, block_settings, governing_block, readable_index
from memory.models import MemoryRecord
from memory.search.decay import TIE_BREAKERS, key_half_lives, records_with_decay
from memory.search.question import SearchTrace
from memory.search.scope import records_visible
from stores.models import KnowledgeIndex

SECTIONS = ("commitments", "behaviour", "about_this_person", "organisation", "past_sessions")
BEHAVIOUR_LIMIT = 10
# Types that have their own section and never appear under about_this_person/organisation.
OWN_SECTION_TYPES = ("commitment", "behaviour", "episode")
LESSON = "lesson"
COUNT_CAP = 1_000
# The smallest record line is about 40 bytes; below this nothing more can fit.
MIN_LINE_TOKENS = 10
# What the walk reads of a record: its line (memory.injection.lines), the order and the budget.
LINE_FIELDS = ("id", "subject", "type", "text", "confidence", "contested", "due_at", "structured", "retrieval_count", "created_at")
# Episodes: relevance to the topic, weighted so that a session this old counts half.
EPISODE_RECENCY_HALF_LIFE_DAYS = 30.0


# The sections' first pages read together in one statement (memory.injection.pages); off, each
# section reads its own (the same records: tests/memory/injection/test_first_pages.py compares).
FIRST_PAGES_TOGETHER = True
# The most frequent block's first pages by memory.injection.hot's statement, written once.
FIRST_PAGES_WRITTEN = True

DROPPED_BY_BUDGET = "budget"
DROPPED_BY_SHARE = "share"


@dataclass(frozen=True)
class InjectionResult:
    text: str
    trace: dict
    records: list[MemoryRecord] = field(default_factory=list)
    # {"injected": [[record id, section], …], "dropped": [[record id, section, "budget"|"share"], …],
    #  "dropped_by_count": {section: n}}: what the console shows of the walk (module docstring).
    detail: dict = field(default_factory=lambda: {"injected": [], "dropped": [], "dropped_by_count": {}})
    # The tokens of each chat model call the topic's searches made (a chat reranker), to be metered.
    chat_calls: list = field(default_factory=list)

    @property
    def record_ids(self) -> list[str]:
        return [record.id for record in self.records]


def _trace(*, source: str | None, index_id: str | None) -> dict:
    return {
        "source": source,
        "index_id": index_id,
        "injected": 0,
        "sections": dict.fromkeys(SECTIONS, 0),
        "dropped_by_count": 0,
        "dropped_by_budget": 0,
        "estimated_tokens": 0,
    }


class _Block:
    """The block as it grows, with the running byte count the budget is checked on."""

    def __init__(self, *, budget: int, shared_budget: float | None):
        self.budget = budget
        self.shared_budget = shared_budget
        self.lines: list[str] = []
        self.byte_count = 0
        self.shared_byte_count = 0
        self.records: list[MemoryRecord] = []
        self.sections = dict.fromkeys(SECTIONS, 0)
        self.dropped_by_budget = 0
        self.injected: list[list[str]] = []
        self.dropped: list[list[str]] = []
        # What the topic's searches did with the index's models (memory.search.question).
        self.search = SearchTrace()

    @property
    def exhausted(self) -> bool:
        return self.budget - tokens_of_bytes(self.byte_count) < MIN_LINE_TOKENS

    def offer(self, *, section: str, record: MemoryRecord) -> bool:
        """Add the record's line if it fits the budget (and the shared share); else count the skip."""
        line = record_line(record)
        new_lines = [line] if self.sections[section] else [f"[{section}]", line]
        added = sum(len(each.encode("utf-8")) for each in new_lines) + len(new_lines) - (0 if self.lines else 1)
        line_bytes = len(line.encode("utf-8"))
        is_limited_share = self.shared_budget is not None and record.subject is None
        reason = None
        if tokens_of_bytes(self.byte_count + added) > self.budget:
            reason = DROPPED_BY_BUDGET
        elif is_limited_share and tokens_of_bytes(self.shared_byte_count + line_bytes) > self.shared_budget:
            reason = DROPPED_BY_SHARE
        if reason is not None:
            self.dropped_by_budget += 1
            self.dropped.append([record.id, section, reason])
            return False
        self.injected.append([record.id, section])
        self.lines.extend(new_lines)
        self.byte_count += added
        if record.subject is None:
            self.shared_byte_count += line_bytes
        self.records.append(record)
        self.sections[section] += 1
        return True

    def walk(self, *, section: str, candidates: Iterable[MemoryRecord], cap: int) -> tuple[int, int]:
        """Offer candidates until `cap` are in; answers (injected, tried)."""
        injected = tried = 0
        iterator = iter(candidates)
        while injected < cap:
            record = next(iterator, None)
            if record is None:
                break
            tried += 1
            if self.offer(section=section, record=record):
                injected += 1
        return injected, tried


CONFIDENCE_ORDER = TIE_BREAKERS


def _capped_counts(querysets: dict[str, QuerySet]) -> dict[str, int]:
    """Each queryset's count, up to COUNT_CAP, all in one statement (one round trip)."""
    parts, parameters = [], []
    for queryset in querysets.values():
        sql, part_parameters = queryset.order_by().values("pk")[:COUNT_CAP].query.sql_with_params()
        parts.append(f"(SELECT count(*) FROM ({sql}) AS capped)")
        parameters.extend(part_parameters)
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), parameters)
        return dict(zip(querysets, cursor.fetchone(), strict=True))


def injection_block_build(*, caller: Caller, agent_version, topic: str, now: datetime) -> InjectionResult:
    """The turn's memory block for the caller's person, its trace, and the ids injected (their
    retrieval counts rise).

    Nothing is injected — silently — without the `memory` capability, with a
    disabled block, or when the caller's key may not read the block's index.
    """
    subject = caller.subject
    block_config, source = governing_block(caller=caller, agent_version=agent_version)
    index_id = block_config.get("index_id") if block_config else None
    trace = _trace(source=source, index_id=index_id)
    if not block_config or not block_config.get("enabled"):
        return InjectionResult(text="", trace=trace)
    index = readable_index(caller=caller, index_id=index_id)
    if index is None:
        return InjectionResult(text="", trace=trace)
    settings = block_settings(block=block_config, index=index)
    searches_topic = settings.rank in RANK_SCORES or (settings.episodes_limit > 0 and settings.names("episode"))
    if searches_topic and topic and topic.strip() and index_embeds(index) and index_embedding_model(index).in_process:
        # The topic's searches need its vector: the engine makes it on its own thread while the
        # first sections are read (each search then takes it, or waits for what is left).
        query_embed_begin(topic, scope=caller.organisation_id)
    # Each section reads hers and the shared ones as separate queries, each of which an index
    # answers in order; "hers OR shared" in one query cannot be read in order.
    hers = _candidates_of(caller=caller, index=index, settings=settings, now=now) if subject is not None else None
    shared = _candidates_of(caller=replace(caller, subject=None), index=index, settings=settings, now=now)
    shared_budget = settings.budget * settings.organisation_share if subject is not None else None
    block = _Block(budget=settings.budget, shared_budget=shared_budget)
    topic = topic or ""
    # Hers only for a turn for a person, shared only for a turn for nobody.
    sessions_of = hers if hers is not None else shared
    first = (
        _first_pages(caller=caller, index=index, now=now, hers=hers, shared=shared, sessions_of=sessions_of, settings=settings)
        if FIRST_PAGES_TOGETHER
        else {}
    )
    _walk_commitments(hers=hers, shared=shared, settings=settings, block=block, first=first.get("commitments"))
    _walk_behaviour(hers=hers, settings=settings, block=block, first=first.get("behaviour"))
    dropped_by_section = _walk_person_and_shared(
        caller=caller, index=index, topic=topic, hers=hers, shared=shared, settings=settings, block=block, now=now, first=first
    )
    _walk_past_sessions(
        caller=caller, index=index, topic=topic, records=sessions_of, settings=settings, block=block, now=now,
        first=first.get("past_sessions"),
    )
    text = "\n".join(block.lines)
    trace.update(
        injected=len(block.records),
        sections=block.sections,
        dropped_by_count=sum(dropped_by_section.values()),
        dropped_by_budget=block.dropped_by_budget,
        estimated_tokens=token_estimate(text=text),
    )
    if block.search.told_of_models():
        # The topic's searches asked a model served elsewhere: which, and how it went.
        trace["search"] = block.search.as_dict()
    detail = {"injected": block.injected, "dropped": block.dropped, "dropped_by_count": dropped_by_section}
    return InjectionResult(text=text, trace=trace, records=list(block.records), detail=detail, chat_calls=block.search.chat_calls)


def _candidates_of(*, caller: Caller, index: KnowledgeIndex, settings: BlockSettings, now: datetime) -> QuerySet:
    """Her records (the caller's person), or the shared ones (a caller for nobody), under the block's filters."""
    records = records_visible(caller=caller, index=index, shared=False, now=now).only(*LINE_FIELDS)
    records = records_with_decay(records, key=caller.key, now=now)
    if settings.metadata:
        records = records.filter(metadata__contains=settings.metadata)
    if settings.min_confidence > 0:
        records = records.filter(effective_confidence__gte=settings.min_confidence)
    return records


COMMITMENT_ORDER = (F("due_at").asc(nulls_last=True), *CONFIDENCE_ORDER)
EPISODE_ORDER = ("-created_at", *CONFIDENCE_ORDER)
BEHAVIOUR_ORDER = ("-created_at", *CONFIDENCE_ORDER)


def _open_commitments(*, hers: QuerySet | None, shared: QuerySet) -> list[QuerySet]:
    return [part.filter(type="commitment", done=False) for part in (hers, shared) if part is not None]


def _sections(*, hers: QuerySet | None, shared: QuerySet, settings: BlockSettings) -> tuple[list[str] | None, list[tuple[str, QuerySet]]]:
    """[about_this_person] (for a person) and [organisation]: the types they show (None: every
    type but those with a section of their own) and each one's records; none when the block's
    types leave them nothing."""
    section_types = sorted(settings.types - set(OWN_SECTION_TYPES)) if settings.types else None
    if section_types == []:
        return section_types, []

    def of_section_types(records: QuerySet) -> QuerySet:
        return records.filter(type__in=section_types) if section_types else records.exclude(type__in=OWN_SECTION_TYPES)

    sections = [("about_this_person", of_section_types(hers))] if hers is not None else []
    return section_types, [*sections, ("organisation", of_section_types(shared))]


def _first_pages(
    *, caller: Caller, index: KnowledgeIndex, now: datetime, hers: QuerySet | None, shared: QuerySet, sessions_of: QuerySet,
    settings: BlockSettings,
) -> dict:
    """The first page of every section the walk is sure to read, read in one statement
    (memory.injection.pages.first_pages_read): the open commitments, her rules, her records
    and the shared ones in confidence order, and — for the sections ranked by the topic, when
    the topic's search reads their rows itself — their first rows in fallback order. Each
    section's own statement, so each page is what the section would read; for the most
    frequent block, the same statements written once (memory.injection.hot)."""
    wanted: dict[str, tuple[int, Callable[[], QuerySet]]] = {}
    if settings.names("commitment") and settings.commitments_limit > 0:
        size = settings.commitments_limit + PAGE_MARGIN
        wanted["commitments"] = size, lambda size=size: merged_page(
            _open_commitments(hers=hers, shared=shared), order=COMMITMENT_ORDER, page=0, page_size=size
        )
    if hers is not None and settings.names("behaviour"):
        size = BEHAVIOUR_LIMIT + PAGE_MARGIN
        wanted["behaviour"] = size, lambda size=size: hers.filter(type="behaviour").order_by(*BEHAVIOUR_ORDER)[:size]
    section_types, sections = _sections(hers=hers, shared=shared, settings=settings)
    if settings.limit > 0 and settings.rank not in RANK_SCORES:
        size = settings.limit + PAGE_MARGIN
        for section, queryset in sections:
            wanted[section] = size, lambda size=size, queryset=queryset: queryset.order_by(*CONFIDENCE_ORDER)[:size]
        if hers is not None and sections and _names_lessons(section_types) and hits_are_rows(settings):
            # Enough for the lessons' pool: a page beside at most a page of hits.
            lessons = sections[0][1]
            wanted["lessons"] = 2 * size, lambda size=2 * size: lessons.filter(type=LESSON).order_by(*CONFIDENCE_ORDER)[:size]
    if settings.episodes_limit > 0 and settings.names("episode") and hits_are_rows(settings):
        # Enough for the pool: a page beside at most two pages of hits.
        size = 3 * (settings.episodes_limit + PAGE_MARGIN)
        wanted["past_sessions"] = size, lambda size=size: sessions_of.filter(type="episode").order_by(*EPISODE_ORDER)[:size]
    if FIRST_PAGES_WRITTEN and wanted and not settings.types and hits_are_rows(settings) and not key_half_lives(key=caller.key):
        page_sizes = {name: size for name, (size, _) in wanted.items()}
        return first_pages_rows(columns=LINE_FIELDS, caller=caller, index=index, now=now, page_sizes=page_sizes)
    return first_pages_read({name: statement() for name, (_, statement) in wanted.items()})


def _walk_commitments(
    *, hers: QuerySet | None, shared: QuerySet, settings: BlockSettings, block: _Block, first: list[MemoryRecord] | None = None
) -> None:
    """[commitments]: open ones, soonest due first, hers and the shared ones merged."""
    if not settings.names("commitment") or settings.commitments_limit <= 0:
        return
    candidates = merged_pages(
        _open_commitments(hers=hers, shared=shared),
        order=COMMITMENT_ORDER,
        page_size=settings.commitments_limit + PAGE_MARGIN,
        block=block,
        first=first,
    )
    block.walk(section="commitments", candidates=candidates, cap=settings.commitments_limit)


def _walk_behaviour(*, hers: QuerySet | None, settings: BlockSettings, block: _Block, first: list[MemoryRecord] | None = None) -> None:
    """[behaviour]: her rules, newest first; a turn for nobody has none."""
    if hers is None or not settings.names("behaviour"):
        return
    behaviour = hers.filter(type="behaviour").order_by(*BEHAVIOUR_ORDER)
    page_size = BEHAVIOUR_LIMIT + PAGE_MARGIN
    block.walk(section="behaviour", candidates=pages(behaviour, page_size=page_size, block=block, first=first), cap=BEHAVIOUR_LIMIT)


def _walk_past_sessions(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    topic: str,
    records: QuerySet,
    settings: BlockSettings,
    block: _Block,
    now: datetime,
    first: list[MemoryRecord] | None = None,
) -> None:
    """[past_sessions]: the episodes of `records` closest to the topic, recent ones a little ahead."""
    if settings.episodes_limit <= 0 or not settings.names("episode"):
        return
    episodes = records.filter(type="episode")
    page_size = settings.episodes_limit + PAGE_MARGIN

    def episode_score(record: MemoryRecord, relevance: float) -> float:
        age_days = max(0.0, (now - record.created_at).total_seconds() / 86400)
        return relevance * (1 + 0.5 ** (age_days / EPISODE_RECENCY_HALF_LIFE_DAYS))

    hits, hit_records = topic_hits(
        caller=caller, index=index, topic=topic, types=["episode"], limit=page_size * 2, now=now, shared=False, trace=block.search
    )
    candidates = ranked_by_topic(
        section_queryset=episodes, hits=hits, fallback_order=EPISODE_ORDER,
        page_size=page_size, block=block, score=episode_score,
        read=TopicRead(hit_records=hit_records, fallback_first=first) if first is not None else None,
    )
    block.walk(section="past_sessions", candidates=candidates, cap=settings.episodes_limit)


def _walk_person_and_shared(
    *,
    caller: Caller,
    index: KnowledgeIndex,
    topic: str,
    hers: QuerySet | None,
    shared: QuerySet,
    settings: BlockSettings,
    block: _Block,
    now: datetime,
    first: dict,
) -> dict[str, int]:
    """[about_this_person] then [organisation] under one `limit`; answers the
    candidates `limit` left out, per section (only sections that lost any)."""
    section_types, sections = _sections(hers=hers, shared=shared, settings=settings)
    if not sections:
        return {}
    remaining = settings.limit
    page_size = settings.limit + PAGE_MARGIN
    hits = (
        topic_hits(caller=caller, index=index, topic=topic, types=section_types, limit=page_size * 2, now=now, trace=block.search)[0]
        if settings.rank in RANK_SCORES and remaining > 0
        else {}
    )
    for position, (section, queryset) in enumerate(sections):
        if remaining <= 0:
            return _nonzero(_capped_counts(dict(sections[position:])))
        candidates = _section_candidates(
            queryset=queryset, rank=settings.rank, hits=hits, page_size=page_size, block=block, first=first.get(section)
        )
        if section == "about_this_person" and settings.rank not in RANK_SCORES and _names_lessons(section_types):
            candidates = _lessons_closest_first(
                candidates,
                lessons=lambda queryset=queryset: _lessons_ranked(
                    caller=caller, index=index, topic=topic, lessons=queryset.filter(type=LESSON), page_size=page_size, block=block,
                    now=now, first=first.get("lessons"),
                ),
            )
        injected, tried = block.walk(section=section, candidates=candidates, cap=remaining)
        remaining -= injected
        if remaining <= 0:
            counts = _capped_counts(dict(sections[position:]))
            counts[section] = max(0, counts[section] - tried)
            return _nonzero(counts)
    return {}


def _lessons_ranked(
    *, caller: Caller, index: KnowledgeIndex, topic: str, lessons: QuerySet, page_size: int, block: _Block, now: datetime,
    first: list[MemoryRecord] | None,
) -> Iterator[MemoryRecord]:
    """Her lessons, closest to the topic first."""
    hits, hit_records = topic_hits(
        caller=caller, index=index, topic=topic, types=[LESSON], limit=page_size, now=now, shared=False, trace=block.search
    )
    return ranked_by_topic(
        section_queryset=lessons, hits=hits, fallback_order=CONFIDENCE_ORDER, page_size=page_size, block=block,
        score=relevance_score, read=TopicRead(hit_records=hit_records, fallback_first=first) if first is not None else None,
    )


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {name: count for name, count in counts.items() if count}


def _names_lessons(section_types: list[str] | None) -> bool:
    return section_types is None or LESSON in section_types


def _lessons_closest_first(
    candidates: Iterator[MemoryRecord], *, lessons: Callable[[], Iterator[MemoryRecord]]
) -> Iterator[MemoryRecord]:
    """Her records in confidence order, but each place a lesson takes goes to the lesson closest
    to the topic not yet offered (lessons closest to the topic first). The lessons keep
    their places among her other records; only which lesson stands in each changes. The topic
    is searched only when a first lesson comes up: a person without lessons costs nothing more."""
    closest: Iterator[MemoryRecord] | None = None
    offered: set[str] = set()
    for record in candidates:
        if record.type != LESSON:
            yield record
            continue
        closest = closest if closest is not None else lessons()
        for lesson in closest:
            if lesson.id not in offered:
                offered.add(lesson.id)
                yield lesson
                break


def _section_candidates(
    *, queryset: QuerySet, rank: str, hits: dict[str, float], page_size: int, block: _Block, first: list[MemoryRecord] | None = None
) -> Iterator[MemoryRecord]:
    """Confidence order (its first page `first` when read already), or closeness to the topic
    (`relevance`), or both mixed (`blend`)."""
    if rank not in RANK_SCORES:
        return pages(queryset.order_by(*CONFIDENCE_ORDER), page_size=page_size, block=block, first=first)
    return ranked_by_topic(
        section_queryset=queryset, hits=hits, fallback_order=CONFIDENCE_ORDER, page_size=page_size, block=block,
        score=RANK_SCORES[rank],
    )
