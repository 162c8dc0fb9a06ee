from .storage.order import top_order  # noqa: F401  (moved; this path goes once its importers do)
from .storage.sqlite.keyword_mirror import MAX_CACHED_POSTINGS, KeywordIndex, KeywordIndexes, StaleIndex, Tokenizer, weighted_frequency  # noqa: F401
