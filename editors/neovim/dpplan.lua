-- dpplan for Neovim: filetype, and `dpplan lsp` on every .dpplan buffer.
--
-- Install: copy this file to ~/.config/nvim/lua/dpplan.lua and add
--   require("dpplan").setup()
-- to your init.lua (options: { cmd = { "/path/to/dpplan", "lsp" }, docs_base_url = "..." }).
-- Works with Neovim 0.8+ (vim.lsp.start); see README.md for 0.7 and nvim-lspconfig.

local M = {}

function M.setup(opts)
  opts = opts or {}
  vim.filetype.add({ extension = { dpplan = "dpplan" } })
  local group = vim.api.nvim_create_augroup("dpplan", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "dpplan",
    callback = function(args)
      vim.bo[args.buf].commentstring = "// %s"
      vim.bo[args.buf].shiftwidth = 2
      vim.bo[args.buf].expandtab = true
      local root = vim.fs and vim.fs.dirname(vim.fs.find({ ".git", "Cargo.toml" }, { upward = true, path = vim.api.nvim_buf_get_name(args.buf) })[1])
      vim.lsp.start({
        name = "dpplan",
        cmd = opts.cmd or { "dpplan", "lsp" },
        root_dir = root or vim.fn.getcwd(),
        init_options = opts.docs_base_url and { docsBaseUrl = opts.docs_base_url } or nil,
      })
    end,
  })
end

return M
