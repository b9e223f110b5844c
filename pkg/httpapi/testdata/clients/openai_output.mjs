// Validated output through the official npm `openai` SDK: an output tool
// without and with reflection (created and streamed), structured text
// parsed with zodTextFormat, and responses whose attempts ran out (output
// tool; structured text, parsed and streamed).
// Prints what the SDK returned.
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const model = "test-model";
const parameters = {
  type: "object",
  properties: { score: { type: "integer", minimum: 0 }, summary: { type: "string" } },
  required: ["score", "summary"],
  additionalProperties: false,
};
const report = (extra) => [{ type: "lambent:output", name: "report", description: "Report the assessment.", parameters, ...extra }];
const summary = (r) => ({
  status: r.status,
  text: r.output_text,
  code: r.error?.code ?? null,
  attempts: (r.lambent?.attempts ?? []).map((a) => ({ number: a.number, valid: a.valid, code: a.code ?? "" })),
  items: r.output.map((i) => `${i.type}:${i.name ?? i.role}`),
});
const out = {};

const plain = await client.responses.create({ model, input: "Assess the quarter.", tools: report({}) });
out.plain = summary(plain);

const stream = client.responses.stream({ model, input: "Assess the quarter.", tools: report({ reflection: true }) });
const events = [];
stream.on("event", (e) => events.push(e.type));
const streamed = await stream.finalResponse();
out.streamed = { ...summary(streamed), events };

const Report = z.object({ score: z.number().int().min(0), summary: z.string() });
const parsed = await client.responses.parse({ model, input: "Assess the quarter.", text: { format: zodTextFormat(Report, "report") } });
out.parsed = { ...summary(parsed), parsed: parsed.output_parsed };

const failed = await client.responses.create({ model, input: "Assess the quarter.", tools: report({}), lambent: { max_attempts: 1 } });
out.failed = summary(failed);

// Structured text whose attempts ran out: the last answer is in output.
const once = { model, input: "Assess the quarter.", text: { format: zodTextFormat(Report, "report") }, lambent: { max_attempts: 1 } };
const failedParsed = await client.responses.parse(once);
out.failedParsed = { ...summary(failedParsed), parsed: failedParsed.output_parsed };
out.failedStreamed = summary(await client.responses.stream(once).finalResponse());

console.log(JSON.stringify(out));
