import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseConnection {
  status: number;
  /** The problem body of a non-200 answer. */
  problem?: { detail?: string; title?: string };
  retryAfterMs?: number;
  /** Frames until the stream ends (or the signal aborts). */
  frames?: AsyncGenerator<EventSourceMessage>;
}

/**
 * Opens an SSE stream with `fetchImpl` (the API's stream fetch: bounded to connect, not to run); frames are
 * parsed with eventsource-parser (the parser of the `eventsource` package: line endings, split chunks and
 * comments handled as the standard says).
 */
export async function openSse(
  fetchImpl: typeof fetch,
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<SseConnection> {
  const response = await fetchImpl(url, { headers: { Accept: 'text/event-stream', ...headers }, signal });
  if (response.status !== 200 || !response.body) {
    let problem: SseConnection['problem'];
    try {
      problem = (await response.json()) as SseConnection['problem'];
    } catch {
      problem = undefined;
    }
    const retryAfter = Number(response.headers.get('retry-after'));
    return {
      status: response.status,
      problem,
      retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 120) * 1000 : undefined,
    };
  }
  return { status: 200, frames: frames(response.body) };
}

async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length) yield queue.shift()!;
  }
}
