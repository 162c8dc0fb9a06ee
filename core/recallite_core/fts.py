from .storage.fts import STOPWORDS, fts_query, query_terms  # noqa: F401  (moved; this path goes once its importers do)
