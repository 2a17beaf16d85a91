// The one time zone every time in the UI is shown in: the user's choice,
// remembered in this browser, else the browser's own. Business dates are
// dates, not times, and never pass through it.

import { useSyncExternalStore } from 'react';

const STORAGE_KEY = 'datajump.timeZone';
const listeners = new Set<() => void>();

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

function stored(): string | null {
  try {
    const zone = localStorage.getItem(STORAGE_KEY);
    return zone && isTimeZone(zone) ? zone : null;
  } catch {
    return null;
  }
}

let current = stored() ?? browserTimeZone();

/** The zone times are shown in now. */
export function currentTimeZone(): string {
  return current;
}

/** Shows every time in `zone` from now on, and remembers it; `null` goes back to the browser's. */
export function chooseTimeZone(zone: string | null) {
  try {
    if (zone === null) localStorage.removeItem(STORAGE_KEY);
    else localStorage.setItem(STORAGE_KEY, zone);
  } catch {
    // A browser that keeps nothing still switches, for this visit.
  }
  current = zone ?? browserTimeZone();
  listeners.forEach((listener) => listener());
}

/** The zone in force, re-rendering the caller when the user picks another. */
export function useTimeZone(): string {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    currentTimeZone,
  );
}
