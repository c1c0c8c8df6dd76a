/**
 * The progress line of `quire export|import` on stderr, rewritten in place at most every 250 ms,
 * only on a terminal: objects so far and their rate, and — when the input's size is known — how
 * much of it is read and the time left at that rate (ETA). Phases (the import's end: moving into
 * place, indexing, analysing) replace it as they start.
 */
export interface Progress {
  update(count: number, bytes?: number): void;
  phase(name: string): void;
  done(count: number): void;
}

const NONE: Progress = { update() {}, phase() {}, done() {} };

function duration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  const minutes = Math.floor(whole / 60);
  return minutes > 0 ? `${minutes} min ${String(whole % 60).padStart(2, '0')} s` : `${whole} s`;
}

/** `totalBytes`: the input's size, when known (a file); the ETA then follows the bytes read. */
export function progress(verb: string, totalBytes?: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return NONE;
  const started = Date.now();
  let shown = 0;
  let count = 0;
  const rate = () => count / Math.max((Date.now() - started) / 1000, 0.001);
  const line = (bytes?: number) => {
    let text = `${verb} ${count} objects (${Math.round(rate())}/s)`;
    if (totalBytes && bytes !== undefined && Number.isFinite(bytes) && bytes > 0) {
      const seconds = (Date.now() - started) / 1000;
      const left = (seconds * (totalBytes - bytes)) / bytes;
      text += `, ${Math.min(100, Math.floor((100 * bytes) / totalBytes))}% of the input, ETA ${duration(left)}`;
    }
    return text;
  };
  const write = (text: string) => stream.write(`\r\u001b[2K${text}`);
  return {
    update(objects, bytes) {
      count = objects;
      if (Date.now() - shown < 250) return;
      shown = Date.now();
      write(line(bytes));
    },
    phase(name) {
      write(`${verb} ${count} objects (${Math.round(rate())}/s); ${name}…`);
    },
    done(objects) {
      count = objects;
      write(`${verb} ${count} objects in ${duration((Date.now() - started) / 1000)} (${Math.round(rate())}/s)\n`);
    },
  };
}
