/** What every page needs: the API as the signed-in user, what the server said about itself, toasts. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ServerInfo } from '@quire/client/admin';
import type { AdminRemote } from '../lib/remote.js';
import type { Session } from '../lib/session.js';

export type ToastKind = 'success' | 'error' | 'info';

export interface ConsoleContextValue {
  api: AdminRemote;
  hello: ServerInfo;
  session: Session;
  notify: (message: string, kind?: ToastKind) => void;
  refreshHello: () => Promise<void>;
}

export const ConsoleContext = createContext<ConsoleContextValue | null>(null);

export function useConsole(): ConsoleContextValue {
  const value = useContext(ConsoleContext);
  if (!value) throw new Error('useConsole() outside <ConsoleContext.Provider>');
  return value;
}

/** Capabilities the console adapts to. */
export function useCapabilities() {
  const { hello } = useConsole();
  const capabilities = hello.capabilities;
  return {
    history: 'history' in capabilities,
    accounts: 'accounts' in capabilities,
    permissionsEndpoint: 'permissions_endpoint' in capabilities,
    schema: 'schema' in capabilities,
    attachments: capabilities.attachments ?? null,
    readonly: hello.settings.readonly,
  };
}
