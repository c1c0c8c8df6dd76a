/** Things that happened without the user doing them: a list shared with them, access revoked. */
import type { Notice } from '../workspace.js';

export function Notices({ notices, onDismiss }: { notices: Notice[]; onDismiss: (id: string) => void }) {
  return (
    <div class="notices" aria-live="polite">
      {notices.map((notice) => (
        <p key={notice.id} class="notice" role="status">
          <span>{notice.message}</span>
          <button type="button" class="link" aria-label="Dismiss this message" onClick={() => onDismiss(notice.id)}>
            Dismiss
          </button>
        </p>
      ))}
    </div>
  );
}
