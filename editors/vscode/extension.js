// The dpplan extension: starts `dpplan lsp` and connects VS Code to it.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function createClient() {
  const config = vscode.workspace.getConfiguration("dpplan");
  const command = config.get("server.path") || "dpplan";
  const serverOptions = {
    run: { command, args: ["lsp"], transport: TransportKind.stdio },
    debug: { command, args: ["lsp"], transport: TransportKind.stdio },
  };
  const initializationOptions = {};
  const docsBaseUrl = config.get("docsBaseUrl");
  if (docsBaseUrl) initializationOptions.docsBaseUrl = docsBaseUrl;
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "dpplan" }, { scheme: "untitled", language: "dpplan" }],
    initializationOptions,
    // the server re-analyses open plans when their policy file changes
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/dpplan.toml") },
  };
  return new LanguageClient("dpplan", "dpplan language server", serverOptions, clientOptions);
}

async function activate(context) {
  client = createClient();
  context.subscriptions.push(
    vscode.commands.registerCommand("dpplan.restartServer", async () => {
      if (client) await client.stop();
      client = createClient();
      await client.start();
    })
  );
  await client.start();
}

async function deactivate() {
  if (client) await client.stop();
}

module.exports = { activate, deactivate };
