// A task log as the viewer holds it: numbered lines (1-based, as the API
// numbers them), filled from a stored log or line by line from the live
// stream, with gaps where streamed numbers jump and a count of earlier
// lines that are not held. Mutable on purpose: a 100,000-line log is
// appended to in place, and `version` tells React it changed.

import i18next from 'i18next';

export type LogEntry =
  | { kind: 'line'; no: number; text: string }
  | { kind: 'gap'; from: number; to: number };

/** `[N earlier lines cut: …]`, the first line of a tail that lost its beginning. */
const CUT_NOTE = /^\[(\d+) earlier lines cut\b.*\]$/;

export class LogBuffer {
  entries: LogEntry[] = [];
  /** Lines before the first held one that are not held. */
  earlierNotShown = 0;
  /** Bumped on every change. */
  version = 0;
  /** The number the next line should have (0: none held yet). */
  private next = 0;

  get lineCount(): number {
    return this.entries.length;
  }

  /** The number of the last line held (0 for none). */
  get lastLine(): number {
    return this.next === 0 ? 0 : this.next - 1;
  }

  clear(): void {
    this.entries = [];
    this.earlierNotShown = 0;
    this.next = 0;
    this.version++;
  }

  /**
   * A streamed line with its number. The first one says how many earlier
   * lines are not held; a repeat (after a reconnect) is ignored; a jump
   * leaves a gap entry. Returns whether anything changed.
   */
  appendStreamed(no: number, text: string): boolean {
    if (!Number.isFinite(no) || no < 1) {
      // A line without a number follows the last one.
      no = this.next === 0 ? 1 : this.next;
    }
    if (this.next === 0) {
      this.earlierNotShown = no - 1;
    } else if (no < this.next) {
      return false;
    } else if (no > this.next) {
      this.entries.push({ kind: 'gap', from: this.next, to: no - 1 });
    }
    this.entries.push({ kind: 'line', no, text });
    this.next = no + 1;
    this.version++;
    return true;
  }

  /**
   * Replaces everything with a stored log's text. A tail's cut note sets
   * the earlier lines not held, and numbering continues after them.
   */
  setText(text: string): void {
    const lines = text.split('\n');
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    let first = 1;
    let start = 0;
    const note = lines[0] !== undefined ? CUT_NOTE.exec(lines[0]) : null;
    if (note) {
      first = Number(note[1]) + 1;
      start = 1;
    }
    const entries: LogEntry[] = new Array(lines.length - start);
    for (let i = start; i < lines.length; i++) {
      let line = lines[i]!;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      entries[i - start] = { kind: 'line', no: first + i - start, text: line };
    }
    this.entries = entries;
    this.earlierNotShown = first - 1;
    this.next = first + entries.length;
    this.version++;
  }

  /** Indices of the entries whose line contains `query` (case-insensitive unless asked). */
  search(query: string, caseSensitive = false): number[] {
    if (!query) return [];
    const needle = caseSensitive ? query : query.toLowerCase();
    const out: number[] = [];
    const entries = this.entries;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.kind !== 'line') continue;
      const hay = caseSensitive ? e.text : e.text.toLowerCase();
      if (hay.includes(needle)) out.push(i);
    }
    return out;
  }

  /** The held lines as text (gaps as a note in the UI's language), for copying. */
  text(): string {
    return this.entries
      .map((e) => (e.kind === 'line' ? e.text : i18next.t('task:log.gapCopied', { from: e.from, to: e.to })))
      .join('\n');
  }
}

/** `text` split into the segments that match `query` and those that don't. */
export function highlight(
  text: string,
  query: string,
  caseSensitive = false,
): Array<{ text: string; match: boolean }> {
  if (!query) return [{ text, match: false }];
  const hay = caseSensitive ? text : text.toLowerCase();
  const needle = caseSensitive ? query : query.toLowerCase();
  const out: Array<{ text: string; match: boolean }> = [];
  let at = 0;
  for (;;) {
    const i = hay.indexOf(needle, at);
    if (i < 0) break;
    if (i > at) out.push({ text: text.slice(at, i), match: false });
    out.push({ text: text.slice(i, i + needle.length), match: true });
    at = i + needle.length;
  }
  if (at < text.length || out.length === 0) out.push({ text: text.slice(at), match: false });
  return out;
}

/** A streamed line's text: sent as a JSON string (raw text is taken as is). */
export function lineText(data: string): string {
  if (data.startsWith('"')) {
    try {
      const text: unknown = JSON.parse(data);
      if (typeof text === 'string') return text;
    } catch {
      // not JSON: the text itself
    }
  }
  return data;
}

