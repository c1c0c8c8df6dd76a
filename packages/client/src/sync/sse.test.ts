import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseLimitError, SseParser } from './sse.js';

const parse = (chunks: string[], max?: number) => {
  const parser = new SseParser(max);
  const events = chunks.flatMap((chunk) => parser.feed(chunk));
  return { events, parser };
};

describe('SseParser', () => {
  it('reads the change stream as the server writes it: retry, heartbeats, id + data events', () => {
    const { events, parser } = parse([
      'retry: 1000\n\n: heartbeat\n\nid: 5\ndata: {"a":1}\n\nid: 8\ndata: {"b":2}\n\n',
    ]);
    expect(events).toEqual([
      { type: 'message', data: '{"a":1}', lastEventId: '5' },
      { type: 'message', data: '{"b":2}', lastEventId: '8' },
    ]);
    expect(parser.retryMs).toBe(1000);
    expect(parser.lastEventId).toBe('8');
  });

  it('joins data lines, names events, ignores unknown fields and invalid retry or id values', () => {
    const { events, parser } = parse(['event: change\ndata: one\ndata\ndata: two\nfoo: bar\nretry: 1s\nid: a\0b\n\n']);
    expect(events).toEqual([{ type: 'change', data: 'one\n\ntwo', lastEventId: null }]);
    expect(parser.retryMs).toBeNull();
  });

  it('does not dispatch an event without data, and takes the value after one optional space', () => {
    expect(parse(['id: 1\n\nevent: x\n\n']).events).toEqual([]);
    expect(parse(['data:  two spaces\n\ndata:none\n\n']).events.map((event) => event.data)).toEqual([
      ' two spaces',
      'none',
    ]);
  });

  it('accepts CRLF, CR and LF line ends, a CRLF split across chunks counting once', () => {
    const expected = [
      { type: 'message', data: 'a', lastEventId: null },
      { type: 'message', data: 'b', lastEventId: null },
    ];
    expect(parse(['data: a\r\n\r\ndata: b\r\r']).events).toEqual(expected);
    expect(parse(['data: a\r', '\n\r', '\ndata: b\n', '\n']).events).toEqual(expected);
  });

  it('gives the same events however the stream is cut into chunks (generated streams and cuts)', () => {
    const value = fc.string({ maxLength: 20 }).map((text) => text.replace(/[\r\n]/g, ''));
    const line = fc.oneof(
      value.map((v) => `data: ${v}`),
      value.map((v) => `id: ${v}`),
      value.map((v) => `event: ${v}`),
      value.map((v) => `: ${v}`),
      fc.nat(5000).map((n) => `retry: ${n}`),
      fc.constant(''),
    );
    const stream = fc.tuple(fc.array(line, { maxLength: 30 }), fc.constantFrom('\n', '\r\n', '\r'));
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 10 }), ([lines, end], cuts) => {
        const text = `${lines.join(end)}${end}${end}`;
        const whole = parse([text]);
        const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...points].map((from, i) => text.slice(from, points[i] ?? text.length));
        const pieces = parse(chunks);
        expect(pieces.events).toEqual(whole.events);
        expect(pieces.parser.lastEventId).toBe(whole.parser.lastEventId);
        expect(pieces.parser.retryMs).toBe(whole.parser.retryMs);
      }),
    );
  });

  it('bounds memory: a line that never ends, or an event too long, throws SseLimitError', () => {
    const parser = new SseParser(100);
    expect(() => {
      for (let i = 0; i < 20; i++) parser.feed('x'.repeat(10));
    }).toThrow(SseLimitError);
    expect(() =>
      parse(
        Array.from({ length: 20 }, () => 'data: 0123456789\n'),
        100,
      ),
    ).toThrow(SseLimitError);
    // Within the bound, the same events of any size are fine.
    expect(parse(['data: 0123456789\n\n'.repeat(50)], 100).events).toHaveLength(50);
  });
});
