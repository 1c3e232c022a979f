// Drives a team hub (`mcpp-chat hub serve`) with the official MCP
// TypeScript SDK client over streamable HTTP, bearer token in the request
// headers: a client nobody here wrote. Usage:
//   node ts-http-client.mjs URL TOKEN PARTY TOOLS
// URL: the hub's MCP endpoint (http://127.0.0.1:PORT/mcp); TOKEN: one
// issued for PARTY; TOOLS: module.yaml's tool names, comma-separated. Run it
// from a folder whose node_modules holds @modelcontextprotocol/sdk.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, party, declared] = process.argv.slice(2);
const fail = (msg) => {
  console.error(`ts-http-client: FAIL: ${msg}`);
  process.exit(1);
};
if (!url || !token || !party || !declared) fail("usage: node ts-http-client.mjs URL TOKEN PARTY TOOLS");

const connect = async (secret) => {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
  });
  const client = new Client({ name: "mcpp-chat-e2e-http", version: "1.0.0" });
  await client.connect(transport);
  return client;
};

// Both text contents (display, then the result JSON), nothing structured.
const contents = (tool, res) => {
  if (res.isError) fail(`${tool} is an error: ${JSON.stringify(res.content)}`);
  if (res.content.length !== 2 || res.content.some((c) => c.type !== "text")) {
    fail(`${tool}: want two text contents (display, JSON), got ${JSON.stringify(res.content)}`);
  }
  if (res.structuredContent !== undefined) fail(`${tool}: structuredContent is set; Claude Code would drop the text`);
  const [display, json] = res.content.map((c) => c.text);
  return { display, result: JSON.parse(json) };
};

// A token the hub never issued: the handshake itself is refused.
let refused = false;
try {
  const intruder = await connect("mcc_000000000000_not-a-token");
  await intruder.close();
} catch (err) {
  refused = /401/.test(String(err?.code ?? "") + String(err?.message ?? err));
  if (!refused) fail(`a wrong token was refused, but not with 401: ${err}`);
}
if (!refused) fail("a wrong token connected");

const client = await connect(token);
const version = client.getServerVersion();
if (version?.name !== "mcpp-chat") fail(`the server calls itself ${JSON.stringify(version)}`);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
const want = declared.split(",").sort();
if (names.slice().sort().join(",") !== want.join(",")) fail(`want the ${want.length} tools of module.yaml (${want.join(", ")}), got ${names.length}: ${names.join(", ")}`);
for (const t of tools) {
  if (t.inputSchema?.type !== "object") fail(`${t.name}: inputSchema type is ${t.inputSchema?.type}`);
  if (!t.description) fail(`${t.name}: no description`);
}

// chat_whoami: the token's party, whatever folder the client is in.
const who = contents("chat_whoami", await client.callTool({ name: "chat_whoami", arguments: {} }));
if (who.result.me !== party) fail(`chat_whoami says ${who.result.me}, want the token's party ${party}`);
if (!who.display.includes(`You are ${party}`)) fail(`the display does not name the party:\n${who.display}`);

// chat_say in a channel of its own, then read back as the token's party.
const channel = `ts-http-${process.pid}`;
contents("chat_channel_new", await client.callTool({ name: "chat_channel_new", arguments: { name: channel } }));
const text = `hello from the TypeScript SDK over HTTP (${process.pid})`;
const said = contents("chat_say", await client.callTool({ name: "chat_say", arguments: { text, channel } }));
if (said.result.channel !== channel || !Number.isInteger(said.result.seq)) fail(`chat_say's result: ${JSON.stringify(said.result)}`);
// One's own messages are not unread: read from the start.
const read = contents("chat_read", await client.callTool({ name: "chat_read", arguments: { channel, since: 0 } }));
const mine = (read.result.messages || []).find((m) => m.seq === said.result.seq);
if (!mine) fail(`chat_read in ${channel} does not hold the message said: ${JSON.stringify(read.result)}`);
if (mine.body !== text) fail(`message #${mine.seq} reads ${JSON.stringify(mine.body)}, want ${JSON.stringify(text)}`);
if (mine.from !== party) fail(`the message said is from ${mine.from}, want the token's party ${party}`);

// An argument that would choose the author is refused before anything runs.
let spoofRefused = false;
try {
  const res = await client.callTool({ name: "chat_say", arguments: { text: "spoofed", channel, party: "someone-else" } });
  spoofRefused = res.isError === true;
} catch (err) {
  spoofRefused = /403/.test(String(err?.code ?? "") + String(err?.message ?? err));
  if (!spoofRefused) fail(`a call naming another author failed, but not with 403: ${err}`);
}
if (!spoofRefused) fail("a call naming another author (party: someone-else) was accepted");

// A bad call is an isError result, not a transport error.
const bad = await client.callTool({ name: "chat_say", arguments: {} });
if (!bad.isError || !bad.content[0]?.text) fail(`chat_say without text should be an isError result: ${JSON.stringify(bad)}`);

await client.close();
console.log(`ts-http-client: ok: a wrong token is refused (401); ${names.length} tools; chat_whoami is ${who.result.me}; chat_say in ${channel} is ${mine.from}'s (display + JSON); naming another author is refused; a bad call is an isError result`);
