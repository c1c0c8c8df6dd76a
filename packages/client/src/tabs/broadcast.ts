/**
 * Messages between the tabs of an app (BroadcastChannel when the platform has one, else a
 * channel that goes nowhere: one tab). A tab never receives its own messages.
 */

export interface TabChannel<M> {
  post(message: M): void;
  subscribe(listener: (message: M) => void): () => void;
  close(): void;
}

interface Envelope<M> {
  sender: string;
  message: M;
}

export function createTabChannel<M>(name: string, sender: string): TabChannel<M> {
  const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
  if (!Channel) return { post() {}, subscribe: () => () => {}, close() {} };
  const channel = new Channel(name);
  const listeners = new Set<(message: M) => void>();
  let closed = false;
  channel.onmessage = (event: MessageEvent<Envelope<M>>) => {
    if (!event.data || event.data.sender === sender) return;
    for (const listener of listeners) listener(event.data.message);
  };
  // Node keeps the event loop alive while a channel is open: don't hold the process for it.
  (channel as unknown as { unref?: () => void }).unref?.();
  return {
    post(message) {
      if (!closed) channel.postMessage({ sender, message } satisfies Envelope<M>);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      closed = true;
      listeners.clear();
      channel.close();
    },
  };
}
