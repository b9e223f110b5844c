// Drives the gateway with the Vercel AI SDK (streamText), the OpenAI Agents
// SDK (run with stream: true) and LangChain (ChatOpenAI, useResponsesApi,
// stream) on a streamed create the model provider refuses. Prints one JSON
// object: per client, the text streamed and what the error it surfaced
// says (its name, HTTP status, whether it is retryable).
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { streamText } from "ai";
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { ChatOpenAI } from "@langchain/openai";

const baseURL = process.argv[2];
const describe = (e) => ({
  name: e?.name ?? null,
  status: e?.statusCode ?? e?.status ?? e?.state?.error?.status ?? null,
  retryable: e?.isRetryable ?? null,
  message: String(e?.message ?? e),
});
const out = {};

{
  const errors = [];
  const s = streamText({ model: createOpenAI({ baseURL, apiKey: "test" }).responses("test-model"), prompt: "hi", maxRetries: 0, onError: ({ error }) => errors.push(describe(error)) });
  let text = "";
  for await (const d of s.textStream) text += d;
  out.aiSdk = { text, errors };
}

{
  setTracingDisabled(true);
  setOpenAIAPI("responses");
  setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: "test", maxRetries: 0 }));
  const agent = new Agent({ name: "plain", model: "test-model" });
  let text = "";
  const errors = [];
  try {
    const rs = await run(agent, "hi", { stream: true });
    for await (const d of rs.toTextStream()) text += d;
    await rs.completed;
    if (rs.error) throw rs.error;
  } catch (e) {
    errors.push(describe(e));
  }
  out.agents = { text, errors };
}

{
  const llm = new ChatOpenAI({ model: "test-model", apiKey: "test", configuration: { baseURL }, useResponsesApi: true, maxRetries: 0 });
  let text = "";
  const errors = [];
  try {
    for await (const c of await llm.stream("hi")) text += typeof c.content === "string" ? c.content : "";
  } catch (e) {
    errors.push(describe(e));
  }
  out.langchain = { text, errors };
}

console.log(JSON.stringify(out));
