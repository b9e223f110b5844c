// An MCP server built with the official TypeScript SDK, over streamable
// HTTP (stateless: one server and transport per request), on 127.0.0.1.
// Prints {"url": "..."} once it listens; runs until killed or until stdin
// closes. Tools: shout {text} (upper-cases it), broken {} (isError).
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function newServer() {
  const server = new McpServer({ name: "ts-test-server", version: "1.0.0" });
  server.registerTool(
    "shout",
    { description: "Upper-case the text.", inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
    async ({ text }) => ({ content: [{ type: "text", text: text.toUpperCase() }] }),
  );
  server.registerTool(
    "broken",
    { description: "Always fails.", inputSchema: {} },
    async () => ({ isError: true, content: [{ type: "text", text: "broken on purpose" }] }),
  );
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405).end();
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  const server = newServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
});

httpServer.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${httpServer.address().port}/mcp` }));
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
