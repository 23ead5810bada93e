"""Search, in one room. Its entries:

- `record_search` — a question's best records among those the caller's person may see, ranked
  (memory.search.pipeline): what the search route and the search tool (through
  memory.retrieval, which counts the retrieval) and the injection block's sections ask;
- `records_matching` — records holding every word of a text (memory.search.text): the record
  list's `q` and the console's search box.

The rest are the pipeline's parts (scope, decay, candidates, vectors, shared, ranking, rerank,
when, entities, weights), which the pipeline puts together; the block and the lists read their
scope and decay from the same parts."""
from memory.search.pipeline import SEARCH_DEPTH, record_search
from memory.search.scope import SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, SearchFilters
from memory.search.text import query_terms, query_words, records_matching, terms_query, text_query, tsquery_text

__all__ = [
    "SEARCH_DEFAULT_LIMIT",
    "SEARCH_DEPTH",
    "SEARCH_MAX_LIMIT",
    "SearchFilters",
    "query_terms",
    "query_words",
    "record_search",
    "records_matching",
    "terms_query",
    "text_query",
    "tsquery_text",
]
