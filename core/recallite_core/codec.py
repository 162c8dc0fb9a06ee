from .storage.codec import decode_many, decode_vector, encode_many, encode_vector  # noqa: F401  (moved; this path goes once its importers do)
