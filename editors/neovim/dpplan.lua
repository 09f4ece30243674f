-- dpplan for Neovim: filetype, and `dpplan lsp` on every .dpplan buffer.
--
-- Install: copy this file to ~/.config/nvim/lua/dpplan.lua and add
--   require("dpplan").setup()
-- to your init.lua (options: { cmd = { "/path/to/dpplan", "lsp" }, docs_base_url = "..." }).
-- Works with Neovim 0.7 and later (tests/lsp/nvim_setup.lua runs this file
-- on the Neovim the test command installs, 0.7.2 on Debian 12): from 0.8
-- through vim.lsp.start, on 0.7 through vim.lsp.start_client, one client
-- per root shared by its buffers. Older versions get an error message.

local M = {}

-- The directory of the nearest .git or Cargo.toml up from `path`.
local function root_of(path)
  if vim.fs and vim.fs.find then
    local found = vim.fs.find({ ".git", "Cargo.toml" }, { upward = true, path = vim.fs.dirname(path) })[1]
    return found and vim.fs.dirname(found) or nil
  end
  local marker = vim.fn.finddir(".git", vim.fn.fnamemodify(path, ":p:h") .. ";")
  if marker == "" then
    marker = vim.fn.findfile("Cargo.toml", vim.fn.fnamemodify(path, ":p:h") .. ";")
  end
  return marker ~= "" and vim.fn.fnamemodify(marker, ":p:h:h") or nil
end

local clients = {} -- root → client id (Neovim 0.7)

local function attach(buf, config)
  if vim.lsp.start then
    return vim.lsp.start(config, { bufnr = buf })
  end
  local id = clients[config.root_dir]
  if not id or vim.lsp.client_is_stopped(id) then
    id = vim.lsp.start_client(config)
    clients[config.root_dir] = id
  end
  if id then
    vim.lsp.buf_attach_client(buf, id)
  end
  return id
end

function M.setup(opts)
  opts = opts or {}
  if vim.fn.has("nvim-0.7") == 0 then
    vim.api.nvim_err_writeln("dpplan.lua needs Neovim 0.7 or later (this is " .. tostring(vim.version and vim.version() or "older") .. ")")
    return
  end
  local group = vim.api.nvim_create_augroup("dpplan", { clear = true })
  -- the filetype: vim.filetype.add is used by Neovim's Lua filetype
  -- detection, which 0.7 runs only with g:do_filetype_lua; the autocommand
  -- works everywhere
  if vim.filetype and vim.filetype.add then
    vim.filetype.add({ extension = { dpplan = "dpplan" } })
  end
  vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = "*.dpplan",
    callback = function(args)
      if vim.bo[args.buf].filetype ~= "dpplan" then
        vim.bo[args.buf].filetype = "dpplan"
      end
    end,
  })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "dpplan",
    callback = function(args)
      vim.bo[args.buf].commentstring = "// %s"
      vim.bo[args.buf].shiftwidth = 2
      vim.bo[args.buf].expandtab = true
      local name = vim.api.nvim_buf_get_name(args.buf)
      attach(args.buf, {
        name = "dpplan",
        cmd = opts.cmd or { "dpplan", "lsp" },
        root_dir = root_of(name) or vim.fn.getcwd(),
        init_options = opts.docs_base_url and { docsBaseUrl = opts.docs_base_url } or nil,
        handlers = opts.handlers,
      })
    end,
  })
end

return M
