// Status colours: one palette for every status of a task instance or a
// run, used by squares, badges, graph nodes and Gantt bars alike.

import i18next from 'i18next';
import type { RunStatus, TaskStatus } from '../api/types';

/** A task or run status, `WAITING`, or `NONE` (no instance: not started). */
export type AnyStatus = TaskStatus | RunStatus | 'WAITING' | 'NONE';

export interface StatusStyle {
  /** Fill colour. */
  fill: string;
  /** Border colour. */
  border: string;
  /** Text colour on the fill. */
  text: string;
  /** Drawn as an outline (nothing happened yet) rather than filled. */
  outline: boolean;
}

const solid = (fill: string, text = '#ffffff'): StatusStyle => ({
  fill,
  border: fill,
  text,
  outline: false,
});

/** One colour for the light theme and another for the dark one. */
const lightDark = (light: string, dark: string) => (light === dark ? light : `light-dark(${light}, ${dark})`);

/**
 * A status drawn as an outline: a pale fill would glare on the dark theme,
 * so each colour is a pair, light and dark, that CSS's `light-dark()` picks
 * by the page's `color-scheme` (app.css sets it with the theme).
 */
const outline = (light: [fill: string, border: string], dark: [fill: string, border: string]): StatusStyle => ({
  fill: lightDark(light[0], dark[0]),
  border: lightDark(light[1], dark[1]),
  text: lightDark('#4b5563', '#c3ccd9'),
  outline: true,
});

export const STATUS_STYLES: Record<AnyStatus, StatusStyle> = {
  SUCCESS: solid('#1e9e52'),
  FAILED: solid('#d92d20'),
  RUNNING: solid('#2563eb'),
  QUEUED: solid('#8a9bb8'),
  WAITING: solid('#e0a526', '#3b2a00'),
  UP_FOR_RETRY: solid('#f0b429', '#3b2a00'),
  UP_FOR_RESCHEDULE: outline(['#e6f4f1', '#2a9d8f'], ['#123430', '#3bb5a5']),
  KILLED: solid('#7a2048'),
  TIMEOUT: solid('#f07a10'),
  SKIPPED: solid('#c9ced6', '#374151'),
  UPSTREAM_FAILED: solid('#f5b58d', '#5c2a0b'),
  PENDING: outline(['#eef1f6', '#a9b4c4'], ['#232b3a', '#7d8ba0']),
  CREATED: outline(['#f4f5f7', '#c3cad5'], ['#1b212d', '#5b6679']),
  NONE: outline(['transparent', '#c3cad5'], ['transparent', '#4a5568']),
};

/** The known status of `status`, or `NONE`. */
export function normalizeStatus(status: string | null | undefined): AnyStatus {
  return status && status in STATUS_STYLES ? (status as AnyStatus) : 'NONE';
}

export function statusStyle(status: string | null | undefined): StatusStyle {
  return STATUS_STYLES[normalizeStatus(status)];
}

/** A status in words, in the UI's language. */
export function statusLabel(status: string | null | undefined): string {
  return i18next.t(`status.${normalizeStatus(status)}`);
}

/** The fill colour of a status. */
export function statusColor(status: string | null | undefined): string {
  return statusStyle(status).fill;
}

/** The CSS class of a status (`st-up_for_retry`): RUNNING is animated by it. */
export function statusClass(status: string | null | undefined): string {
  return `st-${normalizeStatus(status).toLowerCase()}`;
}

const TERMINAL_TASK: ReadonlySet<string> = new Set([
  'SUCCESS',
  'FAILED',
  'TIMEOUT',
  'KILLED',
  'SKIPPED',
  'UPSTREAM_FAILED',
]);

/** Whether a task instance has ended its life in its run. */
export function isTerminalTask(status: string | null | undefined): boolean {
  return !!status && TERMINAL_TASK.has(status);
}

/** Whether a run is over (not QUEUED or RUNNING). */
export function isTerminalRun(status: string | null | undefined): boolean {
  return !!status && status !== 'QUEUED' && status !== 'RUNNING';
}

/** Whether a run or task status counts as a failure. */
export function isFailure(status: string | null | undefined): boolean {
  return status === 'FAILED' || status === 'TIMEOUT' || status === 'UPSTREAM_FAILED';
}
