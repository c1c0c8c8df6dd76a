/** Tells the other tabs of the app that a collection changed (BroadcastChannel when available). */

export interface ChangeMessage {
  db: string;
  source: 'local' | 'sync';
  changes: { type: 'create' | 'update' | 'delete'; id: string }[];
  sender: string;
}

export interface ChangeChannel {
  post(message: ChangeMessage): void;
  subscribe(listener: (message: ChangeMessage) => void): () => void;
  close(): void;
}

export function createChangeChannel(name: string, sender: string): ChangeChannel {
  const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
  if (!Channel) return { post() {}, subscribe: () => () => {}, close() {} };
  const channel = new Channel(name);
  const listeners = new Set<(message: ChangeMessage) => void>();
  channel.onmessage = (event: MessageEvent<ChangeMessage>) => {
    if (event.data?.sender === sender) return;
    for (const listener of listeners) listener(event.data);
  };
  // Node keeps the event loop alive while a channel is open: don't hold the process for it.
  (channel as unknown as { unref?: () => void }).unref?.();
  return {
    post: (message) => channel.postMessage(message),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => channel.close(),
  };
}
