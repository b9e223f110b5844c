// capture_client_bodies.mjs prints, as a JSON array of {name, body}, the
// bodies that LangChain, the AI SDK and the Agents SDK POST to /v1/responses
// in common flows. It runs a throwaway server on 127.0.0.1 that answers like
// the Responses API: a function_call to the first function tool when the
// last input item is not a function_call_output, else a text message (with
// a reasoning item first when the request asks for reasoning).
//
// client_bodies.json was captured with ai 7.0.173, @ai-sdk/openai 4.0.118,
// @openai/agents 0.20.0, @langchain/openai 1.6.0, @langchain/core 1.4.0,
// openai 7.57.0 and zod 4.6.7. To regenerate it, run the script where those
// packages are installed (node_modules next to it or above):
//
//	node capture_client_bodies.mjs > client_bodies.json
import http from 'node:http';

const bodies = [];
let label = '';
let seq = 0;

function responseFor(req) {
  const id = `resp_cap${++seq}`;
  const input = Array.isArray(req.input) ? req.input : [];
  const last = input[input.length - 1];
  const fn = (req.tools || []).find((t) => t.type === 'function');
  const out = [];
  if (req.reasoning) {
    const rs = { type: 'reasoning', id: `rs_cap${seq}`, summary: [{ type: 'summary_text', text: 'Thinking it over.' }] };
    if ((req.include || []).includes('reasoning.encrypted_content')) rs.encrypted_content = 'gAAAAABoCapturedOpaqueBlob==';
    out.push(rs);
  }
  if (fn && !(last && last.type === 'function_call_output')) {
    out.push({ type: 'function_call', id: `fc_cap${seq}`, call_id: `call_cap${seq}`, name: fn.name, arguments: '{"city":"Rome"}', status: 'completed' });
  } else {
    out.push({ type: 'message', id: `msg_cap${seq}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: ['json_schema', 'json_object'].includes(req.text?.format?.type) ? '{"answer":"Sunny."}' : 'Sunny.', annotations: [], logprobs: [] }] });
  }
  return {
    id, object: 'response', created_at: 1700000000, status: 'completed', completed_at: 1700000001, error: null, incomplete_details: null,
    instructions: req.instructions ?? null, max_output_tokens: null, max_tool_calls: null, model: req.model || 'm', output: out,
    parallel_tool_calls: true, previous_response_id: req.previous_response_id ?? null, reasoning: { effort: null, summary: null },
    store: true, temperature: 1, text: { format: { type: 'text' } }, tool_choice: 'auto', tools: req.tools || [], top_p: 1,
    truncation: 'disabled', usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 7 },
    user: null, metadata: {},
  };
}

function sse(res, resp) {
  let n = 0;
  const send = (type, o) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...o })}\n\n`);
  const pending = { ...resp, status: 'in_progress', output: [], usage: null };
  send('response.created', { response: pending });
  send('response.in_progress', { response: pending });
  resp.output.forEach((item, i) => {
    if (item.type === 'reasoning') {
      send('response.output_item.added', { output_index: i, item: { ...item, summary: [] } });
    } else if (item.type === 'message') {
      send('response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', content: [] } });
      send('response.content_part.added', { item_id: item.id, output_index: i, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
      send('response.output_text.delta', { item_id: item.id, output_index: i, content_index: 0, delta: item.content[0].text, logprobs: [] });
      send('response.output_text.done', { item_id: item.id, output_index: i, content_index: 0, text: item.content[0].text, logprobs: [] });
      send('response.content_part.done', { item_id: item.id, output_index: i, content_index: 0, part: item.content[0] });
    } else {
      send('response.output_item.added', { output_index: i, item: { ...item, status: 'in_progress', arguments: '' } });
      send('response.function_call_arguments.delta', { item_id: item.id, output_index: i, delta: item.arguments });
      send('response.function_call_arguments.done', { item_id: item.id, output_index: i, name: item.name, arguments: item.arguments });
    }
    send('response.output_item.done', { output_index: i, item });
  });
  send('response.completed', { response: resp });
  res.end();
}

const server = http.createServer((req, res) => {
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => {
    const body = JSON.parse(data);
    const step = bodies.filter((b) => b.name.split('#')[0] === label).length;
    bodies.push({ name: step ? `${label}#${step + 1}` : label, body });
    const resp = responseFor(body);
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      sse(res, resp);
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(resp));
    }
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
process.env.OPENAI_API_KEY = 'test';
process.env.OPENAI_AGENTS_DISABLE_TRACING = '1';

const { z } = await import('zod');

// LangChain
{
  const { ChatOpenAI } = await import('@langchain/openai');
  const { HumanMessage, AIMessage, SystemMessage, ToolMessage } = await import('@langchain/core/messages');
  const { tool } = await import('@langchain/core/tools');
  const llm = new ChatOpenAI({ model: 'gpt-4.1-mini', useResponsesApi: true, apiKey: 'test', configuration: { baseURL }, maxRetries: 0 });
  label = 'langchain_invoke';
  await llm.invoke('Say hi');
  label = 'langchain_stream';
  for await (const _ of await llm.stream('Say hi')) { /* drain */ }
  const weather = tool(async ({ city }) => `Sunny in ${city}`, { name: 'get_weather', description: 'Weather for a city', schema: z.object({ city: z.string() }) });
  const withTools = llm.bindTools([weather]);
  label = 'langchain_bindtools';
  const ai = await withTools.invoke([new SystemMessage('You are terse.'), new HumanMessage('Weather in Rome?')]);
  label = 'langchain_bindtools_history';
  await withTools.invoke([new SystemMessage('You are terse.'), new HumanMessage('Weather in Rome?'), ai,
    new ToolMessage({ tool_call_id: ai.tool_calls[0].id, content: 'Sunny in Rome' })]);
  label = 'langchain_history';
  await llm.invoke([new HumanMessage('Hi'), new AIMessage('Hello!'), new HumanMessage('How are you?')]);
  label = 'langchain_reasoning';
  const thinker = new ChatOpenAI({ model: 'o4-mini', useResponsesApi: true, apiKey: 'test', configuration: { baseURL }, maxRetries: 0,
    reasoning: { effort: 'low', summary: 'auto' }, zdrEnabled: true });
  const thought = await thinker.invoke('Think, then say hi');
  label = 'langchain_reasoning_history';
  await thinker.invoke([new HumanMessage('Think, then say hi'), thought, new HumanMessage('Again')]);
  label = 'langchain_structured';
  await llm.withStructuredOutput(z.object({ answer: z.string() }), { name: 'Answer', method: 'jsonSchema' }).invoke('Answer me');
  label = 'langchain_options';
  const tuned = new ChatOpenAI({ model: 'gpt-4.1-mini', useResponsesApi: true, apiKey: 'test', configuration: { baseURL }, maxRetries: 0,
    temperature: 0.3, topP: 0.9, maxTokens: 100, streamUsage: true });
  await tuned.invoke('Say hi');
}

// AI SDK
{
  const { generateText, streamText, tool, stepCountIs } = await import('ai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const openai = createOpenAI({ baseURL, apiKey: 'test' });
  const model = openai.responses('gpt-4.1-mini');
  label = 'aisdk_generate';
  const first = await generateText({ model, prompt: 'Say hi' });
  label = 'aisdk_stream';
  const s = streamText({ model, prompt: 'Say hi', temperature: 0.5, maxOutputTokens: 64 });
  for await (const _ of s.textStream) { /* drain */ }
  label = 'aisdk_tools';
  const weather = tool({ description: 'Weather for a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `Sunny in ${city}` });
  const multi = await generateText({ model, system: 'You are terse.', prompt: 'Weather in Rome?', tools: { get_weather: weather }, stopWhen: stepCountIs(3) });
  label = 'aisdk_history_stateless';
  await generateText({ model, providerOptions: { openai: { store: false } }, tools: { get_weather: weather },
    messages: [{ role: 'user', content: 'Weather in Rome?' }, ...multi.response.messages, { role: 'user', content: 'And tomorrow?' }] });
  label = 'aisdk_history_item_reference';
  await generateText({ model, messages: [{ role: 'user', content: 'Say hi' }, ...first.response.messages, { role: 'user', content: 'Again' }] });
  label = 'aisdk_reasoning';
  const thinker = openai.responses('gpt-5-mini');
  const reasoned = await generateText({ model: thinker, prompt: 'Weather in Rome?', tools: { get_weather: weather }, stopWhen: stepCountIs(3),
    providerOptions: { openai: { reasoningEffort: 'low', reasoningSummary: 'auto', store: false, include: ['reasoning.encrypted_content'], textVerbosity: 'low', parallelToolCalls: false, user: 'u1', metadata: { k: 'v' }, serviceTier: 'auto', promptCacheKey: 'pk', safetyIdentifier: 'sid' } } });
  label = 'aisdk_reasoning_history';
  await generateText({ model: thinker, providerOptions: { openai: { reasoningEffort: 'low', store: false, include: ['reasoning.encrypted_content'] } },
    messages: [{ role: 'user', content: 'Weather in Rome?' }, ...reasoned.response.messages, { role: 'user', content: 'Thanks' }] });
  label = 'aisdk_structured';
  const { Output } = await import('ai');
  await generateText({ model, prompt: 'Answer me', output: Output.object({ schema: z.object({ answer: z.string() }) }) });
  label = 'aisdk_image';
  await generateText({ model, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' },
    { type: 'image', image: new URL('https://example.com/cat.png') }] }] });
}

// Agents SDK
{
  const agents = await import('@openai/agents');
  const OpenAI = (await import('openai')).default;
  agents.setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: 'test', maxRetries: 0 }));
  agents.setOpenAIAPI('responses');
  if (agents.setTracingDisabled) agents.setTracingDisabled(true);
  const plain = new agents.Agent({ name: 'Assistant', instructions: 'You are terse.', model: 'gpt-4.1-mini' });
  label = 'agents_run';
  const r1 = await agents.run(plain, 'Say hi');
  label = 'agents_streamed';
  const st = await agents.run(plain, 'Say hi', { stream: true });
  for await (const _ of st) { /* drain */ }
  await st.completed;
  label = 'agents_tools';
  const weather = agents.tool({ name: 'get_weather', description: 'Weather for a city', parameters: z.object({ city: z.string() }), execute: async ({ city }) => `Sunny in ${city}` });
  const withTools = new agents.Agent({ name: 'Weather', instructions: 'Use tools.', model: 'gpt-4.1-mini', tools: [weather] });
  const r2 = await agents.run(withTools, 'Weather in Rome?');
  label = 'agents_previous_response_id';
  await agents.run(plain, 'And again?', { previousResponseId: r1.lastResponseId });
  label = 'agents_model_settings';
  const tuned = new agents.Agent({ name: 'Tuned', instructions: 'Be brief.', model: 'gpt-5-mini', tools: [weather],
    modelSettings: { temperature: 0.2, topP: 0.9, maxTokens: 100, parallelToolCalls: false, toolChoice: 'required', truncation: 'auto', store: false,
      reasoning: { effort: 'low', summary: 'auto' }, text: { verbosity: 'low' }, promptCacheRetention: 'in-memory' } });
  await agents.run(tuned, 'Weather in Rome?', { maxTurns: 3 }).catch(() => {});
  label = 'agents_structured';
  const typed = new agents.Agent({ name: 'Typed', instructions: 'Answer.', model: 'gpt-4.1-mini', outputType: z.object({ answer: z.string() }) });
  await agents.run(typed, 'Answer me').catch(() => {});
  label = 'agents_history';
  await agents.run(withTools, [...r2.history, { role: 'user', content: 'And tomorrow?' }]);
}

server.close();
process.stdout.write(JSON.stringify(bodies, null, 1));
