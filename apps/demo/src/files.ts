/**
 * Files on tasks (a photo, a receipt…), offline-first: kept in this browser at once, uploaded by
 * the next sync, downloaded by the other people of the list when they look at the task.
 */
import type { Collection } from '@quire/client';
import { isSafeBlobType, type LocalAttachment } from '@quire/client/attachments';
import { useEffect, useState } from 'preact/hooks';
import { UserError } from './errors.js';
import type { Item } from './model.js';

/** Kept small: files live in every member's browser. */
const MAX_FILE_BYTES = 10 * 1024 * 1024;

export async function attachFile(items: Collection<Item>, id: string, file: File): Promise<void> {
  if (file.size > MAX_FILE_BYTES) throw new UserError('A file on a task is at most 10 MB.');
  await items.attach(id, file, { filename: file.name, mimetype: file.type || 'application/octet-stream' });
}

export async function removeFile(items: Collection<Item>, id: string): Promise<void> {
  await items.detach(id);
}

interface ShownFile {
  info: LocalAttachment;
  /** An object URL of the bytes, null while they are downloaded (or when that failed). */
  url: string | null;
  /**
   * Shown as an image (`<img>` only): the Blob is a raster image. The client types every Blob
   * of another kind `application/octet-stream` (an SVG or HTML file opened from a `blob:` URL
   * would run its scripts on this app's origin), and every file is offered as a download.
   */
  image: boolean;
  /** Bytes received so far, while downloading. */
  progress: number | null;
}

/** A task's file and an object URL of it, kept current as it is attached, uploaded, synced or removed. */
export function useTaskFile(items: Collection<Item>, id: string): ShownFile | null {
  const [version, setVersion] = useState(0);
  const [shown, setShown] = useState<ShownFile | null>(null);
  useEffect(() => {
    const bump = () => setVersion((n) => n + 1);
    const stopChanges = items.on(
      'change',
      (event) => (event.changes.length === 0 || event.changes.some((change) => change.id === id)) && bump(),
    );
    const stopFiles = items.on('attachment', (event) => {
      if (event.id !== id) return;
      if (event.type === 'progress') {
        if (event.direction === 'download') setShown((current) => current && { ...current, progress: event.loaded });
      } else bump();
    });
    return () => {
      stopChanges();
      stopFiles();
    };
  }, [items, id]);
  useEffect(() => {
    let url: string | null = null;
    let cancelled = false;
    void (async () => {
      const info = await items.attachment(id);
      if (cancelled) return;
      if (!info) return setShown(null);
      setShown((current) => ({
        info,
        url: current?.info.hash === info.hash ? current.url : null,
        image: current?.info.hash === info.hash ? current.image : false,
        progress: null,
      }));
      const blob = await items.getAttachment(id).catch(() => null);
      if (cancelled || !blob) return;
      url = URL.createObjectURL(blob);
      setShown({ info, url, image: isSafeBlobType(blob.type) && blob.type.startsWith('image/'), progress: null });
    })().catch(() => {});
    return () => {
      cancelled = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, [items, id, version]);
  return shown;
}
