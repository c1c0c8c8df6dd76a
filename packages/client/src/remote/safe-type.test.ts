import { describe, expect, it } from 'vitest';
import { isSafeBlobType, OCTET_STREAM, safeBlobType } from './safe-type.js';

describe('safeBlobType', () => {
  it('keeps raster images, audio, video, PDF and plain text (essence, lower case)', () => {
    for (const type of ['image/png', 'image/jpeg', 'image/webp', 'audio/mpeg', 'video/mp4', 'application/pdf'])
      expect(safeBlobType(type)).toBe(type);
    expect(safeBlobType('Text/Plain; charset=utf-8')).toBe('text/plain');
  });

  it('types everything a browser could run as application/octet-stream', () => {
    for (const type of [
      'image/svg+xml',
      'text/html',
      'application/xhtml+xml',
      'text/xml',
      'application/xml',
      'text/javascript',
      'video/x+xml', // an XML type by its suffix: rendered as a document
      'audio/mpeg+xml',
      'multipart/x-mixed-replace',
      'image/svg+xml; charset=utf-8',
      '',
      'nonsense',
    ])
      expect(safeBlobType(type), type).toBe(OCTET_STREAM);
    expect(safeBlobType(undefined)).toBe(OCTET_STREAM);
    expect(safeBlobType(null)).toBe(OCTET_STREAM);
    expect(isSafeBlobType('image/svg+xml')).toBe(false);
  });
});
