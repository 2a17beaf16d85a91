import { describe, expect, it } from 'vitest';
import {
  isTerminalRun,
  isTerminalTask,
  normalizeStatus,
  STATUS_STYLES,
  statusClass,
  statusColor,
  statusStyle,
} from './status';

describe('status colours', () => {
  it('uses the operator palette', () => {
    expect(statusColor('SUCCESS')).toBe('#1e9e52');
    expect(statusColor('FAILED')).toBe('#d92d20');
    expect(statusColor('RUNNING')).toBe('#2563eb');
    expect(statusColor('TIMEOUT')).toBe('#f07a10');
    expect(statusStyle('NONE').outline).toBe(true);
    expect(statusStyle('PENDING').outline).toBe(true);
    expect(statusStyle('KILLED').outline).toBe(false);
  });

  it('gives every task and run status its own colour', () => {
    const statuses = [
      'SUCCESS', 'FAILED', 'RUNNING', 'QUEUED', 'UP_FOR_RETRY', 'KILLED',
      'TIMEOUT', 'SKIPPED', 'UPSTREAM_FAILED', 'PENDING', 'CREATED',
    ];
    const fills = statuses.map((s) => statusColor(s));
    expect(new Set(fills).size).toBe(statuses.length);
    for (const s of statuses) expect(normalizeStatus(s)).toBe(s);
  });

  it('gives outlined statuses their own colours on the dark theme', () => {
    for (const status of ['PENDING', 'CREATED', 'UP_FOR_RESCHEDULE', 'NONE'] as const) {
      const s = STATUS_STYLES[status];
      expect(s.outline).toBe(true);
      expect(s.border).toMatch(/^light-dark\(#[0-9a-f]{6}, #[0-9a-f]{6}\)$/);
      expect(s.text).toMatch(/^light-dark\(/);
    }
    expect(statusColor('PENDING')).toBe('light-dark(#eef1f6, #232b3a)');
    expect(statusColor('NONE')).toBe('transparent');
  });

  it('treats unknown or missing statuses as NONE', () => {
    expect(normalizeStatus(undefined)).toBe('NONE');
    expect(normalizeStatus(null)).toBe('NONE');
    expect(normalizeStatus('BOGUS')).toBe('NONE');
    expect(statusStyle('BOGUS')).toBe(STATUS_STYLES.NONE);
  });

  it('names a CSS class per status', () => {
    expect(statusClass('RUNNING')).toBe('st-running');
    expect(statusClass('UP_FOR_RETRY')).toBe('st-up_for_retry');
    expect(statusClass(null)).toBe('st-none');
  });

  it('knows which statuses are final', () => {
    expect(isTerminalTask('SUCCESS')).toBe(true);
    expect(isTerminalTask('UPSTREAM_FAILED')).toBe(true);
    expect(isTerminalTask('UP_FOR_RETRY')).toBe(false);
    expect(isTerminalTask('RUNNING')).toBe(false);
    expect(isTerminalRun('QUEUED')).toBe(false);
    expect(isTerminalRun('RUNNING')).toBe(false);
    expect(isTerminalRun('TIMEOUT')).toBe(true);
  });
});
