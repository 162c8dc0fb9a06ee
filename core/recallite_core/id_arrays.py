from .storage.id_arrays import MAX_DENSE_ID, MAX_SPARSENESS, IdArray  # noqa: F401  (moved; this path goes once its importers do)
