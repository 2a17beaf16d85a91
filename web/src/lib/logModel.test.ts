import { describe, expect, it } from 'vitest';
import { highlight, lineText, LogBuffer } from './logModel';

describe('the log line model', () => {
  it('appends streamed lines in order', () => {
    const log = new LogBuffer();
    expect(log.appendStreamed(1, 'a')).toBe(true);
    log.appendStreamed(2, 'b');
    expect(log.entries).toEqual([
      { kind: 'line', no: 1, text: 'a' },
      { kind: 'line', no: 2, text: 'b' },
    ]);
    expect(log.earlierNotShown).toBe(0);
    expect(log.lastLine).toBe(2);
  });

  it('counts earlier lines a stream starting above 1 does not hold', () => {
    const log = new LogBuffer();
    log.appendStreamed(501, 'x');
    expect(log.earlierNotShown).toBe(500);
    expect(log.entries[0]).toEqual({ kind: 'line', no: 501, text: 'x' });
  });

  it('ignores repeats and marks gaps', () => {
    const log = new LogBuffer();
    log.appendStreamed(1, 'a');
    log.appendStreamed(2, 'b');
    const before = log.version;
    expect(log.appendStreamed(2, 'b again')).toBe(false);
    expect(log.version).toBe(before);
    log.appendStreamed(6, 'f');
    expect(log.entries[2]).toEqual({ kind: 'gap', from: 3, to: 5 });
    expect(log.entries[3]).toEqual({ kind: 'line', no: 6, text: 'f' });
    log.appendStreamed(7, 'g');
    expect(log.lineCount).toBe(5);
  });

  it('loads a stored log, reading a tail\'s cut note', () => {
    const log = new LogBuffer();
    log.setText('[40 earlier lines cut: the database keeps the last 64 KiB; `datajump logs` reads the full log]\nl41\r\nl42\n');
    expect(log.earlierNotShown).toBe(40);
    expect(log.entries).toEqual([
      { kind: 'line', no: 41, text: 'l41' },
      { kind: 'line', no: 42, text: 'l42' },
    ]);
    // A stream joining it continues without repeats.
    expect(log.appendStreamed(42, 'l42')).toBe(false);
    log.appendStreamed(43, 'l43');
    expect(log.lastLine).toBe(43);
  });

  it('holds 100,000 lines and searches them', () => {
    const text = Array.from({ length: 100_000 }, (_, i) => (i % 1000 === 0 ? `ERROR at ${i}` : `line ${i}`)).join('\n');
    const log = new LogBuffer();
    log.setText(text);
    expect(log.lineCount).toBe(100_000);
    const hits = log.search('error');
    expect(hits).toHaveLength(100);
    expect(log.entries[hits[1]!]).toEqual({ kind: 'line', no: 1001, text: 'ERROR at 1000' });
    expect(log.search('error', true)).toHaveLength(0);
    expect(log.search('')).toEqual([]);
  });

  it('splits a line around its matches', () => {
    expect(highlight('an Error and error', 'error')).toEqual([
      { text: 'an ', match: false },
      { text: 'Error', match: true },
      { text: ' and ', match: false },
      { text: 'error', match: true },
    ]);
    expect(highlight('plain', '')).toEqual([{ text: 'plain', match: false }]);
  });

  it('reads streamed lines sent as JSON strings', () => {
    expect(lineText('"hello \\"x\\""')).toBe('hello "x"');
    expect(lineText('""')).toBe('');
    expect(lineText('plain text')).toBe('plain text');
    expect(lineText('"broken')).toBe('"broken');
  });
});
