import type { ServerResponse } from 'node:http';

// The Gemini API (`generateContent`, `streamGenerateContent?alt=sse`) for the scripted model server
// (model-server.ts): what Gemini CLI calls, at GOOGLE_GEMINI_BASE_URL. Reading a request into the rules' inputs,
// and writing their reply in its wire format.

interface Part {
  text?: string;
  thought?: boolean;
  functionCall?: { name?: string; args?: unknown };
  functionResponse?: { name?: string; response?: unknown };
}
interface Content {
  role?: string;
  parts?: Part[];
}

/** The names of the functions a request offers (`tools[].functionDeclarations[].name`). */
export function geminiToolNames(body: Record<string, unknown>): string[] {
  const tools = (Array.isArray(body.tools) ? body.tools : []) as { functionDeclarations?: { name?: string }[] }[];
  return tools.flatMap((t) => (t.functionDeclarations ?? []).flatMap((f) => (f.name ? [f.name] : [])));
}

/** Whether a path is one of the Gemini API's generation methods (`/v1beta/models/{model}:…`). */
export function isGeminiPath(path: string): boolean {
  return /\/models\/[^/]+:(stream)?[gG]enerateContent$/.test(path);
}

/** The text a function's result carries: Gemini CLI sends `{output: "…"}` (or `{error: "…"}`). */
function responseText(response: unknown): string {
  if (typeof response === 'string') return response;
  const record = (response ?? {}) as { output?: unknown; error?: unknown; llmContent?: unknown };
  for (const value of [record.output, record.error, record.llmContent]) if (typeof value === 'string') return value;
  return JSON.stringify(response ?? '');
}

/**
 * The newest content decides: a function's result (with the call it answers: its tool and shell command), or the
 * user's own text — the last text part that is not the CLI's context in angle brackets (`<session_context>` comes
 * first).
 */
export function readGemini(
  body: Record<string, unknown>,
  isPeopleText: (text: string) => boolean,
): { userText?: string; toolResult?: string; toolName?: string; toolCommand?: string } {
  const contents = (body.contents ?? []) as Content[];
  const last = contents.at(-1);
  if (!last || last.role !== 'user') return {};
  const parts = last.parts ?? [];
  const result = parts.find((p) => p.functionResponse !== undefined);
  if (result) {
    const name = result.functionResponse!.name;
    const call = contents
      .flatMap((c) => (c.role === 'model' ? (c.parts ?? []) : []))
      .findLast((p) => p.functionCall !== undefined && p.functionCall.name === name)?.functionCall;
    const command = (call?.args as { command?: unknown } | undefined)?.command;
    return {
      toolResult: responseText(result.functionResponse!.response),
      ...(name ? { toolName: name } : {}),
      ...(typeof command === 'string' ? { toolCommand: command } : {}),
    };
  }
  const texts = parts.flatMap((p) => (typeof p.text === 'string' && !p.thought ? [p.text] : []));
  return { userText: texts.filter(isPeopleText).at(-1) };
}

/**
 * A request for structured output (`generationConfig.responseJsonSchema`): Gemini CLI's own helpers (its model
 * router, the next-speaker check) ask for JSON. Answered with a value of the schema's shape — a number of 1
 * (the router's complexity score must be at least 1), an enum's first value, "scripted" for text.
 */
export function schemaOf(body: Record<string, unknown>): unknown {
  const config = (body.generationConfig ?? {}) as { responseJsonSchema?: unknown; responseSchema?: unknown };
  return config.responseJsonSchema ?? config.responseSchema;
}

export function valueOf(schema: unknown): unknown {
  const s = (schema ?? {}) as {
    type?: string | string[];
    enum?: unknown[];
    properties?: Record<string, unknown>;
    items?: unknown;
  };
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const type = (Array.isArray(s.type) ? s.type[0] : s.type)?.toLowerCase();
  if (type === 'object' || s.properties) {
    return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, valueOf(v)]));
  }
  if (type === 'array') return [];
  if (type === 'number' || type === 'integer') return 1;
  if (type === 'boolean') return false;
  return 'scripted';
}

/** One response object of the API: the parts, and (on the last) why it finished and the tokens it used. */
function candidateChunk(parts: Part[], finished: boolean, model: string): Record<string, unknown> {
  return {
    candidates: [{ content: { role: 'model', parts }, index: 0, ...(finished ? { finishReason: 'STOP' } : {}) }],
    ...(finished ? { usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 17 } } : {}),
    modelVersion: model,
  };
}

/** The model named in the path (`/v1beta/models/gemini-2.5-pro:streamGenerateContent`). */
function modelOf(path: string): string {
  return /\/models\/([^/:]+):/.exec(path)?.[1] ?? 'scripted';
}

/**
 * Writes a reply: text (in `pieces`, one chunk each, `pause` between them when slow) or a function call; as
 * Server-Sent Events for `streamGenerateContent`, as one JSON object for `generateContent`.
 */
export async function writeGemini(
  res: ServerResponse,
  path: string,
  reply: { text?: string; tool?: { name: string; input: Record<string, unknown> }; json?: unknown },
  pieces: string[],
  pause: () => Promise<void>,
): Promise<void> {
  const model = modelOf(path);
  const parts: Part[][] = reply.tool
    ? [[{ functionCall: { name: reply.tool.name, args: reply.tool.input } }]]
    : reply.json !== undefined
      ? [[{ text: JSON.stringify(reply.json) }]]
      : pieces.map((text) => [{ text }]);
  if (!path.includes(':streamGenerateContent')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(candidateChunk(parts.flat(), true, model)));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [i, chunk] of parts.entries()) {
    if (res.destroyed) return;
    const finished = i === parts.length - 1;
    res.write(`data: ${JSON.stringify(candidateChunk(chunk, finished, model))}\r\n\r\n`);
    if (!finished) await pause();
  }
  res.end();
}

/** The API's error object. */
export function geminiError(status: number, message: string): Record<string, unknown> {
  const state = status === 429 ? 'RESOURCE_EXHAUSTED' : status === 503 ? 'UNAVAILABLE' : 'INTERNAL';
  return { error: { code: status, message, status: state } };
}
