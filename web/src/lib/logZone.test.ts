import { describe, expect, it } from 'vitest';
import type { LogEntry } from './logModel';
import { logTimeZone } from './logZone';

const lines = (...texts: string[]): LogEntry[] => texts.map((text, i) => ({ kind: 'line', no: i + 1, text }));

describe('the zone of a log', () => {
  it('is the one its header names after the start time', () => {
    const log = lines(
      '========== Task Execution Start ==========',
      'Task ID: 3',
      'Task Name: extract',
      'Start Time: 2026-12-06 09:10:00.123 +08:00 (Asia/Shanghai)',
      '==========================================',
    );
    expect(logTimeZone(log)).toBe('Asia/Shanghai');
    expect(logTimeZone(lines('Start Time: 2026-12-06 01:10:00.000 +00:00 (UTC)'))).toBe('UTC');
  });

  it('is unknown without a header, or when a task prints something like it later', () => {
    expect(logTimeZone([])).toBeNull();
    expect(logTimeZone(lines('[3 earlier lines cut]', 'hello'))).toBeNull();
    const late = [...lines(...new Array<string>(20).fill('output')), ...lines('Start Time: 2026-12-06 (Europe/Paris)')];
    expect(logTimeZone(late)).toBeNull();
  });
});
