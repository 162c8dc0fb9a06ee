"""Conversation memory: episodes and turns with provenance, sentence chunks, keyword windows of neighbouring turns, session context and citations. Imports storage, index, embedding, text."""
