-- The shipped editors/neovim/dpplan.lua, as a user installs it, on the
-- Neovim the test command installs (0.7.2 on Debian 12): setup(), then a
-- plan opened from disk gets the filetype and a dpplan language server,
-- whose diagnostics reach vim.diagnostic; a second plan of the same root
-- shares that server.
--   DPPLAN_BIN=target/debug/dpplan nvim --headless -u NONE -c "luafile tests/lsp/nvim_setup.lua"
-- Exits 0 when all of this holds, 1 otherwise.

local bin = os.getenv("DPPLAN_BIN") or "target/debug/dpplan"
local root = vim.fn.getcwd()
package.path = root .. "/editors/neovim/?.lua;" .. package.path

local function fail(msg)
  io.stderr:write("nvim setup: FAIL: " .. msg .. "\n")
  vim.cmd("cquit 1")
end

-- a plan with an error, in a directory of its own with a .git marker
local dir = vim.fn.tempname()
vim.fn.mkdir(dir .. "/.git", "p")
local text = vim.fn.readfile(root .. "/examples/web-analytics/web-analytics.dpplan")
local broken = {}
local skipping = false
for _, l in ipairs(text) do
  if l:match("^%s+contribution {") then skipping = true end
  if not skipping then table.insert(broken, l) end
  if skipping and l:match("^%s+}%s*$") then skipping = false end
end
vim.fn.writefile(broken, dir .. "/a.dpplan")
vim.fn.writefile(text, dir .. "/b.dpplan")

require("dpplan").setup({ cmd = { bin, "lsp" } })
vim.cmd("edit " .. dir .. "/a.dpplan")
local a = vim.api.nvim_get_current_buf()
if vim.bo[a].filetype ~= "dpplan" then fail("filetype is '" .. vim.bo[a].filetype .. "'") end
if vim.bo[a].commentstring ~= "// %s" then fail("commentstring " .. vim.bo[a].commentstring) end

local function codes(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do table.insert(out, d.code) end
  return out
end
if not vim.wait(20000, function() return vim.tbl_contains(codes(a), "DP001") end, 50) then
  fail("no DP001 in vim.diagnostic: " .. vim.inspect(codes(a)))
end

vim.cmd("edit " .. dir .. "/b.dpplan")
local b = vim.api.nvim_get_current_buf()
local function ids(buf)
  local out = {}
  for id, _ in pairs(vim.lsp.buf_get_clients(buf)) do table.insert(out, id) end
  return out
end
if not vim.wait(10000, function() return #ids(b) == 1 end, 50) then fail("b.dpplan has no client") end
if ids(a)[1] ~= ids(b)[1] then fail("two servers for one root: " .. vim.inspect({ ids(a), ids(b) })) end
io.stdout:write("nvim setup: ok (Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. "." .. tostring(vim.version().patch) .. ", dpplan.lua: filetype, server, diagnostics, one server per root)\n")
vim.lsp.stop_client(ids(a))
vim.cmd("qall!")
