// Drives `mcpp-chat serve` with the official MCP TypeScript SDK client: a
// client nobody here wrote. Usage: node ts-client.mjs BIN START_DIR PARTY TOOLS
// (TOOLS: module.yaml's tool names, comma-separated; run it from a folder
// whose node_modules holds @modelcontextprotocol/sdk).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, cwd, party, declared] = process.argv.slice(2);
const fail = (msg) => {
  console.error(`ts-client: FAIL: ${msg}`);
  process.exit(1);
};
if (!bin || !cwd || !party || !declared) fail("usage: node ts-client.mjs BIN START_DIR PARTY TOOLS");

// The SDK passes only a few variables by default; MCPP_CHAT_DB must reach the server.
const transport = new StdioClientTransport({ command: bin, args: ["serve"], cwd, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "mcpp-chat-e2e", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
const want = declared.split(",").sort();
if (names.slice().sort().join(",") !== want.join(",")) fail(`want the ${want.length} tools of module.yaml (${want.join(", ")}), got ${names.length}: ${names.join(", ")}`);
if (!names.includes("chat_whoami") || names.includes("help")) fail(`tool names: ${names.join(", ")}`);
for (const t of tools) {
  if (t.inputSchema?.type !== "object") fail(`${t.name}: inputSchema type is ${t.inputSchema?.type}`);
  if (!t.description) fail(`${t.name}: no description`);
}

const res = await client.callTool({ name: "chat_whoami", arguments: {} });
if (res.isError) fail(`chat_whoami is an error: ${JSON.stringify(res.content)}`);
if (res.content.length !== 2 || res.content.some((c) => c.type !== "text")) {
  fail(`want two text contents (display, JSON), got ${JSON.stringify(res.content)}`);
}
if (res.structuredContent !== undefined) fail("structuredContent is set; Claude Code would drop the text");
const [display, json] = res.content.map((c) => c.text);
const who = JSON.parse(json);
if (who.me !== party) fail(`started in ${cwd} the server is ${who.me}, want ${party}`);
if (!display.includes(`You are ${party}`)) fail(`display does not name the party:\n${display}`);

const bad = await client.callTool({ name: "chat_say", arguments: {} });
if (!bad.isError || !bad.content[0]?.text) fail(`chat_say without text should be an isError result: ${JSON.stringify(bad)}`);

await client.close();
console.log(`ts-client: ok: ${names.length} tools; chat_whoami from ${cwd} is ${who.me} (display + JSON); a bad call is an isError result`);
