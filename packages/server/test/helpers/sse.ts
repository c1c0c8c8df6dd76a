/** A server-sent event stream read with fetch, for tests: events one at a time, with timeouts. */
export interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

export interface EventStreamReader {
  response: Response;
  /** The next event (rejects with "no event" after `timeoutMs`). */
  next(timeoutMs?: number): Promise<SseEvent>;
  /** Events until one satisfies `done` (included). */
  until(done: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent[]>;
  /** Resolves once a comment line containing `text` arrived. */
  waitForComment(text: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function openEventStream(url: string, headers: Record<string, string> = {}): Promise<EventStreamReader> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { Accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  if (response.status !== 200 || !response.body) throw new Error(`stream: ${response.status} ${await response.text()}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let buffer = '';
  let wake = null as (() => void) | null;
  let ended = false;
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: SseEvent = { id: null, event: 'message', data: '' };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id:')) event.id = line.slice(3).trim();
            else if (line.startsWith('event:')) event.event = line.slice(6).trim();
            else if (line.startsWith('data:')) {
              event.data += (hasData ? '\n' : '') + line.slice(5).trimStart();
              hasData = true;
            }
          }
          if (hasData) events.push(event);
          wake?.();
        }
      }
    } catch {
      // aborted
    }
    ended = true;
    wake?.();
  })();
  const waitFor = async <T>(take: () => T | undefined, timeoutMs: number, what: string): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = take();
      if (value !== undefined) return value;
      if (ended) throw new Error(`stream ended: ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(what);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  };
  return {
    response,
    next: (timeoutMs = 5_000) => waitFor(() => events.shift(), timeoutMs, 'no event'),
    async until(done, timeoutMs = 10_000) {
      const seen: SseEvent[] = [];
      await waitFor(
        () => {
          while (events.length) {
            const event = events.shift()!;
            seen.push(event);
            if (done(event)) return true;
          }
          return undefined;
        },
        timeoutMs,
        'no matching event',
      );
      return seen;
    },
    waitForComment: (text, timeoutMs = 5_000) =>
      waitFor(
        () => (comments.some((comment) => comment.includes(text)) ? true : undefined),
        timeoutMs,
        `no comment ${text}`,
      ).then(() => {}),
    async close() {
      controller.abort();
      await reader.cancel().catch(() => {});
    },
  };
}
