"""The local memory browser: ``recallite-mcp ui``.

A small Starlette app, rendered on the server with no JavaScript, that shows and corrects one
store: Memories (search and filters), Curate (edits and bulk changes), Learning (the retrieval
log, outcomes, success over time, contradictions) and Health. Modules, one job each:

    serve     opens the store, prints the URL with its one-time token, runs uvicorn
    app       routes, request parsing, engine errors -> the page that shows them
    guard     who may talk to it: the token/cookie, Host and Origin checks, security headers
    markup    escaping by default (``h``), the page layout, small shared widgets
    filters   the scope/type/status/source/tag filters, read from a request and shown as a form
    wording   the engine's messages in the browser's terms (its pages, buttons, the CLI), not Python calls
    memories, detail, curate, learning, health   the pages (plain functions of a request)

It may import recallite_core (the public ``Recallite`` API only, reads through
``Recallite.inspection()``), starlette and uvicorn; nothing else of recallite_mcp but settings
and server.open_memory.
"""
