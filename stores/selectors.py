"""Scoped access to indexes for who asks (a caller with a key): "missing", "deleted", "another
organisation's" and "not in your policy" are the same 404. The rule itself is
`KnowledgeIndex.objects.for_key`."""
from __future__ import annotations

import copy
import threading

from django.db.models import QuerySet

from core_memory.base.callers import Caller
from core_memory.base.errors import NotFound, PermissionDenied
from stores.models import KnowledgeIndex, MemoryStore

# Indexes (with their stores) remembered per process, by key, configuration version and id.
INDEX_CACHE_SIZE = 4096
_indexes: dict[tuple[str, int, str], KnowledgeIndex] = {}
_indexes_lock = threading.Lock()


def index_list_available(*, caller: Caller) -> QuerySet[KnowledgeIndex]:
    """The indexes available to the caller's key."""
    return KnowledgeIndex.objects.for_key(caller.key)


def index_find_available(*, caller: Caller, index_id) -> KnowledgeIndex | None:
    """The index if it is available to the caller's key, else None; read with its store.

    A key stamped with its organisation's configuration version (by authentication,
    docs/decisions.md "Caches") finds the index and store this process read at that same
    version without asking the database again: deleting the index or changing the store
    raises the version, and the next request reads them afresh.
    """
    key = caller.key
    if not isinstance(index_id, str) or not key.names_index(index_id):
        return None
    config_version = getattr(key, "config_version", None)
    remembered = _indexes.get((key.id, config_version, index_id)) if config_version is not None else None
    if remembered is None:
        remembered = KnowledgeIndex.objects.for_key(key).filter(id=index_id).select_related("store").first()
        if remembered is None:
            return None
        if config_version is not None:
            with _indexes_lock:
                if len(_indexes) >= INDEX_CACHE_SIZE:
                    _indexes.clear()
                _indexes[(key.id, config_version, index_id)] = remembered
    return _request_copy(remembered)


def _request_copy(index: KnowledgeIndex) -> KnowledgeIndex:
    """The request's own index and store objects (it may set attributes on them; their
    JSON sections are shared and only read)."""
    own = copy.copy(index)
    try:
        store = index.store
    except MemoryStore.DoesNotExist:
        return own
    own.store = copy.copy(store)
    return own


def index_get_available(
    *, caller: Caller, index_id: str, param: str | None = None, right: str | None = None
) -> KnowledgeIndex:
    """The index if it is available to the caller's key, else 404.

    With `right` ("read" or "write"), an available index the policy names only for
    the other right is a 403 (read and write are separate rights).
    """
    index = index_find_available(caller=caller, index_id=index_id)
    if index is None:
        raise NotFound("No such index.", param=param)
    policy_right_check(caller=caller, index_id=index.id, right=right, param=param)
    return index


def policy_right_check(*, caller: Caller, index_id: str, right: str | None, param: str | None = None) -> None:
    """403 when the caller's key's policy names the index, but not for `right`."""
    if right == "write" and not caller.may_write(index_id):
        raise PermissionDenied("This key's policy does not allow writing this index.", param=param)
    if right == "read" and not caller.may_read(index_id):
        raise PermissionDenied("This key's policy does not allow reading this index.", param=param)


def store_get(*, index: KnowledgeIndex) -> MemoryStore:
    store, _ = MemoryStore.objects.get_or_create(index=index)
    return store
