"""Calling tools in tests: a result's structured content, or the text of the expected tool error."""


async def call(client, name, **args):
    res = await client.call_tool(name, args)
    assert not res.is_error, res.content[0].text
    return res.structured_content


async def error_text(client, name, **args):
    res = await client.call_tool(name, args)
    assert res.is_error, res.structured_content
    return res.content[0].text
