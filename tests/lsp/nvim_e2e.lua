-- Neovim (headless) as an independent LSP client of `dpplan lsp`.
-- Works with Neovim 0.7 (Debian 12) and later:
--   DPPLAN_BIN=target/debug/dpplan nvim --headless -u NONE -c "luafile tests/lsp/nvim_e2e.lua"
-- Exits 0 when diagnostics and hover arrive and are right, 1 otherwise.

local bin = os.getenv("DPPLAN_BIN") or "target/debug/dpplan"
local root = vim.fn.getcwd()
local plan = root .. "/examples/web-analytics/web-analytics.dpplan"

local function fail(msg)
  io.stderr:write("nvim e2e: FAIL: " .. msg .. "\n")
  vim.cmd("cquit 1")
end

vim.cmd("edit " .. plan)
local buf = vim.api.nvim_get_current_buf()
-- Break the plan: remove the contribution bound (DP001).
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local kept = {}
local skipping = false
for _, l in ipairs(lines) do
  if l:match("^%s+contribution {") then skipping = true end
  if not skipping then table.insert(kept, l) end
  if skipping and l:match("^%s+}%s*$") then skipping = false end
end
vim.api.nvim_buf_set_lines(buf, 0, -1, false, kept)

local diagnostics = nil
local client_id = vim.lsp.start_client({
  name = "dpplan",
  cmd = { bin, "lsp" },
  root_dir = root,
  handlers = {
    ["textDocument/publishDiagnostics"] = function(_, result)
      diagnostics = result.diagnostics
    end,
  },
})
if not client_id then fail("could not start " .. bin) end
vim.lsp.buf_attach_client(buf, client_id)

if not vim.wait(20000, function() return diagnostics ~= nil end, 50) then
  fail("no diagnostics")
end
local codes = {}
for _, d in ipairs(diagnostics) do table.insert(codes, d.code) end
if not vim.tbl_contains(codes, "DP001") then fail("expected DP001, got " .. vim.inspect(codes)) end

-- Hover on the query name.
local row
for i, l in ipairs(kept) do
  if l:match("query daily_visits") then row = i - 1 end
end
local col = kept[row + 1]:find("daily_visits") + 2
local client = vim.lsp.get_client_by_id(client_id)
local hover = nil
client.request("textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  position = { line = row, character = col },
}, function(err, result) hover = result or { err = err } end, buf)
if not vim.wait(20000, function() return hover ~= nil end, 50) then fail("no hover") end
-- With DP001 the query has no derivation: the hover says so.
local value = hover.contents and hover.contents.value or vim.inspect(hover)
if not value:find("daily_visits", 1, true) then fail("hover: " .. value) end

-- Undo the damage: the full text again, and the numbers arrive.
vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
diagnostics = nil
if not vim.wait(20000, function() return diagnostics ~= nil and #diagnostics == 0 end, 50) then
  fail("diagnostics did not clear: " .. vim.inspect(diagnostics))
end
for i, l in ipairs(lines) do
  if l:match("query daily_visits") then row = i - 1 end
end
hover = nil
client.request("textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  position = { line = row, character = col },
}, function(err, result) hover = result or { err = err } end, buf)
if not vim.wait(20000, function() return hover ~= nil end, 50) then fail("no hover") end
value = hover.contents and hover.contents.value or vim.inspect(hover)
if not value:find("365 releases", 1, true) or not value:find("L1 = 5", 1, true) then
  fail("hover: " .. value)
end
io.stdout:write("nvim e2e: ok (" .. #codes .. " diagnostics, hover with the derivation)\n")
client.stop()
vim.cmd("qall!")
