"""Search: full-text queries (`text`), times named in a question (`when`), and the
ranking that fuses full text with embeddings (`ranking`). `memory.selectors.record_search`
puts them together."""
from memory.search.text import query_terms, query_words, terms_query, text_query, tsquery_text

__all__ = ["query_terms", "query_words", "terms_query", "text_query", "tsquery_text"]
