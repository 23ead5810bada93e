from core_memory.base.ids import new_id


def test_ids_made_in_a_row_sort_in_creation_order():
    """R-2.4: cursor pagination orders by id, newest first; ids in the same millisecond must sort too."""
    ids = [new_id("mem") for _ in range(2000)]

    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(identifier.startswith("mem_") and len(identifier) == 30 for identifier in ids)
