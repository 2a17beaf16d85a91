// The one time zone every time in the UI is shown in: the user's choice,
// remembered in this browser, else the browser's own. Business dates are
// dates, not times, and never pass through it.

import { remembered } from './remembered';

/** The browser's zone (`Asia/Shanghai`), or UTC if it names none. */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** Whether `zone` is an IANA zone this browser knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Every zone the browser knows, UTC first. */
export function timeZones(): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return ['UTC', ...known.filter((zone) => zone !== 'UTC')];
}

const picked = remembered('datajump.timeZone', (zone): zone is string => isTimeZone(zone));

/** The zone times are shown in now. */
export function currentTimeZone(): string {
  return picked.get() ?? browserTimeZone();
}

/** Shows every time in `zone` from now on, and remembers it; `null` goes back to the browser's. */
export function chooseTimeZone(zone: string | null) {
  picked.set(zone);
}

/** The zone in force, re-rendering the caller when the user picks another. */
export function useTimeZone(): string {
  return picked.use() ?? browserTimeZone();
}
