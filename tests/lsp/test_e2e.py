"""End-to-end test of `dpplan lsp` driven by an independent LSP client
(pytest-lsp / pygls), over the real binary's stdio.

Run through tests/lsp/run-e2e.sh, which installs the client and builds the
binary. DPPLAN_BIN points at the `dpplan` executable.
"""

import asyncio
import json
import os
import pathlib
import subprocess

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
DPPLAN = os.environ.get("DPPLAN_BIN", str(ROOT / "target" / "debug" / "dpplan"))
EXAMPLE = (ROOT / "examples" / "web-analytics" / "web-analytics.dpplan").read_text()
CONTRIBUTION = """    contribution {
      rows_per_unit 5 // at most 5 random visits per user are kept
      groups_per_unit 3 // touching at most 3 pages
    }
"""
# Emoji and CJK before the query name, CRLF line endings, and no
# contribution bound (DP001).
TEXT = (
    EXAMPLE.replace(CONTRIBUTION, "")
    .replace("  query daily_visits {", "  /* 日本語 😀 */ query daily_visits {")
    .replace("\n", "\r\n")
)
URI = (ROOT / "tests" / "lsp" / "e2e.dpplan").as_uri()


def utf16_position(text: str, offset: int) -> types.Position:
    """The LSP position (UTF-16) of a character offset."""
    before = text[:offset]
    line = before.count("\n")
    start = before.rfind("\n") + 1
    character = len(text[start:offset].encode("utf-16-le")) // 2
    return types.Position(line=line, character=character)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[DPPLAN, "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=pytest_lsp.client_capabilities("visual-studio-code"))
    )
    yield
    await lsp_client.shutdown_session()


async def diagnostics_until(client: LanguageClient, predicate, timeout: float = 20.0):
    """Waits until the document's latest published diagnostics satisfy
    `predicate` (the server publishes twice per version: what needs no
    accounting first, then the full set). Fails after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if URI in client.diagnostics and predicate(list(client.diagnostics[URI])):
            return client.diagnostics[URI]
        if loop.time() > deadline:
            raise AssertionError(f"diagnostics never satisfied the test: {client.diagnostics.get(URI)}")
        try:
            await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 0.2)
        except asyncio.TimeoutError:
            pass


async def open_plan(client: LanguageClient):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=URI, language_id="dpplan", version=1, text=TEXT)
        )
    )
    return await diagnostics_until(client, lambda d: any(x.code == "DP001" for x in d))


@pytest.mark.asyncio
async def test_diagnostics_arrive_and_match_the_cli(client: LanguageClient):
    diagnostics = await open_plan(client)
    # `dpplan check --format json` on the same text is the reference.
    path = ROOT / "target" / "e2e-plan.dpplan"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(TEXT.encode())
    out = subprocess.run([DPPLAN, "check", "--format", "json", str(path)], capture_output=True, text=True)
    report = json.loads(out.stdout)
    cli_codes = [d["code"] for f in report["files"] for d in f["diagnostics"]] if "files" in report else None
    codes = [d.code for d in diagnostics]
    assert "DP001" in codes, codes
    if cli_codes is not None:
        assert codes == cli_codes
    dp001 = next(d for d in diagnostics if d.code == "DP001")
    assert dp001.severity == types.DiagnosticSeverity.Error
    # no documentation base configured: no made-up link; the hover has the doc
    assert dp001.code_description is None
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=types.Position(line=dp001.range.start.line, character=dp001.range.start.character + 1),
        )
    )
    assert "**DP001 unbounded-contribution**" in hover.contents.value
    # Its range is the dataset's name, in UTF-16 positions.
    name = TEXT.index("dataset visits") + len("dataset ")
    assert dp001.range.start == utf16_position(TEXT, name)
    assert dp001.related_information[0].message == "user-level unit declared here"


@pytest.mark.asyncio
async def test_hover_after_emoji_and_cjk(client: LanguageClient):
    await open_plan(client)
    # Fix the plan with an incremental edit first: re-insert the bound.
    at = TEXT.index("  }\r\n\r\n  /* 日本語")
    pos = utf16_position(TEXT, at)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=pos, end=pos),
                    text="    contribution { rows_per_unit 5 groups_per_unit 3 }\r\n",
                )
            ],
        )
    )
    assert list(await diagnostics_until(client, lambda d: d == [])) == []
    text = TEXT[:at] + "    contribution { rows_per_unit 5 groups_per_unit 3 }\r\n" + TEXT[at:]
    name = text.index("daily_visits {")
    p = utf16_position(text, name + 4)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=URI), position=p)
    )
    value = hover.contents.value
    assert "**query `daily_visits`**" in value
    assert "365 releases" in value
    assert "L1 = 5" in value
    assert "scale b = 250" in value
    assert "% of the plan's privacy loss (its share of ρ)" in value
    assert hover.range.start == utf16_position(text, name)
    assert hover.range.end == utf16_position(text, name + len("daily_visits"))
    # Budget hover: every accountant.
    b = utf16_position(text, text.index("budget epsilon") + 2)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=URI), position=b)
    )
    assert "Every accountant" in hover.contents.value


@pytest.mark.asyncio
async def test_completion_and_formatting(client: LanguageClient):
    await open_plan(client)
    at = TEXT.index("mean(visits.") + len("mean(visits.")
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI), position=utf16_position(TEXT, at)
        )
    )
    items = items.items if hasattr(items, "items") else items
    assert sorted(i.label for i in items) == ["page", "seconds"]
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            options=types.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert len(edits) == 1 and "\r\n    column page : category" in edits[0].new_text
