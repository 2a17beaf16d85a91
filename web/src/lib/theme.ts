// Light or dark: the user's choice, remembered in this browser, else the
// system's, followed as it changes. Applied as `data-theme` on <html>,
// which app.css reads.

import { useSyncExternalStore } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';

const STORAGE_KEY = 'datajump.theme';
const listeners = new Set<() => void>();
const systemDark = () => typeof window.matchMedia === 'function' && window.matchMedia('(prefers-color-scheme: dark)').matches;

function stored(): ThemeChoice {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

let choice: ThemeChoice = stored();

function apply() {
  const dark = choice === 'dark' || (choice === 'system' && systemDark());
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}

/** Applies the remembered theme and follows the system's while it is the choice; call once at start. */
export function startTheme() {
  apply();
  if (typeof window.matchMedia === 'function') {
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', apply);
  }
}

/** Uses `next` from now on, and remembers it. */
export function chooseTheme(next: ThemeChoice) {
  choice = next;
  try {
    if (next === 'system') localStorage.removeItem(STORAGE_KEY);
    else localStorage.setItem(STORAGE_KEY, next);
  } catch {
    // A browser that keeps nothing still switches, for this visit.
  }
  apply();
  listeners.forEach((listener) => listener());
}

/** The user's choice, re-rendering the caller when it changes. */
export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => choice,
  );
}
